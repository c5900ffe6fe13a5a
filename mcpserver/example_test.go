package mcpserver_test

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/mcpserver"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// A front end builds the session core, then serves the MCP server over a
// transport (acp-agent mcp-server: mcp.StdioTransport, or
// mcp.NewStreamableHTTPHandler); here a client in the same process calls
// ask_agent in direct mode (no model).
func ExampleNew() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)

	store := memory.New()
	history := session.NewHistory(store, nil)
	core := session.NewCore(&session.CoreOptions{Gateway: runner.NewLocal(&runner.Options{History: history}), Store: store, History: history})
	defer core.Shutdown()
	srv, shutdown := mcpserver.New(core, &mcpserver.Options{Cwd: dir})
	defer shutdown()

	ct, st := mcp.NewInMemoryTransports()
	ss, _ := srv.Connect(ctx, st, nil)
	defer ss.Wait()
	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_agent", Arguments: map[string]any{"message": "/tools"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: This session has no tools. /servers shows why a server has none.
}
