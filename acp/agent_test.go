package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// memServer is an in-process MCP server for the agent tests.
func memServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "0.1"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo a message.\nMore.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "image", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "nope"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return srv
}

type harness struct {
	t      *testing.T
	conn   *acpsdk.ClientSideConnection
	client *acpclient.Recorder
	agent  *Agent
	done   chan struct{}
}

// startAgent runs an Agent over pipes; MCP servers named "mem*" are
// in-process, any other entry uses the real transports.
func startAgent(t *testing.T) *harness {
	t.Helper()
	return startAgentWith(t, testOptions{})
}

// testOptions are the options of a test agent and of its session core.
type testOptions struct {
	Gateway   gateway.Gateway
	Bridge    bridge.Options
	Store     store.Store
	History   *session.History
	InProcess []session.InProcessServer
	// DefaultServers and ServerSettings are the config's.
	DefaultServers []bridge.ServerSpec
	ServerSettings map[string]session.ServerSettings
	Logger         *slog.Logger
	SignIn         *SignIn
	// DefaultMode is the config's sandbox.mode ("": full access).
	DefaultMode confine.Mode
}

// newTestAgent returns an Agent over a new session core built from o (nil:
// every default), as cmd/acp-agent composes them.
func newTestAgent(o *testOptions) *Agent {
	if o == nil {
		o = &testOptions{}
	}
	core := session.NewCore(&session.CoreOptions{
		Gateway: o.Gateway, Bridge: o.Bridge, Store: o.Store, History: o.History, InProcess: o.InProcess, Logger: o.Logger,
		DefaultServers: o.DefaultServers, ServerSettings: o.ServerSettings, DefaultMode: o.DefaultMode,
	})
	return New(core, &Options{Logger: o.Logger, SignIn: o.SignIn})
}

// startAgentWith is startAgent with options (Bridge.Dial is set here
// unless the options have one).
func startAgentWith(t *testing.T, opts testOptions) *harness {
	t.Helper()
	dial := func(ctx context.Context, spec bridge.ServerSpec) (mcp.Transport, error) {
		if !strings.HasPrefix(spec.Name, "mem") {
			return nil, nil
		}
		ct, st := mcp.NewInMemoryTransports()
		if _, err := memServer().Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	if opts.Bridge.Dial == nil {
		opts.Bridge.Dial = dial
	}
	return startAgentOn(t, newTestAgent(&opts))
}

// startAgentOn runs agent over pipes, as startAgentWith does.
func startAgentOn(t *testing.T, agent *Agent) *harness {
	t.Helper()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	h := &harness{t: t, client: &acpclient.Recorder{}, agent: agent, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		_ = agent.Serve(context.Background(), agentIn, agentOut)
		agentOut.Close()
	}()
	h.conn = acpclient.NewConnection(h.client, clientOut, clientIn)
	t.Cleanup(func() {
		clientOut.Close()
		select {
		case <-h.done:
		case <-time.After(20 * time.Second):
			t.Error("agent did not stop after stdin EOF")
		}
	})
	if _, err := h.conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) newSession(servers ...acpsdk.McpServer) string {
	h.t.Helper()
	return h.newSessionIn(h.t.TempDir(), servers...)
}

// newSessionIn is newSession with the session's cwd.
func (h *harness) newSessionIn(cwd string, servers ...acpsdk.McpServer) string {
	h.t.Helper()
	if servers == nil {
		servers = []acpsdk.McpServer{}
	}
	from := len(h.client.Updates())
	res, err := h.conn.NewSession(h.t.Context(), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: servers})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.t.Context(), 10*time.Second)
	defer cancel()
	if _, _, err := h.client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		return n.SessionId == res.SessionId && n.Update.AvailableCommandsUpdate != nil
	}); err != nil {
		h.t.Fatal(err)
	}
	return string(res.SessionId)
}

// prompt sends text and returns the stop reason and the updates of the turn.
func (h *harness) prompt(ctx context.Context, sid, text string) (acpsdk.StopReason, []acpsdk.SessionNotification) {
	h.t.Helper()
	from := len(h.client.Updates())
	res, err := h.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
	if err != nil {
		h.t.Fatalf("prompt %q: %v", text, err)
	}
	return res.StopReason, h.client.Updates()[from:]
}

func joinText(updates []acpsdk.SessionNotification) string {
	var b strings.Builder
	for _, u := range updates {
		b.WriteString(acpclient.Text(u))
	}
	return b.String()
}

func lastToolUpdate(updates []acpsdk.SessionNotification) *acpsdk.SessionToolCallUpdate {
	for i := len(updates) - 1; i >= 0; i-- {
		if u := updates[i].Update.ToolCallUpdate; u != nil {
			return u
		}
	}
	return nil
}

