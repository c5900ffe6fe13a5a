package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
)

// elicitor returns the bridge.Elicitor that asks the session's user through
// its editor, in the modes the editor offers; nil when the editor offers
// none (then the servers are offered no elicitation). The message the user
// sees names the server that asks.
func elicitor(ed editor.Editor) *bridge.Elicitor {
	el, ok := ed.(editor.Elicitor)
	if ed == nil || !ok {
		return nil
	}
	caps := ed.Capabilities()
	if !caps.ElicitForm && !caps.ElicitURL {
		return nil
	}
	return &bridge.Elicitor{
		Form: caps.ElicitForm,
		URL:  caps.ElicitURL,
		Elicit: func(ctx context.Context, r bridge.ElicitRequest) (*mcp.ElicitResult, error) {
			p := r.Params
			req := editor.ElicitRequest{
				Mode:       p.Mode,
				Message:    fmt.Sprintf("MCP server %q asks: %s", r.Server, p.Message),
				ToolCallID: r.CallID,
				URL:        p.URL,
				ID:         p.ElicitationID,
			}
			if p.Mode == editor.ModeForm && p.RequestedSchema != nil {
				b, err := json.Marshal(p.RequestedSchema)
				if err == nil {
					err = json.Unmarshal(b, &req.Schema)
				}
				if err != nil {
					return nil, fmt.Errorf("the requestedSchema of MCP server %q: %w", r.Server, err)
				}
			}
			res, err := el.Elicit(ctx, req)
			if err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: res.Action, Content: res.Content}, nil
		},
		Complete: func(ctx context.Context, _, id string) {
			_ = el.CompleteElicitation(ctx, id) // best effort: the user may already have moved on
		},
	}
}
