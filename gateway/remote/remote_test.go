package remote

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// wsServer runs a gateway Server (direct provider) on 127.0.0.1.
func wsServer(t *testing.T, opts *ServerOptions) (*Server, string) {
	t.Helper()
	srv := NewServer(runner.NewLocal(nil), opts)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	return srv, "ws" + strings.TrimPrefix(ts.URL, "http")
}

func dialRemote(t *testing.T, url, token string) *Client {
	t.Helper()
	r, err := Dial(t.Context(), &ClientOptions{URL: url, Token: token, Info: PeerInfo{Name: "test", Version: "1"}, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func collectEvents() (*[]gateway.Event, func(gateway.Event)) {
	var mu sync.Mutex
	var evs []gateway.Event
	return &evs, func(e gateway.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }
}

func TestRemote_ToolsRunInTheTranslator(t *testing.T) {
	_, url := wsServer(t, &ServerOptions{Token: "s3cret"})
	r := dialRemote(t, url, "s3cret")
	var ranHere bool
	tool := &gateway.Tool{Name: "mcp__local__echo", Label: "local/echo", Annotations: gateway.Annotations{ReadOnlyHint: true}, Kind: gateway.ToolKindSearch,
		Execute: func(_ context.Context, _ string, args map[string]any, onUpdate func(gateway.ToolUpdate)) (gateway.Result, error) {
			ranHere = true
			onUpdate(gateway.ToolUpdate{Progress: 1, Total: 2})
			return gateway.Result{Content: []gateway.Content{gateway.TextContent("Echo: " + args["message"].(string))}}, nil
		}}
	if err := r.SetExtraTools(t.Context(), "acp:s1", []*gateway.Tool{tool}); err != nil {
		t.Fatal(err)
	}
	evs, emit := collectEvents()
	stop, err := r.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:s1", RunID: "r1", Message: []gateway.Content{gateway.TextContent(`/call mcp__local__echo {"message":"over ws"}`)}}, emit)
	if err != nil || stop != gateway.StopEndTurn || !ranHere {
		t.Fatalf("Send = %s, %v, ran %v", stop, err, ranHere)
	}
	var kinds []string
	var end *gateway.ToolCallEvent
	for _, e := range *evs {
		kinds = append(kinds, e.Kind.String())
		if e.Kind == gateway.EventToolEnd {
			end = e.Call
		}
	}
	// The tool's kind crosses the wire (WireTool.Kind).
	if end == nil || end.Title != "local/echo" || end.Kind != gateway.ToolKindSearch || end.Result.Content[0].Text != "Echo: over ws" {
		t.Errorf("events %v, end %+v", kinds, end)
	}
	// The translator keeps the history.
	if h := r.opts.History.View(context.Background(), "acp:s1").Messages; len(h) != 3 || h[2].Result == nil {
		t.Errorf("history = %+v", h)
	}
	if ms := r.Models(); len(ms) != 1 || ms[0].ID != runner.DirectModelID {
		t.Errorf("models = %+v", ms)
	}
}

func TestServer_RefusesWrongTokenOriginAndProtocol(t *testing.T) {
	_, url := wsServer(t, &ServerOptions{Token: "right", AllowedOrigins: []string{"https://ide.example"}})
	if _, err := Dial(t.Context(), &ClientOptions{URL: url, Token: "wrong"}); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("wrong token: %v", err)
	}
	if _, err := Dial(t.Context(), &ClientOptions{URL: url}); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("missing token: %v", err)
	}
	_, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Origin": {"https://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("bad origin: %v %v", err, resp)
	}
	ws, _, err := websocket.DefaultDialer.Dial(url, http.Header{"Origin": {"https://ide.example"}})
	if err != nil {
		t.Fatalf("allowed origin: %v", err)
	}
	defer ws.Close()
	params, _ := json.Marshal(ConnectParams{Protocol: 99, Token: "right"})
	ws.WriteJSON(rawMsg{JSONRPC: "2.0", ID: json.RawMessage("1"), Method: "connect", Params: params})
	var res rawMsg
	if err := ws.ReadJSON(&res); err != nil || res.Result != nil || res.Error == nil || res.Error.Code != CodeBadRequest ||
		!strings.Contains(res.Error.Message, "protocol version 99 is not supported: this gateway speaks version 2") {
		t.Errorf("protocol mismatch: %+v %v", res, err)
	}
	// The error response is followed by a close frame, not a silent drop.
	if err := ws.ReadJSON(&res); !websocket.IsCloseError(err, websocket.CloseProtocolError) {
		t.Errorf("after a protocol mismatch: %v, want close 1002", err)
	}
}

