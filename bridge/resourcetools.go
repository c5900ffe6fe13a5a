package bridge

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// The resource tools. The model gets, for each server that has resources,
// mcp__<server>__list_resources and mcp__<server>__read_resource, bridged
// like the server's own tools (same naming, permissions, per-server rate
// limit, limits and reporting), rather than one pair on the built-in acp
// server taking a server name: the per-server pair needs no server
// argument the model could get wrong, permission globs written for a
// server (mcp__github__*) cover its resources too, the pair exists only
// where there is something to read, and the built-in server would need a
// way back from an in-process MCP server into the session's Manager. The
// cost is two tool slots per such server, counted in
// Limits.ToolsPerSession after the server's own tools. A server that has
// a tool of the same name keeps it; ours is then named
// mcp__<server>__acp-agent_list_resources (or _read_resource).
const (
	listResourcesTool = "list_resources"
	readResourceTool  = "read_resource"
	// metaResourceTool marks the *mcp.Tool of a resource tool with a
	// resourceToolMark; it never leaves the bridge.
	metaResourceTool = "acp-agent/resource-tool"
)

// resourceToolMark is the value under metaResourceTool: a Go type, so no
// server's tool (whose _meta is decoded JSON) can pass for a resource tool.
type resourceToolMark struct{ kind string }

// resourceTools returns the resource tools of s as *mcp.Tool entries to be
// named and bridged after its own tools, or nil when s has no resources.
// own are s's tools, for name collisions.
func (s *client) resourceTools(own []*mcp.Tool) []*mcp.Tool {
	if !s.res.has() {
		return nil
	}
	taken := make(map[string]bool, len(own))
	for _, t := range own {
		taken[t.Name] = true
	}
	name := func(base string) string {
		if taken[base] {
			return "acp-agent_" + base
		}
		return base
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	return []*mcp.Tool{
		{
			Name:        name(listResourcesTool),
			Description: fmt.Sprintf("List the resources and resource templates of MCP server %q (URI, name, MIME type, size). Read one with its read_resource tool.", s.spec.Name),
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			Annotations: ro,
			Meta:        mcp.Meta{metaResourceTool: resourceToolMark{listResourcesTool}},
		},
		{
			Name:        name(readResourceTool),
			Description: fmt.Sprintf("Read a resource of MCP server %q by URI: one it lists, one matching its resource templates, or a resource link a tool returned.", s.spec.Name),
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{
				"uri": map[string]any{"type": "string", "description": "The resource URI"},
			}, "required": []string{"uri"}},
			Annotations: ro,
			Meta:        mcp.Meta{metaResourceTool: resourceToolMark{readResourceTool}},
		},
	}
}

// newResourceTool bridges a resource tool of resourceTools, or returns nil
// when t is one of the server's own tools.
func newResourceTool(name string, s *client, t *mcp.Tool) *gateway.Tool {
	mark, ok := t.Meta[metaResourceTool].(resourceToolMark)
	if !ok {
		return nil
	}
	kind := mark.kind
	tool := newBridgedTool(name, s, t)
	label := tool.Label
	tool.Kind = gateway.ToolKindRead
	tool.Execute = func(ctx context.Context, callID string, args map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
		if kind == listResourcesTool {
			return listResult(s.res.snapshot(s.spec.Name)), nil
		}
		uri, _ := args["uri"].(string)
		if uri == "" {
			return gateway.ErrorResult(fmt.Sprintf("%s: the argument \"uri\" must be a non-empty string", label)), nil
		}
		ctx = withCall(ctx, callInfo{id: callID, title: label, kind: gateway.ToolKindRead})
		res, err := s.readResource(ctx, uri)
		if err != nil {
			if ctx.Err() != nil {
				return gateway.Result{}, err
			}
			return gateway.ErrorResult(fmt.Sprintf("MCP server %q, resource %q: %s", s.spec.Name, uri, gateway.ErrorText(urlpolicy.RedactError(err)))), nil
		}
		return res, nil
	}
	return tool
}

// listResult renders a server's resources for the model: one line each,
// and the whole list as structured content.
func listResult(r ServerResources) gateway.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP server %q: %d resources, %d resource templates.\n", r.Server, len(r.Resources), len(r.Templates))
	for _, x := range r.Resources {
		b.WriteString("- " + ResourceLine(x) + "\n")
	}
	for _, t := range r.Templates {
		b.WriteString("- template " + TemplateLine(t) + "\n")
	}
	return gateway.Result{Content: []gateway.Content{gateway.TextContent(strings.TrimRight(b.String(), "\n"))}, Structured: r}
}

// ResourceLine renders one resource for /resources and list_resources:
// URI, name (title), MIME type, size and the updated mark.
func ResourceLine(x Resource) string {
	s := x.URI
	name := x.Name
	if x.Title != "" && x.Title != x.Name {
		name += " (" + x.Title + ")"
	}
	var attrs []string
	if name != "" {
		attrs = append(attrs, name)
	}
	if x.MIMEType != "" {
		attrs = append(attrs, x.MIMEType)
	}
	if x.Size > 0 {
		attrs = append(attrs, fmt.Sprintf("%d bytes", x.Size))
	}
	if x.Updated {
		attrs = append(attrs, "updated")
	}
	if len(attrs) > 0 {
		s += " — " + strings.Join(attrs, ", ")
	}
	return s
}

// TemplateLine renders one resource template: its URI template, name and
// MIME type.
func TemplateLine(t ResourceTemplate) string {
	attrs := []string{}
	if t.Name != "" {
		attrs = append(attrs, t.Name)
	}
	if t.MIMEType != "" {
		attrs = append(attrs, t.MIMEType)
	}
	if len(attrs) == 0 {
		return t.URITemplate
	}
	return t.URITemplate + " — " + strings.Join(attrs, ", ")
}
