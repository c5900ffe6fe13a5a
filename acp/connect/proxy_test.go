package connect_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// TestProxy_LocalStdioServer: the editor's stdio server runs on the
// editor's side of the proxy (a child of this process, in the session's
// cwd, with the entry's environment), and the gateway reaches it over
// MCP-over-ACP: its tools are the gateway's mcp__fixture__*, a direct-mode
// /call returns through the proxy, the gateway's permission requests and
// fs/* reach the editor. session/close stops it; so does the proxy's end.
func TestProxy_LocalStdioServer(t *testing.T) {
	g := newGateway(t)
	e := startEditor(t, g, false, nil)
	dir, cwd := t.TempDir(), t.TempDir()
	ready := filepath.Join(dir, "ready")
	sid := e.newSession(cwd, fixtureEntry("fixture", ready))

	pid := readyPIDs(t, ready, 1)[0]
	if ppid := parentOf(t, pid); ppid != os.Getpid() {
		t.Errorf("the fixture's parent is %d, want this process (%d): the server runs where the editor is", ppid, os.Getpid())
	}
	if got, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); err != nil || got != cwd {
		t.Errorf("the fixture runs in %q (%v), want the session's cwd %q", got, err, cwd)
	}

	_, text, _ := e.prompt(sid, "/servers")
	if !strings.Contains(text, "fixture: connected (acp") {
		t.Errorf("/servers at the gateway = %q, want fixture connected over acp", text)
	}
	_, text, _ = e.prompt(sid, "/tools")
	if !strings.Contains(text, "mcp__fixture__echo") || !strings.Contains(text, "mcp__fixture__env") {
		t.Errorf("/tools = %q, want the fixture's tools as mcp__fixture__*", text)
	}
	_, _, out := e.prompt(sid, `/call mcp__fixture__echo {"message":"hi"}`)
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted || end.Content[0].Content.Content.Text.Text != "Echo: hi" {
		t.Fatalf("echo through the proxy = %+v", end)
	}

	// env is not read-only: the gateway asks the editor first.
	_, _, out = e.prompt(sid, `/call mcp__fixture__env {}`)
	end := lastToolUpdate(out)
	if end == nil || *end.Status != acpsdk.ToolCallStatusCompleted {
		t.Fatalf("env through the proxy = %+v", end)
	}
	env := end.Content[0].Content.Content.Text.Text
	if !strings.Contains(env, "FROM_THE_EDITOR=yes") || !strings.Contains(env, "FIXTURE_READY_FILE="+ready) {
		t.Errorf("the fixture's environment lacks the entry's variables:\n%s", env)
	}
	if _, leaked := os.LookupEnv("GOPATH"); leaked && strings.Contains(env, "GOPATH=") {
		t.Errorf("the fixture got this process's GOPATH: its environment is not the sanitized one:\n%s", env)
	}
	e.mu.Lock()
	asked := append([]string(nil), e.permissions...)
	e.mu.Unlock()
	if len(asked) != 1 {
		t.Errorf("permission requests at the editor = %q, want one (env)", asked)
	}

	// The built-in read_file reads through the editor's fs/read_text_file.
	if err := os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("from the editor's disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, out = e.prompt(sid, `/call mcp__acp__read_file {"path":"notes.txt"}`)
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted {
		t.Fatalf("read_file = %+v", end)
	}
	if calls := e.fs.Calls(); len(calls) != 1 || calls[0].Method != acpsdk.ClientMethodFsReadTextFile || calls[0].Path != filepath.Join(cwd, "notes.txt") {
		t.Errorf("fs calls at the editor = %+v, want one fs/read_text_file of notes.txt", calls)
	}

	// A second session keeps its own server until the proxy ends.
	ready2 := filepath.Join(dir, "ready2")
	sid2 := e.newSession(t.TempDir(), fixtureEntry("other", ready2))
	pid2 := readyPIDs(t, ready2, 1)[0]

	if _, err := e.conn.CloseSession(e.ctx(), acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	if !testutil.WaitGone(pid, 30*time.Second) {
		t.Errorf("the fixture (pid %d) still runs after session/close", pid)
	}
	if !testutil.Alive(pid2) {
		t.Errorf("the other session's server (pid %d) ended with the first session", pid2)
	}
	_, _, out = e.prompt(sid2, `/call mcp__other__echo {"message":"still here"}`)
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted {
		t.Fatalf("echo of the second session = %+v", end)
	}

	if err := e.end(); err != nil {
		t.Errorf("Run = %v, want nil at the editor's end", err)
	}
	if !testutil.Alive(pid2) {
		return // gone with Run: what we want
	}
	t.Errorf("the second session's server (pid %d) still runs after the proxy ended", pid2)
}

// TestProxy_EditorsOwnACPServersPassThrough: the editor's own acp entries
// stay the editor's: the gateway's mcp/connect and mcp/message for them
// reach it through the proxy, beside a local stdio server.
func TestProxy_EditorsOwnACPServersPassThrough(t *testing.T) {
	g := newGateway(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "hosted", Version: "0.1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "shout", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(a.Message)}}}, nil, nil
	})
	host := &acpclient.MCPHost{Servers: map[string]*mcp.Server{"srv-1": srv}}
	e := startEditor(t, g, false, host)
	ready := filepath.Join(t.TempDir(), "ready")
	sid := e.newSession(t.TempDir(), host.Entry("hosted", "srv-1"), fixtureEntry("fixture", ready))
	if err := host.WaitEvent(e.ctx(), "connect srv-1 conn-1"); err != nil {
		t.Fatal(err)
	}
	readyPIDs(t, ready, 1)
	_, text, _ := e.prompt(sid, "/servers")
	if !strings.Contains(text, "hosted: connected (acp") || !strings.Contains(text, "fixture: connected (acp") {
		t.Errorf("/servers = %q, want both connected", text)
	}
	_, _, out := e.prompt(sid, `/call mcp__hosted__shout {"message":"hi"}`)
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted || end.Content[0].Content.Content.Text.Text != "HI" {
		t.Fatalf("the editor's server through the proxy = %+v", end)
	}
	if _, err := e.conn.CloseSession(e.ctx(), acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	if err := host.WaitEvent(e.ctx(), "disconnect conn-1"); err != nil {
		t.Fatal(err)
	}
	for _, ev := range host.Events() {
		if strings.Contains(ev, "acp-agent-connect-") {
			t.Errorf("the editor saw the proxy's own MCP-over-ACP traffic: %q", ev)
		}
	}
}

// TestProxy_BrokenStdioEntryIsTheGatewaysToRefuse: an entry that is not a
// valid stdio entry passes untouched, and the gateway's error names it.
func TestProxy_BrokenStdioEntryIsTheGatewaysToRefuse(t *testing.T) {
	g := newGateway(t)
	e := startEditor(t, g, false, nil)
	_, err := acpsdk.SendRequest[json.RawMessage](e.host.Conn(), e.ctx(), acpsdk.AgentMethodSessionNew, map[string]any{
		"cwd": t.TempDir(), "mcpServers": []any{map[string]any{"name": "broken", "command": "", "args": []string{}, "env": []any{}}},
	})
	re := requestError(t, err)
	if re.Code != -32602 || !strings.Contains(re.Error(), "command") {
		t.Errorf("session/new with an empty command = %v, want the gateway's invalid params naming the command", re)
	}
}

// TestProxy_EditorEndCancelsTheTurn: when the editor closes stdin with a
// prompt under way, the proxy cancels it (session/cancel), passes on its
// answer (cancelled), then ends the connection and the local server.
func TestProxy_EditorEndCancelsTheTurn(t *testing.T) {
	g := newGateway(t)
	e := startEditor(t, g, false, nil)
	ready := filepath.Join(t.TempDir(), "ready")
	sid := e.newSession(t.TempDir(), fixtureEntry("fixture", ready))
	pid := readyPIDs(t, ready, 1)[0]
	from := len(e.client.Updates())
	type answer struct {
		res acpsdk.PromptResponse
		err error
	}
	prompted := make(chan answer, 1)
	go func() {
		res, err := e.conn.Prompt(e.ctx(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid),
			Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(`/call mcp__fixture__slow {"seconds":600,"steps":600}`)}})
		prompted <- answer{res, err}
	}()
	e.waitUpdate(from, func(n acpsdk.SessionNotification) bool {
		u := n.Update.ToolCallUpdate
		return u != nil && u.Status != nil && *u.Status == acpsdk.ToolCallStatusInProgress
	})
	_ = e.stdin.Close()
	select {
	case a := <-prompted:
		if a.err != nil || a.res.StopReason != acpsdk.StopReasonCancelled {
			t.Errorf("the prompt under way at the editor's end = %+v, %v; want cancelled", a.res, a.err)
		}
	case <-e.ctx().Done():
		t.Fatal("the prompt under way at the editor's end was not answered")
	}
	if err := e.end(); err != nil {
		t.Errorf("Run = %v", err)
	}
	if testutil.Alive(pid) {
		t.Errorf("the local server (pid %d) runs after the proxy ended", pid)
	}
	if got := g.last().methods(); !slices.Contains(got, acpsdk.AgentMethodSessionCancel) {
		t.Errorf("the proxy sent %q, want a session/cancel", got)
	}
}
