package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// readTimeout bounds /read; the server's call timeout bounds it too.
const readTimeout = 2 * time.Minute

// readShowMax is how much text of a resource /read shows; the rest is cut
// with a note.
const readShowMax = 64 << 10

// resourcesCommand answers /resources: the session's resources and resource
// templates by server.
func resourcesCommand(_ context.Context, s *Session, _ string) string {
	return ResourcesText(s.Manager().Resources())
}

// readCommand answers /read <uri>: the resource's text, binary contents
// summarized.
func readCommand(ctx context.Context, s *Session, rest string) string {
	if rest == "" {
		return "Usage: /read <uri>; /resources lists the resources of this session."
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	res, err := s.Manager().ReadResource(ctx, rest)
	if err != nil {
		if errors.Is(err, bridge.ErrUnknownResource) {
			return fmt.Sprintf("No MCP server of this session lists %q or has a template matching it; /resources lists them.", rest)
		}
		return gateway.ErrorText(err) + "."
	}
	return ReadText(rest, res)
}

// ResourcesText renders /resources: for each server with resources, one line
// per resource ([bridge.ResourceLine]) and per template
// ([bridge.TemplateLine]).
func ResourcesText(servers []bridge.ServerResources) string {
	if len(servers) == 0 {
		return "No MCP server of this session offers resources."
	}
	var b strings.Builder
	for _, r := range servers {
		fmt.Fprintf(&b, "%s: %d resources, %d templates\n", r.Server, len(r.Resources), len(r.Templates))
		for _, x := range r.Resources {
			b.WriteString("- " + bridge.ResourceLine(x) + "\n")
		}
		for _, t := range r.Templates {
			b.WriteString("- template " + bridge.TemplateLine(t) + "\n")
		}
	}
	b.WriteString("/read <uri> shows one.")
	return b.String()
}

// ReadText renders /read's answer: each content's URI and MIME type, its
// text (at most readShowMax bytes), and binary contents as a summary.
func ReadText(uri string, res gateway.Result) string {
	var b strings.Builder
	for _, c := range res.Content {
		switch {
		case c.Type == gateway.ContentResource && c.Resource != nil:
			r := c.Resource
			mime := r.MIMEType
			if mime == "" {
				mime = "unknown type"
			}
			if r.Blob != nil {
				fmt.Fprintf(&b, "%s (%s): %d bytes of binary data, not shown\n", r.URI, mime, len(r.Blob))
				continue
			}
			fmt.Fprintf(&b, "%s (%s):\n%s\n", r.URI, mime, cutText(r.Text, readShowMax))
		case c.Type == gateway.ContentText:
			b.WriteString(c.Text + "\n") // a note of the limits
		}
	}
	if b.Len() == 0 {
		return fmt.Sprintf("%s: the server returned no contents.", uri)
	}
	return strings.TrimRight(b.String(), "\n")
}

// cutText returns s cut at max bytes (on a rune boundary), with a note.
func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[… %d more bytes not shown]", len(s)-cut)
}