// rawMsg is a JSON-RPC 2.0 message as a raw WebSocket client sees it.
type rawMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// A session key is taken by the fleet's rule on one gateway too: another
// connection may take it while it is idle, each turn runs with the tools of
// the connection that sent it, the previous owner takes it back by the same
// rule, and its clearExtraTools leaves the new owner's tools alone; a
// prompt while a turn of the key runs is busy, naming the key and the
// gateway, and the running turn keeps its tools.
func TestServer_SessionKeysAreTakenByTheFleetsRule(t *testing.T) {
	srv, url := wsServer(t, nil)
	a, b := dialRemote(t, url, ""), dialRemote(t, url, "")
	started, release := make(chan struct{}, 1), make(chan struct{})
	tools := func(name string) []*gateway.Tool {
		return []*gateway.Tool{
			{Name: "t", Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
				return gateway.Result{Content: []gateway.Content{gateway.TextContent(name)}}, nil
			}},
			{Name: "hold", Execute: func(ctx context.Context, _ string, _ map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
				started <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return gateway.Result{Content: []gateway.Content{gateway.TextContent(name)}}, nil
			}},
		}
	}
	call := func(c *Client, key, tool string) (string, error) {
		var mu sync.Mutex
		var got string
		_, err := c.Send(t.Context(), gateway.SendRequest{SessionKey: key, Message: []gateway.Content{gateway.TextContent("/call " + tool)}}, func(e gateway.Event) {
			if e.Kind == gateway.EventToolEnd && e.Call != nil && len(e.Call.Result.Content) > 0 {
				mu.Lock()
				got = e.Call.Result.Content[0].Text
				mu.Unlock()
			}
		})
		mu.Lock()
		defer mu.Unlock()
		return got, err
	}
	if err := a.SetExtraTools(t.Context(), "acp:a", tools("a")); err != nil {
		t.Fatal(err)
	}
	if err := b.SetExtraTools(t.Context(), "acp:a", tools("b")); err != nil {
		t.Fatalf("b takes the idle key: %v", err)
	}
	if got, err := call(b, "acp:a", "t"); err != nil || got != "b" {
		t.Fatalf("b's turn ran %q's tool (%v), want b's", got, err)
	}
	if got, err := call(a, "acp:a", "t"); err != nil || got != "a" {
		t.Fatalf("a's turn after b's ran %q's tool (%v), want a's", got, err)
	}
	if got, err := call(b, "acp:a", "t"); err != nil || got != "b" {
		t.Fatalf("b's turn after a's ran %q's tool (%v), want b's", got, err)
	}
	// a, no longer the owner, clears its own tools only.
	if err := a.ClearExtraTools(t.Context(), "acp:a"); err != nil {
		t.Fatal(err)
	}
	if tool := srv.local.Registry().Lookup("acp:a", "t"); tool == nil {
		t.Fatal("the previous owner's clearExtraTools removed the owner's tools")
	}
	if got, err := call(b, "acp:a", "t"); err != nil || got != "b" {
		t.Fatalf("b's turn after a's clear ran %q's tool (%v), want b's", got, err)
	}

	// While b's turn runs, a may register tools (they wait for its own
	// turn), and its prompt is busy.
	held := make(chan error, 1)
	go func() {
		_, err := call(b, "acp:a", "hold")
		held <- err
	}()
	<-started
	if err := a.SetExtraTools(t.Context(), "acp:a", tools("a")); err != nil {
		t.Fatalf("a's setExtraTools while b's turn runs: %v", err)
	}
	_, err := call(a, "acp:a", "t")
	var re *RemoteError
	want := "session acp:a is running a turn on this gateway: wait for it to end (or cancel it there), then prompt again"
	if !errors.As(err, &re) || re.Code != CodeBusy || re.Message != want {
		t.Fatalf("a's prompt while b's turn runs: %v; want busy %q", err, want)
	}
	if tool := srv.local.Registry().Lookup("acp:a", "t"); tool == nil {
		t.Fatal("b's running turn lost its tools")
	} else if res, err := tool.Execute(t.Context(), "probe", map[string]any{}, nil); err != nil || res.Content[0].Text != "b" {
		t.Fatalf("b's running turn's tool answers %+v, %v; want b's", res, err)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if got, err := call(a, "acp:a", "t"); err != nil || got != "a" {
		t.Fatalf("a's turn after b's ran %q's tool (%v), want a's", got, err)
	}
	// b's other key sees none of a's tools.
	evs, emit := collectEvents()
	if _, err := b.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:b", RunID: "y", Message: []gateway.Content{gateway.TextContent("/tools")}}, emit); err != nil {
		t.Fatal(err)
	}
	if text := (*evs)[0].Text; !strings.Contains(text, "no tools") {
		t.Errorf("b sees a's tools: %q", text)
	}
}