func TestAgent_Initialize(t *testing.T) {
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	go func() { _ = newTestAgent(nil).Serve(context.Background(), agentIn, agentOut) }()
	conn := acpclient.NewConnection(&acpclient.Recorder{}, clientOut, clientIn)
	defer clientOut.Close()
	res, err := conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := res.AgentCapabilities
	if res.ProtocolVersion != 1 || res.AgentInfo == nil || res.AgentInfo.Name != "acp-agent" ||
		!c.PromptCapabilities.EmbeddedContext || !c.PromptCapabilities.Image ||
		!c.McpCapabilities.Http || !c.McpCapabilities.Sse || c.SessionCapabilities.Close == nil ||
		c.SessionCapabilities.Delete == nil || c.SessionCapabilities.Fork == nil {
		t.Errorf("initialize = %+v", res)
	}
}

func TestAgent_NewSessionRefusesBrokenList(t *testing.T) {
	h := startAgent(t)
	tests := []struct {
		name    string
		servers []acpsdk.McpServer
		want    string
	}{
		{"empty name", []acpsdk.McpServer{acpclient.Stdio("", "x", nil, nil)}, "mcpServers[0] name: must be a non-empty string"},
		{"empty command", []acpsdk.McpServer{acpclient.Stdio("a", "", nil, nil)}, `mcpServers[0] ("a") command`},
		{"duplicate", []acpsdk.McpServer{acpclient.Stdio("a", "x", nil, nil), acpclient.Stdio("a", "y", nil, nil)}, `duplicate name "a"`},
		{"reserved name acp", []acpsdk.McpServer{acpclient.Stdio("acp", "x", nil, nil)}, `mcpServers[0] ("acp") name: "acp" is reserved for the agent's built-in tools`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: tt.servers})
			var re *acpsdk.RequestError
			if !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(re.Message, tt.want) {
				t.Errorf("err = %v, want invalid_params containing %q", err, tt.want)
			}
		})
	}
	_, err := h.conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: "relative/dir", McpServers: []acpsdk.McpServer{}})
	if err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative cwd: err = %v", err)
	}
}

