package bridge

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// resultFromMCP converts an MCP CallToolResult into a gateway.Result, keeping
// every content block (MCP tools, "Tool Result":
// https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-result).
// The whole CallToolResult is kept as Raw. A result with structuredContent
// and no content blocks gets one text block holding the structured content's
// JSON, so that the model (which reads content blocks) sees it.
func resultFromMCP(res *mcp.CallToolResult) gateway.Result {
	if res == nil {
		return gateway.Result{Content: []gateway.Content{}}
	}
	out := gateway.Result{
		Content:    make([]gateway.Content, 0, len(res.Content)),
		Structured: res.StructuredContent,
		IsError:    res.IsError,
		Raw:        res,
	}
	for _, c := range res.Content {
		out.Content = append(out.Content, contentFromMCP(c))
	}
	if len(out.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil && string(b) != "null" {
			out.Content = append(out.Content, gateway.TextContent(string(b)))
		}
	}
	return out
}

// contentFromMCP converts one MCP content block. A kind the gateway does not
// know (a future MCP addition) becomes a text note naming its Go type, so it
// is never dropped silently.
func contentFromMCP(c mcp.Content) gateway.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		return gateway.Content{Type: gateway.ContentText, Text: c.Text}
	case *mcp.ImageContent:
		return gateway.Content{Type: gateway.ContentImage, Data: c.Data, MIMEType: c.MIMEType}
	case *mcp.AudioContent:
		return gateway.Content{Type: gateway.ContentAudio, Data: c.Data, MIMEType: c.MIMEType}
	case *mcp.ResourceLink:
		return gateway.Content{
			Type:        gateway.ContentResourceLink,
			URI:         c.URI,
			Name:        c.Name,
			Title:       c.Title,
			Description: c.Description,
			MIMEType:    c.MIMEType,
			Size:        c.Size,
		}
	case *mcp.EmbeddedResource:
		out := gateway.Content{Type: gateway.ContentResource, Resource: &gateway.EmbeddedResource{}}
		if r := c.Resource; r != nil {
			out.Resource = &gateway.EmbeddedResource{URI: r.URI, MIMEType: r.MIMEType, Text: r.Text, Blob: r.Blob}
		}
		return out
	default:
		return gateway.TextContent(fmt.Sprintf("[unsupported MCP content %T]", c))
	}
}

// annotationsFromMCP converts MCP tool annotations; nil means no hints.
func annotationsFromMCP(a *mcp.ToolAnnotations) gateway.Annotations {
	if a == nil {
		return gateway.Annotations{}
	}
	return gateway.Annotations{
		Title:           a.Title,
		ReadOnlyHint:    a.ReadOnlyHint,
		DestructiveHint: a.DestructiveHint,
		IdempotentHint:  a.IdempotentHint,
		OpenWorldHint:   a.OpenWorldHint,
	}
}
