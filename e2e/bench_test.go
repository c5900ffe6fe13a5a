package e2e

import (
	"context"
	"os/exec"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkBridgedCall measures one /call through the agent: an ACP prompt,
// the runner, the registry, the bridge, MCP tools/call to the Go fixture, and
// the session/update notifications back. Compare with BenchmarkDirectCall
// (`make bench` prints the ratio).
func BenchmarkBridgedCall(b *testing.B) {
	a := startAgent(b)
	ctx := context.Background()
	res, err := a.Conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: b.TempDir(), McpServers: []acpsdk.McpServer{fixtureServer("fixture", "")}})
	if err != nil {
		b.Fatal(err)
	}
	sid := string(res.SessionId)
	b.ResetTimer()
	for b.Loop() {
		stop, err := a.Prompt(ctx, sid, `/call mcp__fixture__echo {"message":"hi"}`)
		if err != nil || stop != acpsdk.StopReasonEndTurn {
			b.Fatalf("prompt: %s, %v", stop, err)
		}
	}
}

// BenchmarkDirectCall measures the same tools/call from a go-sdk client
// straight to the fixture server, with no agent in between.
func BenchmarkDirectCall(b *testing.B) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(fixtureBin)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
	b.ResetTimer()
	for b.Loop() {
		if _, err := cs.CallTool(context.Background(), params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBridgedCallHTTP is BenchmarkBridgedCall over Streamable HTTP: the
// agent reaches the fixture in HTTP mode through the URL policy's dialer.
func BenchmarkBridgedCallHTTP(b *testing.B) {
	url := startFixtureHTTP(b) + "/mcp"
	a := startAgent(b)
	ctx := context.Background()
	res, err := a.Conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: b.TempDir(), McpServers: []acpsdk.McpServer{httpServer("fixture", url, nil)}})
	if err != nil {
		b.Fatal(err)
	}
	sid := string(res.SessionId)
	b.ResetTimer()
	for b.Loop() {
		stop, err := a.Prompt(ctx, sid, `/call mcp__fixture__echo {"message":"hi"}`)
		if err != nil || stop != acpsdk.StopReasonEndTurn {
			b.Fatalf("prompt: %s, %v", stop, err)
		}
	}
}

// BenchmarkDirectCallHTTP is BenchmarkDirectCall over Streamable HTTP.
func BenchmarkDirectCallHTTP(b *testing.B) {
	url := startFixtureHTTP(b) + "/mcp"
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
	b.ResetTimer()
	for b.Loop() {
		if _, err := cs.CallTool(context.Background(), params); err != nil {
			b.Fatal(err)
		}
	}
}
