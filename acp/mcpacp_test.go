package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
)

// hostedServer is an MCP server the test client hosts on the ACP
// connection: echo, and progress, which reports progress (a notification of
// the server's, carried back in mcp/message) before it answers.
func hostedServer() *mcp.Server { return hostedServerShowing(nil) }

// hostedServerShowing is hostedServer whose progress tool, once it has sent
// its progress, waits for shown (when not nil) to return before it answers:
// go-sdk delivers a notification asynchronously, so a result sent at once
// may reach the agent first, and progress after its call's end is dropped.
func hostedServerShowing(shown func(context.Context)) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hosted", Version: "0.1"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo a message."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half way there"}); err != nil {
				return nil, err
			}
			if shown != nil {
				shown(ctx)
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	return srv
}

// startHostingAgent runs an Agent over pipes with a client that hosts
// servers (by id).
func startHostingAgent(t *testing.T, servers map[string]*mcp.Server) (*harness, *acpclient.MCPHost, acpsdk.InitializeResponse) {
	t.Helper()
	return startHost(t, &acpclient.MCPHost{Servers: servers})
}

// startHost runs an Agent over pipes with a client that hosts host's
// servers.
func startHost(t *testing.T, host *acpclient.MCPHost) (*harness, *acpclient.MCPHost, acpsdk.InitializeResponse) {
	t.Helper()
	agent := newTestAgent(nil)
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	h := &harness{t: t, client: &acpclient.Recorder{MCP: host}, agent: agent, done: make(chan struct{})}
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
	res, err := h.conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber})
	if err != nil {
		t.Fatal(err)
	}
	return h, host, res
}