func TestServer_TranslatorLostMidToolFailsTheCallOnly(t *testing.T) {
	srv, url := wsServer(t, nil)
	a := dialRemote(t, url, "")
	done := blockedTurn(context.Background(), t, a, "acp:a")
	a.Close() // the translator goes away mid-tool
	select {
	case err := <-done:
		if err == nil {
			t.Error("the turn of a closed translator succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not end")
	}
	// The gateway dropped the connection's tools and still serves others.
	testutil.Eventually(10*time.Second, func() bool { return len(srv.local.Registry().Tools("acp:a")) == 0 })
	if n := len(srv.local.Registry().Tools("acp:a")); n != 0 {
		t.Errorf("%d tools of the lost translator remain", n)
	}
	b := dialRemote(t, url, "")
	if stop, err := b.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:b", RunID: "r", Message: []gateway.Content{gateway.TextContent("/help")}}, func(gateway.Event) {}); err != nil || stop != gateway.StopEndTurn {
		t.Errorf("another translator after the loss: %s %v", stop, err)
	}
}

func TestRemote_ReconnectsAndRegistersToolsAgain(t *testing.T) {
	srv := NewServer(runner.NewLocal(nil), nil)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	url := "ws" + strings.TrimPrefix(ts.URL, "http")
	r := dialRemote(t, url, "")
	tool := &gateway.Tool{Name: "t", Annotations: gateway.Annotations{ReadOnlyHint: true}, Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
		return gateway.Result{Content: []gateway.Content{gateway.TextContent("ok")}}, nil
	}}
	if err := r.SetExtraTools(t.Context(), "acp:s", []*gateway.Tool{tool}); err != nil {
		t.Fatal(err)
	}
	// Drop every connection from the server side.
	srv.mu.Lock()
	for c := range srv.conns {
		c.p.close(websocket.CloseGoingAway, "test drop")
	}
	srv.mu.Unlock()
	var err error
	if !testutil.Eventually(10*time.Second, func() bool {
		_, err = r.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:s", RunID: "r" + time.Now().String(), Message: []gateway.Content{gateway.TextContent("/call t")}}, func(gateway.Event) {})
		return err == nil && len(srv.local.Registry().Tools("acp:s")) == 1
	}) {
		t.Fatalf("not back after a drop: %v", err)
	}
}

// A connection that drops during a turn ends the turn with a
// *gateway.TurnLostError naming the gateway's URL; the words that tell the
// user what to do are the front ends'.
func TestClient_DropDuringTheTurnIsTurnLost(t *testing.T) {
	srv, url := wsServer(t, nil)
	r := dialRemote(t, url, "")
	done := blockedTurn(t.Context(), t, r, "acp:s")
	srv.mu.Lock()
	for c := range srv.conns {
		c.p.close(websocket.CloseGoingAway, "test drop")
	}
	srv.mu.Unlock()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not end")
	}
	var lost *gateway.TurnLostError
	if !errors.As(err, &lost) || lost.URL != url || !errors.Is(err, errConnClosed) {
		t.Fatalf("err = %v (%T), want a *gateway.TurnLostError naming %s", err, err, url)
	}
	if want := "the connection to the gateway " + url + " was lost during the turn ("; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %q, want it to start with %q", err, want)
	}
}

