package bridge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// newBridgedTool wraps the MCP tool t of server s as a gateway.Tool named name.
func newBridgedTool(name string, s *server, t *mcp.Tool) *gateway.Tool {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	label := s.spec.Name + "/" + t.Name
	ann := annotationsFromMCP(t.Annotations)
	if ann.Title == "" {
		ann.Title = t.Title
	}
	toolName, kind := t.Name, toolKind(t)
	return &gateway.Tool{
		Name:        name,
		Label:       label,
		Group:       s.spec.Name,
		Description: t.Description,
		InputSchema: schema,
		Annotations: ann,
		Kind:        kind,
		Execute: func(ctx context.Context, callID string, args map[string]any, onUpdate func(gateway.ToolUpdate)) (gateway.Result, error) {
			ctx = withCall(ctx, callInfo{id: callID, title: label, kind: kind})
			res, err := s.call(ctx, toolName, args, onUpdate)
			if err != nil {
				return gateway.Result{}, fmt.Errorf("MCP server %q, tool %q: %w", s.spec.Name, toolName, err)
			}
			return res, nil
		},
	}
}

// MetaToolKind is the key of an MCP tool's _meta under which a server may
// declare the ACP tool kind of its calls ("read", "edit", "search",
// "execute", "think", "fetch", "delete", "move", "other"): acp-agent's
// built-in tools do, and so can any server. An unknown value is ignored.
const MetaToolKind = "acp-agent/kind"

// toolKind returns the ACP tool kind t declares in its _meta, or "".
func toolKind(t *mcp.Tool) gateway.ToolKind {
	k, _ := t.Meta[MetaToolKind].(string)
	if kind := gateway.ToolKind(k); gateway.ValidToolKind(kind) {
		return kind
	}
	return ""
}
