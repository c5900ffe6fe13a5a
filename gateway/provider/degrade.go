package provider

import (
	"fmt"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Degrading rich tool results, per provider, in one place (see
// docs/architecture.md, "Degrading rich content"):
//
//	content          Anthropic                OpenAI Responses       OpenAI-compatible chat                                        Gemini
//	text             text block               input_text             text                                                          functionResponse text
//	image            image block (base64)     input_image (data URL) note; the image in a user message after the tool messages    inlineData part beside it
//	audio            note with type and size  same                   same                                                          same
//	resource (text)  its text                 same                   same                                                          same
//	resource (blob)  note with URI            same                   same                                                          same
//	resource_link    note with URI            same                   same                                                          same

// ResultPart is one piece of a tool result as a provider receives it: text,
// or an image of a type in Capabilities.ToolResultImages.
type ResultPart struct {
	Text     string
	Image    []byte // raw bytes; nil for text parts
	MIMEType string
}

// DegradeResult maps a tool result to what a provider with caps can carry, keeping
// order. An empty result becomes one text part saying so, since the APIs
// reject empty tool results.
func DegradeResult(caps Capabilities, res *gateway.Result) []ResultPart {
	var parts []ResultPart
	for _, c := range res.Content {
		switch c.Type {
		case gateway.ContentText:
			parts = append(parts, ResultPart{Text: c.Text})
		case gateway.ContentImage:
			if caps.ToolResultImages[c.MIMEType] {
				parts = append(parts, ResultPart{Image: c.Data, MIMEType: c.MIMEType})
			} else {
				parts = append(parts, ResultPart{Text: mediaNote("image", c.MIMEType, len(c.Data))})
			}
		case gateway.ContentAudio:
			parts = append(parts, ResultPart{Text: mediaNote("audio", c.MIMEType, len(c.Data))})
		case gateway.ContentResource:
			parts = append(parts, ResultPart{Text: resourceText(c.Resource)})
		case gateway.ContentResourceLink:
			parts = append(parts, ResultPart{Text: linkNote(c)})
		default:
			parts = append(parts, ResultPart{Text: fmt.Sprintf("[%s content]", c.Type)})
		}
	}
	if len(parts) == 0 {
		parts = append(parts, ResultPart{Text: "(the tool returned no content)"})
	}
	return parts
}

// ResultText joins the degraded parts of a result as text (for providers
// whose tool messages are text only).
func ResultText(caps Capabilities, res *gateway.Result) string {
	var b strings.Builder
	for i, p := range DegradeResult(caps, res) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

func mediaNote(kind, mimeType string, n int) string {
	if mimeType == "" {
		mimeType = "unknown type"
	}
	return fmt.Sprintf("[%s: %s, %d bytes; not shown to the model]", kind, mimeType, n)
}

func resourceText(r *gateway.EmbeddedResource) string {
	if r == nil {
		return "[empty resource]"
	}
	if r.Blob != nil {
		return fmt.Sprintf("[resource %s: %s, %d bytes of binary data]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
	}
	return r.Text
}

func linkNote(c gateway.Content) string {
	s := "[resource link: " + c.URI
	if c.Name != "" && c.Name != c.URI {
		s += " (" + c.Name + ")"
	}
	if c.MIMEType != "" {
		s += ", " + c.MIMEType
	}
	return s + "]"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

// PromptParts maps the user's prompt content the same way: text as is,
// embedded resources as their text inside a <resource> tag, resource links
// and audio as notes, and images kept as images (every provider takes them in
// user messages).
func PromptParts(content []gateway.Content) []ResultPart {
	var parts []ResultPart
	for _, c := range content {
		switch c.Type {
		case gateway.ContentText:
			parts = append(parts, ResultPart{Text: c.Text})
		case gateway.ContentImage:
			parts = append(parts, ResultPart{Image: c.Data, MIMEType: c.MIMEType})
		case gateway.ContentResource:
			if c.Resource != nil && c.Resource.Blob == nil {
				parts = append(parts, ResultPart{Text: fmt.Sprintf("<resource uri=%q>\n%s\n</resource>", c.Resource.URI, c.Resource.Text)})
			} else {
				parts = append(parts, ResultPart{Text: resourceText(c.Resource)})
			}
		case gateway.ContentResourceLink:
			parts = append(parts, ResultPart{Text: linkNote(c)})
		case gateway.ContentAudio:
			parts = append(parts, ResultPart{Text: mediaNote("audio", c.MIMEType, len(c.Data))})
		}
	}
	return parts
}