func TestAgent_SessionReportsFailedServersAfterResponse(t *testing.T) {
	h := startAgent(t)
	sid := h.newSession(acpclient.Stdio("mem", "unused", nil, nil), acpclient.Stdio("ghost", "acp-agent-no-such-command", nil, nil),
		acpsdk.McpServer{Http: &acpsdk.McpServerHttpInline{Name: "web", Url: "http://example.invalid/mcp", Headers: []acpsdk.HttpHeader{}}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	i, _, err := h.client.WaitFor(ctx, 0, func(n acpsdk.SessionNotification) bool { return n.Update.AvailableCommandsUpdate != nil })
	if err != nil {
		t.Fatal(err)
	}
	updates := h.client.Updates()[:i]
	text := joinText(updates)
	for _, want := range []string{`MCP server "ghost" failed: cannot start command "acp-agent-no-such-command"`, `MCP server "web" failed: URL "http://example.invalid/mcp" refused: plain http only to loopback (localhost, 127.0.0.0/8, ::1); use https, or add the host to sandbox.allowHosts` + "\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("startup messages %q lack %q", text, want)
		}
	}
	for _, u := range updates {
		if string(u.SessionId) != sid {
			t.Errorf("update for session %q, want %q", u.SessionId, sid)
		}
	}
	_, out := h.prompt(t.Context(), sid, "/servers")
	got := joinText(out)
	for _, want := range []string{"- mem: connected (stdio, 4 tools, mem 0.1)", "- ghost: failed (stdio): cannot start", "- web: failed (http): URL"} {
		if !strings.Contains(got, want) {
			t.Errorf("/servers = %q, lacks %q", got, want)
		}
	}
}

func TestAgent_DirectCommands(t *testing.T) {
	h := startAgent(t)
	sid := h.newSession(acpclient.Stdio("mem", "unused", nil, nil))

	stop, out := h.prompt(t.Context(), sid, "/tools")
	if got := joinText(out); stop != acpsdk.StopReasonEndTurn || !strings.Contains(got, "- mcp__mem__echo (mem) — Echo a message.") || strings.Contains(got, "More.") {
		t.Errorf("/tools: %s %q", stop, got)
	}

	stop, out = h.prompt(t.Context(), sid, `/call mcp__mem__echo {"message":"hi"}`)
	if stop != acpsdk.StopReasonEndTurn {
		t.Errorf("stop = %s", stop)
	}
	var start *acpsdk.SessionUpdateToolCall
	for _, u := range out {
		if u.Update.ToolCall != nil {
			start = u.Update.ToolCall
		}
	}
	if start == nil || start.Title != "mem/echo" || start.Kind != acpsdk.ToolKindRead || start.Status != acpsdk.ToolCallStatusInProgress {
		t.Fatalf("tool_call = %+v", start)
	}
	if raw, _ := json.Marshal(start.RawInput); string(raw) != `{"message":"hi"}` {
		t.Errorf("rawInput = %s", raw)
	}
	end := lastToolUpdate(out)
	if end == nil || *end.Status != acpsdk.ToolCallStatusCompleted || end.ToolCallId != start.ToolCallId ||
		len(end.Content) != 1 || end.Content[0].Content.Content.Text.Text != "Echo: hi" || end.RawOutput == nil {
		t.Fatalf("tool_call_update = %+v", end)
	}

	_, out = h.prompt(t.Context(), sid, "/call mcp__mem__image")
	if end := lastToolUpdate(out); end == nil || end.Content[0].Content.Content.Image == nil || end.Content[0].Content.Content.Image.MimeType != "image/png" {
		t.Errorf("image call = %+v", end)
	}

	_, out = h.prompt(t.Context(), sid, "/call mcp__mem__fail {}")
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusFailed || end.Content[0].Content.Content.Text.Text != "nope" {
		t.Errorf("isError call = %+v", end)
	}

	_, out = h.prompt(t.Context(), sid, "/call mcp__mem__nothing {}")
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusFailed ||
		end.Content[0].Content.Content.Text.Text != "unknown tool mcp__mem__nothing; /tools lists them" {
		t.Errorf("unknown tool = %+v", end)
	}

	_, out = h.prompt(t.Context(), sid, `/call mcp__mem__echo {"message":`)
	if got := joinText(out); !strings.Contains(got, "arguments are not valid JSON") || lastToolUpdate(out) != nil {
		t.Errorf("malformed JSON: %q", got)
	}
	_, out = h.prompt(t.Context(), sid, `/call mcp__mem__echo [1]`)
	if got := joinText(out); !strings.Contains(got, "must be a JSON object") {
		t.Errorf("array args: %q", got)
	}

	_, out = h.prompt(t.Context(), sid, "hello there")
	if got := joinText(out); !strings.Contains(got, "/call <tool>") || !strings.Contains(got, "--model anthropic:claude-sonnet-4-5") {
		t.Errorf("help: %q", got)
	}
}

func TestAgent_CancelEndsTurnCancelled(t *testing.T) {
	h := startAgent(t)
	sid := h.newSession(acpclient.Stdio("mem", "unused", nil, nil))
	type result struct {
		stop acpsdk.StopReason
		err  error
	}
	done := make(chan result, 1)
	go func() {
		res, err := h.conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/call mcp__mem__block")}})
		done <- result{res.StopReason, err}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, _, err := h.client.WaitFor(ctx, 0, func(n acpsdk.SessionNotification) bool {
		u := n.Update.ToolCallUpdate
		return u != nil && u.Status != nil && *u.Status == acpsdk.ToolCallStatusInProgress
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.conn.Cancel(t.Context(), acpsdk.CancelNotification{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.stop != acpsdk.StopReasonCancelled {
			t.Errorf("prompt = %s, %v; want cancelled", r.stop, r.err)
		}
	case <-ctx.Done():
		t.Fatal("prompt did not end after session/cancel")
	}
	// The session goes on.
	if stop, out := h.prompt(t.Context(), sid, `/call mcp__mem__echo {"message":"again"}`); stop != acpsdk.StopReasonEndTurn || lastToolUpdate(out) == nil {
		t.Errorf("after cancel: %s", stop)
	}
}

func TestAgent_CloseSession(t *testing.T) {
	gw := runner.NewLocal(nil)
	h := startAgentWith(t, testOptions{Gateway: gw})
	sid := h.newSession(acpclient.Stdio("mem", "unused", nil, nil))
	if _, err := h.conn.CloseSession(t.Context(), acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	_, err := h.conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/tools")}})
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != -32002 || !strings.Contains(re.Message, sid) {
		t.Errorf("prompt after close: %v, want resource-not-found (-32002) naming the session", err)
	}
	if tools := gw.Registry().Tools("acp:" + sid); len(tools) != 0 {
		t.Errorf("%d tools still registered after session/close", len(tools))
	}
}

func TestAgent_DefaultServersMergeAndLimits(t *testing.T) {
	h := startAgentWith(t, testOptions{
		DefaultServers: []bridge.ServerSpec{
			{Name: "memdefault", Transport: bridge.TransportStdio, Command: "unused"},
			{Name: "memclash", Transport: bridge.TransportStdio, Command: "default-command-never-run"},
		},
		Bridge: bridge.Options{Limits: quota.Limits{ServersPerSession: 3, ToolsPerSession: 6}},
	})
	// The session's "memclash" replaces the default one: a default that
	// could not start would fail.
	sid := h.newSession(acpclient.Stdio("memclash", "unused", nil, nil))
	_, out := h.prompt(t.Context(), sid, "/servers")
	got := joinText(out)
	for _, want := range []string{"2 MCP servers", "- memdefault: connected", "- memclash: connected", `MCP server "memclash": 1 of its 4 tools left out, over the limit of 6 tools per session shared between the session's servers (config limits.toolsPerSession); e.g. image`, "- memdefault: connected (stdio, 3 tools"} {
		if !strings.Contains(got, want) {
			t.Errorf("/servers lacks %q:\n%s", want, got)
		}
	}
	if startup := joinText(h.client.Updates()); !strings.Contains(startup, "1 of its 4 tools left out") {
		t.Errorf("the session-start message does not say which tools were left out:\n%s", startup)
	}

	_, err := h.conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{
		acpclient.Stdio("mema", "x", nil, nil), acpclient.Stdio("memb", "x", nil, nil)}})
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(re.Message, "4 servers (2 from the request, 2 default servers from the config) exceed the limit of 3 servers per session") {
		t.Errorf("too many servers: %v", err)
	}
}
