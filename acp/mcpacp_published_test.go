package acp

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
)

// newSessionRaw opens a session whose mcpServers are raw entries (the
// published binding's declarations, which acp-go-sdk v0.13's types cannot
// write), sent on the host's own connection, and waits for its commands.
func (h *harness) newSessionRaw(host *acpclient.MCPHost, entries ...json.RawMessage) string {
	h.t.Helper()
	if entries == nil {
		entries = []json.RawMessage{}
	}
	from := len(h.client.Updates())
	ctx, cancel := context.WithTimeout(h.t.Context(), 30*time.Second)
	defer cancel()
	res, err := acpsdk.SendRequest[acpsdk.NewSessionResponse](host.Conn(), ctx, acpsdk.AgentMethodSessionNew, map[string]any{"cwd": h.t.TempDir(), "mcpServers": entries})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, _, err := h.client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		return n.SessionId == res.SessionId && n.Update.AvailableCommandsUpdate != nil
	}); err != nil {
		h.t.Fatal(err)
	}
	return string(res.SessionId)
}

// TestMCPOverACP_PublishedBinding: an entry with serverId only is served
// over the published binding: no mcp/connect, each MCP request an
// mcp/message request by serverId (server/discover first, no initialize),
// the server's progress back in mcp/message notifications by requestId,
// and closing the session cancels the request still under way
// (subscriptions/listen) with $/cancel_request.
func TestMCPOverACP_PublishedBinding(t *testing.T) {
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
	host := &acpclient.MCPHost{Published: map[string]*mcp.Server{"pub-1": hostedServerShowing(progressShown)}}
	h, _, init := startHost(t, host)
	close(shown)
	if !init.AgentCapabilities.McpCapabilities.Acp {
		t.Errorf("initialize: mcpCapabilities.acp = false, want true")
	}
	sid := h.newSessionRaw(host, host.PublishedEntry("hosted", "pub-1"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	_, out := h.prompt(ctx, sid, "/servers")
	if got := joinText(out); !strings.Contains(got, "hosted: connected (acp, 2 tools") {
		t.Errorf("/servers = %q, want hosted connected over acp with 2 tools", got)
	}
	_, out = h.prompt(ctx, sid, `/call mcp__hosted__echo {"message":"published"}`)
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted || end.Content[0].Content.Content.Text.Text != "Echo: published" {
		t.Fatalf("echo over the published binding = %+v\n%s", end, joinText(out))
	}
	_, out = h.prompt(ctx, sid, `/call mcp__hosted__progress {}`)
	if raw, _ := json.Marshal(out); !strings.Contains(string(raw), "half way there") {
		t.Errorf("progress over the published binding not shown: %s", raw)
	}
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted {
		t.Fatalf("progress call = %+v", end)
	}
	ev := strings.Join(host.Events(), "\n")
	if !strings.HasPrefix(ev, "message pub-1 server/discover\n") || strings.Contains(ev, "initialize") || strings.Contains(ev, "connect") {
		t.Errorf("hosted server saw:\n%s\nwant server/discover first, no initialize, no mcp/connect", ev)
	}
	for _, want := range []string{"message pub-1 tools/list", "message pub-1 tools/call"} {
		if !strings.Contains(ev, want) {
			t.Errorf("hosted server saw:\n%s\nwant %q", ev, want)
		}
	}

	if _, err := h.conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ev, "message pub-1 subscriptions/listen") {
		if err := host.WaitEvent(ctx, "cancelled pub-1 subscriptions/listen"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMCPOverACP_PublishedUnknownServerFailsThatServerOnly: a serverId the
// client does not provide (-33001) fails that server, named with the rule,
// and the session and its other servers go on.
func TestMCPOverACP_PublishedUnknownServerFailsThatServerOnly(t *testing.T) {
	host := &acpclient.MCPHost{Published: map[string]*mcp.Server{"pub-1": hostedServer()}}
	h, _, _ := startHost(t, host)
	sid := h.newSessionRaw(host, host.PublishedEntry("ghost", "no-such-id"), host.PublishedEntry("hosted", "pub-1"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, out := h.prompt(ctx, sid, "/servers")
	got := joinText(out)
	if !strings.Contains(got, "hosted: connected (acp") || !strings.Contains(got, `ghost: failed (acp)`) ||
		!strings.Contains(got, `the client has no MCP server with serverId "no-such-id"`) {
		t.Errorf("/servers = %q, want ghost failed naming its serverId and hosted connected", got)
	}
	if !strings.Contains(got, "server/discover failed") || !strings.Contains(got, "no initialize to fall back to") {
		t.Errorf("/servers = %q: a refused initialize must say why server/discover failed", got)
	}
}

// TestMCPOverACP_PublishedWire pins the wire on a raw pipe: the request's
// params are {serverId, requestId, method, params} with MCP 2026-07-28's
// _meta, requestIds are distinct, a notification for the request under way
// reaches the MCP client before the result, an inner MCP error is the MCP
// client's error, and cancelling the MCP call sends $/cancel_request for
// the outer request.
func TestMCPOverACP_PublishedWire(t *testing.T) {
	specs, err := ParseMCPServers(json.RawMessage(`[{"type":"acp","name":"pub","serverId":"s1"}]`))
	if err != nil {
		t.Fatal(err)
	}
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	t.Cleanup(func() { clientOut.Close(); agentOut.Close() })
	ready := make(chan struct{})
	m := &mcpOverACP{router: mcpacp.NewRouter(nil), ready: ready}
	a := &Agent{conn: &conn{mcp: m}}
	rpc := acpsdk.NewConnection(func(ctx context.Context, method string, params json.RawMessage) (any, *acpsdk.RequestError) {
		res, err := a.mcpMessage(ctx, params)
		if err != nil {
			return nil, toRequestErrorForTest(err)
		}
		return res, nil
	}, agentOut, agentIn)
	m.router.SetConn(rpc)
	close(ready)

	type seen struct {
		p      mcpMessage
		cancel bool
	}
	got := make(chan seen, 16)
	var client *acpsdk.Connection
	client = acpsdk.NewConnection(func(ctx context.Context, method string, raw json.RawMessage) (any, *acpsdk.RequestError) {
		var p mcpMessage
		if err := json.Unmarshal(raw, &p); err != nil || method != "mcp/message" {
			return nil, acpsdk.NewInvalidParams(nil)
		}
		got <- seen{p: p}
		switch p.Method {
		case "server/discover":
			return map[string]any{"result": map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}},
				"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "scripted", "version": "1"}}, "resultType": "complete"}}, nil
		case "tools/call":
			var call struct {
				Name string `json:"name"`
				Meta struct {
					Token any `json:"progressToken"`
				} `json:"_meta"`
			}
			_ = json.Unmarshal(p.Params, &call)
			switch call.Name {
			case "fails":
				return map[string]any{"error": map[string]any{"code": -32602, "message": "Unknown tool: fails"}}, nil
			case "hangs":
				<-ctx.Done()
				got <- seen{p: p, cancel: true}
				return nil, &acpsdk.RequestError{Code: -32800, Message: "Request cancelled"}
			}
			if err := client.SendNotification(ctx, "mcp/message", mcpMessage{ServerID: p.ServerID, RequestID: p.RequestID, Method: "notifications/progress",
				Params: json.RawMessage(`{"progressToken":` + mustJSON(call.Meta.Token) + `,"progress":1,"message":"working"}`)}); err != nil {
				return nil, acpsdk.NewInternalError(nil)
			}
			return map[string]any{"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}, "resultType": "complete"}}, nil
		}
		return map[string]any{"error": map[string]any{"code": -32601, "message": "Method not found"}}, nil
	}, clientOut, clientIn)
	_ = client

	tr, err := (&frontEnd{a: a}).Dial(t.Context(), "sess_1", specs[0])
	if err != nil {
		t.Fatal(err)
	}
	progress := make(chan string, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Message
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	first := <-got
	if first.p.ServerID != "s1" || first.p.Method != "server/discover" || first.p.RequestID == "" {
		t.Fatalf("first mcp/message = %+v, want server/discover to s1 with a requestId", first.p)
	}
	var meta struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(first.p.Params, &meta)
	if string(meta.Meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` || meta.Meta["io.modelcontextprotocol/clientCapabilities"] == nil {
		t.Errorf("server/discover params = %s, want MCP 2026-07-28's _meta", first.p.Params)
	}

	params := &mcp.CallToolParams{Name: "work", Arguments: map[string]any{}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != "ok" {
		t.Errorf("tools/call = %q", text)
	}
	select {
	case msg := <-progress:
		if msg != "working" {
			t.Errorf("progress = %q", msg)
		}
	case <-ctx.Done():
		t.Fatal("the progress notification never reached the MCP client")
	}
	call := <-got
	if call.p.RequestID == first.p.RequestID {
		t.Errorf("requestId %q used twice", call.p.RequestID)
	}

	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fails", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "Unknown tool: fails") {
		t.Errorf("inner MCP error: err = %v, want the server's error", err)
	}
	<-got

	hctx, hcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(hctx, &mcp.CallToolParams{Name: "hangs", Arguments: map[string]any{}})
		done <- err
	}()
	<-got // the hanging call reached the client
	hcancel()
	if err := <-done; err == nil {
		t.Error("cancelled call returned no error")
	}
	select {
	case s := <-got:
		if !s.cancel {
			t.Errorf("after cancel: %+v, want the outer request cancelled", s)
		}
	case <-ctx.Done():
		t.Fatal("the outer mcp/message was never cancelled ($/cancel_request)")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// toRequestErrorForTest maps a dispatch error as conn.dispatch does.
func toRequestErrorForTest(err error) *acpsdk.RequestError {
	if re, ok := toRequestError(err).(*acpsdk.RequestError); ok {
		return re
	}
	return acpsdk.NewInternalError(map[string]any{"error": err.Error()})
}
