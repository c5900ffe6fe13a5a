package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// hostedEcho is a go-sdk MCP server the test client hosts on the ACP
// connection (MCP-over-ACP): one tool, echo.
func hostedEcho() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hosted", Version: "0.1"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo a message from the editor."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo from the editor: " + in.Message}}}, nil, nil
		})
	return srv
}

// TestMCPOverACP_DirectMode: the agent binary connects to a server the
// client hosts (mcp/connect), /servers shows it over acp, /tools lists it,
// /call reaches it through mcp/message, and session/close disconnects it
// (the client gets mcp/disconnect).
func TestMCPOverACP_DirectMode(t *testing.T) {
	t.Parallel()
	host := &acpclient.MCPHost{Servers: map[string]*mcp.Server{"editor-1": hostedEcho()}}
	a := startAgentClient(t, &acpclient.Recorder{MCP: host}, nil)
	sid := a.newSession(t.TempDir(), host.Entry("editor", "editor-1"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := host.WaitEvent(ctx, "connect editor-1 conn-1"); err != nil {
		t.Fatal(err)
	}

	_, out := a.prompt(sid, "/servers")
	if got := text(out); !strings.Contains(got, "editor: connected (acp, 1 tools") {
		t.Errorf("/servers = %q, want editor connected over acp", got)
	}
	_, out = a.prompt(sid, "/tools")
	if got := text(out); !strings.Contains(got, "mcp__editor__echo (editor) — Echo a message from the editor.") {
		t.Errorf("/tools = %q", got)
	}
	_, out = a.prompt(sid, `/call mcp__editor__echo {"message":"hi"}`)
	if end := finalToolUpdate(t, out); *end.Status != acpsdk.ToolCallStatusCompleted || contentText(end) != "Echo from the editor: hi" {
		t.Errorf("/call over acp:\n%s", dump(out))
	}

	if _, err := a.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	if err := host.WaitEvent(ctx, "disconnect conn-1"); err != nil {
		t.Fatal(err)
	}
}

// TestMCPOverACP_ModelCallsHostedTool: the model (the fake OpenAI server)
// sees the hosted tool by its bridged name, calls it, and gets its result.
func TestMCPOverACP_ModelCallsHostedTool(t *testing.T) {
	t.Parallel()
	host := &acpclient.MCPHost{Servers: map[string]*mcp.Server{"editor-1": hostedEcho()}}
	fake := fakemodel.NewOpenAI(t)
	a := startModelAgent(t, "openai", fake.URL, &acpclient.Recorder{MCP: host})
	sid := a.newSession(t.TempDir(), host.Entry("editor", "editor-1"))
	fake.Push(
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_hosted", Name: "mcp__editor__echo", Args: `{"message":"from the model"}`}}},
		fakemodel.Turn{Text: "Done."},
	)
	stop, out := a.prompt(sid, "use the editor's tool")
	if stop != acpsdk.StopReasonEndTurn {
		t.Errorf("stop = %s", stop)
	}
	end := finalUpdates(out)["call_hosted"]
	if end == nil || *end.Status != acpsdk.ToolCallStatusCompleted || contentText(end) != "Echo from the editor: from the model" {
		t.Fatalf("hosted tool call:\n%s", dump(out))
	}
	reqs := fake.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	if first := string(reqs[0].Body); !strings.Contains(first, "mcp__editor__echo") {
		t.Errorf("the model's tools lack mcp__editor__echo: %s", first)
	}
	if second := string(reqs[1].Body); !strings.Contains(second, "Echo from the editor: from the model") {
		t.Errorf("the tool result did not reach the model: %s", second)
	}
}
