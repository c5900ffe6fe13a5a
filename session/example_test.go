package session_test

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// A front end opens a session with one MCP server (here an in-process
// server over in-memory transports), runs a turn with the direct provider
// (no model: "/call" runs a tool) and ends the session.
func ExampleCore() {
	ctx := context.Background()

	// An MCP server with one tool, "greet".
	srv := mcp.NewServer(&mcp.Implementation{Name: "hello", Version: "1"}, nil)
	type args struct {
		Name string `json:"name"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greets someone"},
		func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + a.Name + "!"}}}, nil, nil
		})
	dial := func(ctx context.Context, _ bridge.ServerSpec) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}

	st := memory.New()
	history := session.NewHistory(st, nil)
	core := session.NewCore(&session.CoreOptions{
		Gateway: runner.NewLocal(&runner.Options{History: history, Permissions: runner.Permissions{Mode: runner.PermissionAllow}}),
		Bridge:  bridge.Options{Dial: dial},
		Store:   st,
		History: history,
	})

	defer core.Shutdown()

	s, err := core.Open(ctx, session.OpenRequest{
		Cwd:     os.TempDir(),
		Servers: []bridge.ServerSpec{{Name: "hello", Transport: bridge.TransportStdio, Command: "unused"}},
	})
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	for _, t := range s.Tools() {
		fmt.Println("tool:", t.Name)
	}

	stop, err := s.Prompt(ctx, session.PromptRequest{
		Content: []gateway.Content{{Type: gateway.ContentText, Text: `/call mcp__hello__greet {"name":"Ada"}`}},
		Emit: func(ev gateway.Event) {
			if ev.Kind == gateway.EventToolEnd {
				fmt.Println("result:", gateway.PromptText(ev.Call.Result.Content))
			}
		},
	})
	fmt.Println("stop:", stop, err)

	s.End()
	fmt.Println("live after End:", core.Lookup(s.ID()) != nil)
	// Output:
	// tool: mcp__hello__greet
	// result: Hello, Ada!
	// stop: end_turn <nil>
	// live after End: false
}
