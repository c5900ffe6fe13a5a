package bridge_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// A Manager connects a session's MCP servers and hands their tools out as
// gateway Tools named mcp__<server>__<tool>. Here the server runs in this
// process and Options.Dial hands the Manager one end of go-sdk in-memory
// transports; without Dial the Manager starts a stdio child or dials the
// spec's URL.
func ExampleManager() {
	ctx := context.Background()

	type greetArgs struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	greeter := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(greeter, &mcp.Tool{Name: "greet", Description: "say hi"},
		func(_ context.Context, _ *mcp.CallToolRequest, args greetArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hi " + args.Name}}}, nil, nil
		})

	var sessions []*mcp.ServerSession
	m := bridge.NewManager(&bridge.Options{
		Dial: func(ctx context.Context, spec bridge.ServerSpec) (mcp.Transport, error) {
			client, server := mcp.NewInMemoryTransports()
			ss, err := greeter.Connect(ctx, server, nil)
			if err != nil {
				return nil, err
			}
			sessions = append(sessions, ss)
			return client, nil
		},
	})
	spec := bridge.ServerSpec{Name: "greeter", Transport: bridge.TransportStdio, Command: "greeter-mcp"}
	if err := spec.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	if err := m.Connect(ctx, []bridge.ServerSpec{spec}); err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		_ = m.Close(ctx)
		for _, ss := range sessions {
			_ = ss.Close()
		}
	}()

	for _, s := range m.Servers() {
		fmt.Printf("server %s: %s, %d tool(s)\n", s.Name, s.State, s.Tools)
	}
	for _, tool := range m.Tools() {
		res, err := tool.Execute(ctx, "call-1", map[string]any{"name": "Ada"}, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s (%s): %s\n", tool.Name, tool.Title(), res.Content[0].Text)
	}
	// Output:
	// server greeter: connected, 1 tool(s)
	// mcp__greeter__greet (greeter/greet): Hi Ada
}

// ServerSpec.Validate holds the rules every front end applies to a server
// entry; a broken rule is a *SpecError naming the server and the field.
func ExampleServerSpec_Validate() {
	specs := []bridge.ServerSpec{
		{Name: "fs", Transport: bridge.TransportStdio, Command: "mcp-server-filesystem"},
		{Name: "fs", Transport: bridge.TransportStdio},
		{Name: "web", Transport: bridge.TransportHTTP, URL: "https://mcp.example.com/mcp", Headers: []bridge.Header{{Name: "Host", Value: "evil"}}},
		{Name: "ws", Transport: "websocket"},
	}
	for _, s := range specs {
		fmt.Printf("%s: %v\n", s.Name, s.Validate())
	}
	// Output:
	// fs: <nil>
	// fs: server "fs" command: must be a non-empty string
	// web: server "web" headers: header "Host" is set by the transport and may not be sent by a client
	// ws: server "ws" type: "websocket" is not a transport (want stdio, http, sse or acp)
}