// A provider's failure reaches the translator with its hint, the words
// its user is shown.
func TestServer_ProviderErrorReachesTheTranslatorWithItsHint(t *testing.T) {
	failing := failingProvider{err: &provider.Error{Provider: "anthropic", Status: 401, Hint: "set ANTHROPIC_API_KEY to a valid API key"}}
	srv := NewServer(runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "f", Provider: failing}}}), nil)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	r := dialRemote(t, "ws"+strings.TrimPrefix(ts.URL, "http"), "")
	_, err := r.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:s", RunID: "r", Model: "f", Message: []gateway.Content{gateway.TextContent("hi")}}, func(gateway.Event) {})
	if want := "anthropic: HTTP 401 Unauthorized (set ANTHROPIC_API_KEY to a valid API key)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to say %q", err, want)
	}
}

// failingProvider is a model whose every request fails with err.
type failingProvider struct{ err error }

func (failingProvider) Name() string { return "failing" }
func (p failingProvider) Complete(context.Context, *gateway.Request, func(gateway.Event)) (*gateway.Response, error) {
	return nil, p.err
}

// TestServer_SmallFramesUntilAuthenticated: before connect succeeds the
// gateway reads at most MaxPreAuthFrameBytes of a frame (the connection is
// closed with 1009, message too big); after it, frames up to MaxFrameBytes
// are read.
func TestServer_SmallFramesUntilAuthenticated(t *testing.T) {
	_, url := wsServer(t, &ServerOptions{Token: "s3cret"})
	big := func(n int) rawMsg {
		params, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", n)})
		return rawMsg{JSONRPC: "2.0", ID: json.RawMessage(`"big"`), Method: "tools.set", Params: params}
	}
	read := func(ws *websocket.Conn) (rawMsg, error) {
		_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		var f rawMsg
		err := ws.ReadJSON(&f)
		return f, err
	}

	// Unauthenticated: a 1 MiB frame closes the connection.
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// The gateway may close while the frame is still being written
	// (connection reset): it stops reading at the limit.
	if err := ws.WriteJSON(big(1 << 20)); err == nil {
		if f, err := read(ws); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Fatalf("a 1 MiB frame before connect: got frame %+v, err %v; want close 1009", f, err)
		}
	}

	// Authenticated: the same frame is read and answered.
	ws2, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	cp, _ := json.Marshal(ConnectParams{Protocol: ProtocolVersion, Client: PeerInfo{Name: "raw", Version: "1"}, Token: "s3cret"})
	if err := ws2.WriteJSON(rawMsg{JSONRPC: "2.0", ID: json.RawMessage(`"c"`), Method: "connect", Params: cp}); err != nil {
		t.Fatal(err)
	}
	if f, err := read(ws2); err != nil || f.Result == nil {
		t.Fatalf("connect: %+v %v", f, err)
	}
	if err := ws2.WriteJSON(big(1 << 20)); err != nil {
		t.Fatal(err)
	}
	if f, err := read(ws2); err != nil || string(f.ID) != `"big"` {
		t.Fatalf("a 1 MiB frame after connect: got %+v, %v; want its response", f, err)
	}
}

// TestRemote_AbortCancelsTheToolInTheTranslator: aborting a turn while the
// gateway waits on tools.invoke tells the translator ($/cancelRequest), whose
// tool sees its context end; the connection stays up.
func TestRemote_AbortCancelsTheToolInTheTranslator(t *testing.T) {
	_, url := wsServer(t, nil)
	r := dialRemote(t, url, "")
	started, cancelled := make(chan struct{}), make(chan error, 1)
	block := &gateway.Tool{Name: "block", Annotations: gateway.Annotations{ReadOnlyHint: true}, Execute: func(ctx context.Context, _ string, _ map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
		close(started)
		<-ctx.Done()
		cancelled <- ctx.Err()
		return gateway.Result{}, ctx.Err()
	}}
	if err := r.SetExtraTools(t.Context(), "acp:c", []*gateway.Tool{block}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan gateway.StopReason, 1)
	go func() {
		stop, _ := r.Send(ctx, gateway.SendRequest{SessionKey: "acp:c", RunID: "r", Message: []gateway.Content{gateway.TextContent("/call block")}}, func(gateway.Event) {})
		done <- stop
	}()
	<-started
	cancel()
	select {
	case err := <-cancelled:
		if err == nil {
			t.Error("the tool's context ended without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool in the translator was not cancelled")
	}
	if stop := <-done; stop != gateway.StopCancelled {
		t.Errorf("stop = %s, want cancelled", stop)
	}
	if stop, err := r.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:c", RunID: "r2", Message: []gateway.Content{gateway.TextContent("/help")}}, func(gateway.Event) {}); err != nil || stop != gateway.StopEndTurn {
		t.Errorf("the next turn: %s %v", stop, err)
	}
}

