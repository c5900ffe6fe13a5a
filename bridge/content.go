package bridge

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// resultFromMCP converts an MCP CallToolResult into a gateway.Result, keeping
// every content block (MCP tools, "Tool Result":
// https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-result).
// The whole CallToolResult is kept as Raw. structuredContent (which the
// go-sdk client has validated against the tool's outputSchema) is added as
// a last text block holding its JSON, so that the model (which reads content
// blocks) sees it, unless a text block already holds the same JSON value (as
// the spec asks servers to do for backwards compatibility); a
// structured-only result thus never reaches the model empty. With
// onlyWhenEmpty (in-process servers, whose text is written for the model
// and whose structured content repeats it, such as read_file's), the JSON
// is added only to a result without content blocks. Next to the tool's
// own blocks the JSON block is marked ModelOnly: the client shows the
// tool's blocks and gets the structured content in rawOutput (Raw), so it
// is shown once; a structured-only result's JSON block is the one it shows.
func resultFromMCP(res *mcp.CallToolResult, onlyWhenEmpty bool) gateway.Result {
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
	if res.StructuredContent != nil && (len(out.Content) == 0 || !onlyWhenEmpty) {
		if b, err := json.Marshal(res.StructuredContent); err == nil && string(b) != "null" && !holdsJSON(out.Content, b) {
			block := gateway.TextContent(string(b))
			block.ModelOnly = len(out.Content) > 0
			out.Content = append(out.Content, block)
		}
	}
	return out
}

// holdsJSON reports whether a text block of content is the JSON value b
// (whatever its spacing and key order).
func holdsJSON(content []gateway.Content, b []byte) bool {
	var want any
	if json.Unmarshal(b, &want) != nil {
		return false
	}
	for _, c := range content {
		if c.Type != gateway.ContentText || !json.Valid([]byte(c.Text)) {
			continue
		}
		var got any
		if json.Unmarshal([]byte(c.Text), &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
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