func TestMCPOverACP_HostedServerThroughSession(t *testing.T) {
	var h *harness
	shown := make(chan struct{}) // closed once the harness is set
	progressShown := func(ctx context.Context) {
		select {
		case <-shown:
		case <-ctx.Done():
			return
		}
		_, _, _ = h.client.WaitFor(ctx, 0, func(n acpsdk.SessionNotification) bool {
			raw, _ := json.Marshal(n)
			return strings.Contains(string(raw), "half way there")
		})
	}
	h, host, init := startHostingAgent(t, map[string]*mcp.Server{"srv-1": hostedServerShowing(progressShown)})
	close(shown)
	if !init.AgentCapabilities.McpCapabilities.Acp {
		t.Errorf("initialize: mcpCapabilities.acp = false, want true")
	}
	sid := h.newSession(host.Entry("hosted", "srv-1"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := host.WaitEvent(ctx, "connect srv-1 conn-1"); err != nil {
		t.Fatal(err)
	}

	_, out := h.prompt(ctx, sid, "/servers")
	if got := joinText(out); !strings.Contains(got, "hosted: connected (acp, 2 tools") {
		t.Errorf("/servers = %q, want hosted connected over acp with 2 tools", got)
	}
	_, out = h.prompt(ctx, sid, "/tools")
	if got := joinText(out); !strings.Contains(got, "mcp__hosted__echo (hosted)") || !strings.Contains(got, "mcp__hosted__progress") {
		t.Errorf("/tools = %q", got)
	}
	_, out = h.prompt(ctx, sid, `/call mcp__hosted__echo {"message":"over acp"}`)
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted || end.Content[0].Content.Content.Text.Text != "Echo: over acp" {
		t.Fatalf("echo over acp = %+v\n%s", end, joinText(out))
	}
	// The server's notification (progress) comes back in mcp/message.
	_, out = h.prompt(ctx, sid, `/call mcp__hosted__progress {}`)
	if raw, _ := json.Marshal(out); !strings.Contains(string(raw), "half way there") {
		t.Errorf("progress over acp not shown: %s", raw)
	}
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted || end.Content[len(end.Content)-1].Content.Content.Text.Text != "done" {
		t.Fatalf("progress call = %+v", end)
	}

	if _, err := h.conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	if err := host.WaitEvent(ctx, "disconnect conn-1"); err != nil {
		t.Fatal(err)
	}
}

func TestMCPOverACP_UnknownServerFailsThatServerOnly(t *testing.T) {
	h, host, _ := startHostingAgent(t, map[string]*mcp.Server{"srv-1": hostedServer()})
	sid := h.newSession(host.Entry("ghost", "no-such-id"), host.Entry("hosted", "srv-1"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, out := h.prompt(ctx, sid, "/servers")
	got := joinText(out)
	if !strings.Contains(got, "hosted: connected (acp") || !strings.Contains(got, "ghost: failed (acp)") || !strings.Contains(got, "no-such-id") {
		t.Errorf("/servers = %q, want ghost failed naming its id and hosted connected", got)
	}
}

// frames captures what a Mux writes.
type frames struct {
	mu  sync.Mutex
	got [][]byte
	ch  chan struct{}
}

func (f *frames) write(p []byte) error {
	f.mu.Lock()
	f.got = append(f.got, append([]byte(nil), p...))
	f.mu.Unlock()
	select {
	case f.ch <- struct{}{}:
	default:
	}
	return nil
}

func (f *frames) wait(t *testing.T, n int) []byte {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		f.mu.Lock()
		if len(f.got) >= n {
			b := f.got[n-1]
			f.mu.Unlock()
			return b
		}
		f.mu.Unlock()
		select {
		case <-f.ch:
		case <-deadline:
			t.Fatalf("frame %d never written", n)
		}
	}
}

// TestMCPOverACP_DraftForIDEntries checks the binding choice for the
// draft: an entry that gave "id" (acp-go-sdk v0.13), alone or with an equal
// "serverId", is connected with mcp/connect {"acpId"} and closed with
// mcp/disconnect.
func TestMCPOverACP_DraftForIDEntries(t *testing.T) {
	for _, tc := range []struct {
		entry, want, not string
	}{
		{`{"type":"acp","name":"a","id":"x1"}`, `"acpId":"x1"`, `serverId`},
		{`{"type":"acp","name":"a","id":"x1","serverId":"x1"}`, `"acpId":"x1"`, `serverId`},
	} {
		specs, err := ParseMCPServers(json.RawMessage("[" + tc.entry + "]"))
		if err != nil {
			t.Fatal(err)
		}
		out := &frames{ch: make(chan struct{}, 1)}
		ready := make(chan struct{})
		m := &mcpOverACP{router: mcpacp.NewRouter(nil), ready: ready}
		in, client := io.Pipe()
		defer client.Close()
		m.router.SetConn(acpsdk.NewConnection(nil, writerFunc(out.write), in))
		close(ready)
		tr, err := (&frontEnd{a: &Agent{conn: &conn{mcp: m}}}).Dial(t.Context(), "sess_1", specs[0])
		if err != nil || tr == nil {
			t.Fatalf("dial: %v %v", tr, err)
		}
		type result struct {
			c   mcp.Connection
			err error
		}
		done := make(chan result, 1)
		go func() {
			c, err := tr.Connect(t.Context())
			done <- result{c, err}
		}()
		req := out.wait(t, 1)
		var head struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(req, &head); err != nil || head.Method != "mcp/connect" || head.ID == nil {
			t.Fatalf("first frame %s: want an mcp/connect request", req)
		}
		if !strings.Contains(string(req), tc.want) || strings.Contains(string(req), tc.not) {
			t.Errorf("mcp/connect for %s = %s, want %s and no %s", tc.entry, req, tc.want, tc.not)
		}
		if _, err := io.WriteString(client, `{"jsonrpc":"2.0","id":`+string(head.ID)+`,"result":{"connectionId":"c1"}}`+"\n"); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := m.router.Lookup("c1"); got == nil {
			t.Fatal("connection c1 not open after mcp/connect")
		}
		closed := make(chan error, 1)
		go func() { closed <- r.c.Close() }()
		disc := out.wait(t, 2)
		if !strings.Contains(string(disc), `"method":"mcp/disconnect"`) || !strings.Contains(string(disc), `"connectionId":"c1"`) {
			t.Errorf("on close: %s, want mcp/disconnect of c1", disc)
		}
		_ = json.Unmarshal(disc, &head)
		_, _ = io.WriteString(client, `{"jsonrpc":"2.0","id":`+string(head.ID)+`,"result":{}}`+"\n")
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		m.disconnects.Wait()
		if m.router.Lookup("c1") != nil {
			t.Error("connection c1 still open after Close")
		}
	}
}

func TestMCPOverACP_ParseEntry(t *testing.T) {
	for _, tc := range []struct {
		entry, id, key, err string
	}{
		{`{"type":"acp","name":"a","id":"x"}`, "x", "id", ""},
		{`{"type":"acp","name":"a","serverId":"x"}`, "x", "serverId", ""},
		{`{"type":"acp","name":"a","id":"x","serverId":"x"}`, "x", "id", ""},
		{`{"type":"acp","name":"a"}`, "", "", `mcpServers[0] ("a") id: must be a non-empty string`},
		{`{"type":"acp","name":"a","id":" "}`, "", "", `mcpServers[0] ("a") id: must be a non-empty string`},
		{`{"type":"acp","name":"a","id":3}`, "", "", `mcpServers[0] ("a") id: must be a string`},
		{`{"type":"acp","name":"a","serverId":false}`, "", "", `mcpServers[0] ("a") serverId: must be a string`},
		{`{"type":"acp","name":"a","id":"x","serverId":"y"}`, "", "", `mcpServers[0] ("a") id: differs from serverId "y"`},
		{`{"type":"acp","name":"acp","id":"x"}`, "", "", `"acp" is reserved`},
	} {
		specs, err := ParseMCPServers(json.RawMessage("[" + tc.entry + "]"))
		if tc.err != "" {
			var me *MCPServersError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.entry, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.entry, err)
			continue
		}
		if s := specs[0]; s.Transport != bridge.TransportACP || s.ServerID != tc.id || s.ServerIDKey != tc.key || s.Validate() != nil {
			t.Errorf("%s: spec = %+v", tc.entry, s)
		}
	}
}

// writerFunc is an io.Writer of whole frames.
type writerFunc func([]byte) error

func (f writerFunc) Write(p []byte) (int, error) {
	if err := f(p); err != nil {
		return 0, err
	}
	return len(p), nil
}