// TestPeer_SlowPeerIsDisconnected: a peer whose write queue is full is
// disconnected with 1008 and "too slow" instead of blocking the sender.
func TestPeer_SlowPeerIsDisconnected(t *testing.T) {
	conns := make(chan *websocket.Conn, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err == nil {
			conns <- ws
		}
	}))
	defer ts.Close()
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p := newPeer(t.Context(), <-conns, slog.New(slog.DiscardHandler))
	defer p.ws.Close()
	s := (*peerStream)(p) // the writer is not started: nothing drains the queue
	for i := range WriteQueueFrames {
		if err := s.WriteObject(map[string]int{"n": i}); err != nil {
			t.Fatalf("frame %d of a queue of %d: %v", i, WriteQueueFrames, err)
		}
	}
	if err := s.WriteObject(map[string]int{"n": WriteQueueFrames}); err == nil || !strings.Contains(err.Error(), "too slow") {
		t.Fatalf("a frame beyond the queue: %v, want too slow", err)
	}
	_ = client.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, _, err := client.ReadMessage(); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
		t.Errorf("the slow peer read %v, want close 1008", err)
	}
}

// TestServer_ClosesOnAFrameThatIsNoJSONRPC: a text frame that holds no
// JSON-RPC message ends the connection with 1003 and the reason.
func TestServer_ClosesOnAFrameThatIsNoJSONRPC(t *testing.T) {
	_, url := wsServer(t, nil)
	for _, frame := range []string{`hello`, `{"jsonrpc":"2.0","id":1}`} {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
			t.Fatal(err)
		}
		_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, _, err = ws.ReadMessage()
		if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.CloseUnsupportedData || !strings.Contains(ce.Text, "not a JSON-RPC 2.0 message") {
			t.Errorf("after %s: %v, want close 1003 naming the rule", frame, err)
		}
		ws.Close()
	}
}

// blockedTurn starts a turn of session key on c that calls a tool blocking
// until its context ends, and returns once the tool runs; the channel gets
// the turn's error. ctx is the turn's.
func blockedTurn(ctx context.Context, t *testing.T, c *Client, key string) <-chan error {
	t.Helper()
	started := make(chan struct{})
	block := &gateway.Tool{Name: "block", Annotations: gateway.Annotations{ReadOnlyHint: true}, Execute: func(ctx context.Context, _ string, _ map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
		close(started)
		<-ctx.Done()
		return gateway.Result{}, ctx.Err()
	}}
	if err := c.SetExtraTools(t.Context(), key, []*gateway.Tool{block}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Send(ctx, gateway.SendRequest{SessionKey: key, RunID: "r", Message: []gateway.Content{gateway.TextContent("/call block")}}, func(gateway.Event) {})
		done <- err
	}()
	<-started
	return done
}

// thinkingProvider is a Thinker that records each request's Thinking.
type thinkingProvider struct{ got chan *bool }

func (thinkingProvider) Name() string          { return "thinking" }
func (thinkingProvider) ThinksByDefault() bool { return false }
func (p thinkingProvider) Complete(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
	p.got <- req.Thinking
	return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("ok")}}, StopReason: gateway.StopEndTurn}, nil
}

// A translator sees which models can think, and a session's toggles reach
// the gateway's model requests.
func TestServer_TogglesCrossTheWire(t *testing.T) {
	p := thinkingProvider{got: make(chan *bool, 1)}
	srv := NewServer(runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "t", Provider: p}}}), nil)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	r := dialRemote(t, "ws"+strings.TrimPrefix(ts.URL, "http"), "")
	if ms := r.Models(); len(ms) == 0 || ms[0].ID != "t" || !ms[0].Thinking || ms[0].ThinkingOn {
		t.Errorf("models = %+v, want t, able to think, off by default", ms)
	}
	on := true
	if _, err := r.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:s", RunID: "r", Model: "t", Toggles: gateway.Toggles{Thinking: &on},
		Message: []gateway.Content{gateway.TextContent("hi")}}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	if th := <-p.got; th == nil || !*th {
		t.Errorf("the gateway's request has thinking %v, want on", th)
	}
}
