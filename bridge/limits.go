package bridge

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
)

// capResult applies the session's result limits to a tools/call result
// before anything else sees it (the model, the client, rawOutput): the text
// of all blocks together is capped at Limits.MaxResultText and truncated with
// a note saying how much was cut; an image, audio or blob block over
// Limits.MaxMedia is replaced by a note; structured content larger than the
// text limit is replaced by a note. Nothing is dropped without a note. res is
// not modified; a result within the limits is returned as is.
func capResult(res *mcp.CallToolResult, l quota.Limits) *mcp.CallToolResult {
	if res == nil || withinLimits(res, l) {
		return res
	}
	out := *res
	out.Content = make([]mcp.Content, 0, len(res.Content)+1)
	budget := quota.NewTextBudget(l.MaxResultText)
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			cc := *c
			if cc.Text = budget.Take(c.Text); cc.Text != "" || c.Text == "" {
				out.Content = append(out.Content, &cc)
			}
		case *mcp.ImageContent:
			if len(c.Data) > l.MaxMedia {
				out.Content = append(out.Content, &mcp.TextContent{Text: quota.MediaNote("image", c.MIMEType, len(c.Data), l.MaxMedia)})
				continue
			}
			out.Content = append(out.Content, c)
		case *mcp.AudioContent:
			if len(c.Data) > l.MaxMedia {
				out.Content = append(out.Content, &mcp.TextContent{Text: quota.MediaNote("audio", c.MIMEType, len(c.Data), l.MaxMedia)})
				continue
			}
			out.Content = append(out.Content, c)
		case *mcp.EmbeddedResource:
			r := c.Resource
			if r == nil {
				out.Content = append(out.Content, c)
				continue
			}
			if len(r.Blob) > l.MaxMedia {
				out.Content = append(out.Content, &mcp.TextContent{Text: quota.MediaNote("resource "+r.URI, r.MIMEType, len(r.Blob), l.MaxMedia)})
				continue
			}
			rc := *r
			rc.Text = budget.Take(r.Text)
			cc := *c
			cc.Resource = &rc
			out.Content = append(out.Content, &cc)
		default:
			out.Content = append(out.Content, c)
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil && len(b) > l.MaxResultText {
			out.StructuredContent = nil
			out.Content = append(out.Content, &mcp.TextContent{Text: "[acp-agent: structured content of " + quota.Size(len(b)) + " left out: over the limit of " + quota.Size(l.MaxResultText) + "]"})
		}
	}
	if note := budget.Note(); note != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: note})
	}
	return &out
}

// withinLimits reports whether res needs no capping, cheaply.
func withinLimits(res *mcp.CallToolResult, l quota.Limits) bool {
	text := 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text += len(c.Text)
		case *mcp.ImageContent:
			if len(c.Data) > l.MaxMedia {
				return false
			}
		case *mcp.AudioContent:
			if len(c.Data) > l.MaxMedia {
				return false
			}
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				text += len(c.Resource.Text)
				if len(c.Resource.Blob) > l.MaxMedia {
					return false
				}
			}
		}
	}
	if text > l.MaxResultText {
		return false
	}
	if res.StructuredContent == nil {
		return true
	}
	b, err := json.Marshal(res.StructuredContent)
	return err != nil || len(b) <= l.MaxResultText
}
