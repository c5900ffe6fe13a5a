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
	toolName := t.Name
	return &gateway.Tool{
		Name:        name,
		Label:       label,
		Group:       s.spec.Name,
		Description: t.Description,
		InputSchema: schema,
		Annotations: ann,
		Execute: func(ctx context.Context, _ string, args map[string]any, onUpdate func(gateway.ToolUpdate)) (gateway.Result, error) {
			res, err := s.call(ctx, toolName, args, onUpdate)
			if err != nil {
				return gateway.Result{}, fmt.Errorf("MCP server %q, tool %q: %w", s.spec.Name, toolName, err)
			}
			return res, nil
		},
	}
}
