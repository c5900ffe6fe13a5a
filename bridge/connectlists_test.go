package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// TestManager_ConnectListsTogether checks that the connect sends tools/list,
// resources/list and prompts/list together, not one after the other (one
// round trip instead of three): the server answers none of the three until
// all three have arrived, and refuses them if they have not within a long
// deadline, so a bridge that waits for each answer before the next request
// loses the server's tools.
func TestManager_ConnectListsTogether(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "lists", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	var mu sync.Mutex
	arrived := map[string]bool{}
	all := make(chan struct{})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list", "resources/list", "prompts/list":
				mu.Lock()
				arrived[method] = true
				if len(arrived) == 3 {
					close(all)
				}
				mu.Unlock()
				select {
				case <-all:
				case <-time.After(20 * time.Second):
					return nil, fmt.Errorf("%s: the other lists never came while this one waited", method)
				}
			}
			return next(ctx, method, req)
		}
	})
	m := bridge.NewManager(nil)
	defer func() { _ = m.Close(ctx) }()
	if err := m.Connect(ctx, []bridge.ServerSpec{{Name: "lists", Transport: bridge.TransportInProcess, Server: srv}}); err != nil {
		t.Fatal(err)
	}
	if st := m.Servers(); len(st) != 1 || st[0].State != bridge.StateConnected {
		t.Fatalf("servers = %+v, want lists connected", st)
	}
	if !slices.ContainsFunc(m.Tools(), func(tl *gateway.Tool) bool { return tl.Name == "mcp__lists__t" }) {
		t.Errorf("the server's tool t is not bridged")
	}
	if r := m.Resources(); len(r) != 1 || len(r[0].Resources) != 1 {
		t.Errorf("resources = %+v, want the server's one resource", r)
	}
	if p := m.Prompts(); len(p) != 1 {
		t.Errorf("prompts = %+v, want the server's one prompt", p)
	}
}
