package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	sse "github.com/tmaxmax/go-sse"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// testGateway is a Handler over one session core (direct mode, in memory)
// per tenant, on a loopback test server. It is the Handler's Observer:
// closed is notified each time a connection has ended.
type testGateway struct {
	t      *testing.T
	h      *Handler
	srv    *httptest.Server
	url    string
	closed testutil.Signal
	mu     sync.Mutex
	cores  map[string]*session.Core
}

func (g *testGateway) Opened(string)             {}
func (g *testGateway) Closed(string, string)     { g.closed.Notify() }
func (g *testGateway) Refused(int)               {}
func (g *testGateway) Message(string, bool, int) {}

// waitEnded waits until cond holds, checking it whenever a connection has
// ended (Observer.Closed: its agent has ended its sessions and it has left
// the Handler), within a generous deadline.
func (g *testGateway) waitEnded(t *testing.T, what string, cond func() bool) {
	t.Helper()
	g.closed.WaitFor(t, 30*time.Second, cond, "timed out waiting for %s", what)
}

func newTestGateway(t *testing.T, opts *Options) *testGateway {
	t.Helper()
	g := &testGateway{t: t, cores: map[string]*session.Core{}}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Observer = g
	g.h = NewHandler(func(tenant string) (Conn, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		core := g.cores[tenant]
		if core == nil {
			core = session.NewCore(&session.CoreOptions{Name: "test-gateway"})
			g.cores[tenant] = core
		}
		return acp.New(core, &acp.Options{Name: "test-gateway"}), nil
	}, &o)
	g.srv = httptest.NewServer(g.h)
	g.url = g.srv.URL + "/acp"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		g.h.Shutdown(ctx)
		g.srv.Close()
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, c := range g.cores {
			c.Shutdown()
		}
	})
	return g
}

// request is one HTTP request of the test client.
func (g *testGateway) request(method string, body any, header map[string]string) *http.Response {
	g.t.Helper()
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				g.t.Fatal(err)
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(g.t.Context(), method, g.url, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	return resp
}

// status sends a request and returns its status and body.
func (g *testGateway) status(method string, body any, header map[string]string) (int, string) {
	g.t.Helper()
	resp := g.request(method, body, header)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func rpc(id any, method string, params any) map[string]any {
	m := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id != nil {
		m["id"] = id
	}
	return m
}

var initParams = map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}

// httpClient is a Streamable HTTP client of one connection, reading its
// streams into one channel of messages.
type httpClient struct {
	g    *testGateway
	id   string
	auth map[string]string // headers sent with every request
	msgs chan map[string]any
}

func (g *testGateway) connect(header map[string]string) *httpClient {
	g.t.Helper()
	c := g.connectOnly(header)
	c.stream("")
	return c
}

// connectOnly initializes a connection without opening its stream.
func (g *testGateway) connectOnly(header map[string]string) *httpClient {
	g.t.Helper()
	resp := g.request("POST", rpc(0, "initialize", initParams), header)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		g.t.Fatalf("initialize: %d %s", resp.StatusCode, b)
	}
	c := &httpClient{g: g, id: resp.Header.Get(HeaderConnectionID), auth: header, msgs: make(chan map[string]any, 256)}
	if c.id == "" {
		g.t.Fatal("initialize: no Acp-Connection-Id")
	}
	return c
}

func (c *httpClient) headers(sid string) map[string]string {
	h := map[string]string{HeaderConnectionID: c.id}
	for k, v := range c.auth {
		if k == "Authorization" {
			h[k] = v
		}
	}
	if sid != "" {
		h[HeaderSessionID] = sid
	}
	return h
}

// stream opens the connection's stream (sid "") or a session's.
func (c *httpClient) stream(sid string) {
	h := c.headers(sid)
	h["Accept"] = "text/event-stream"
	resp := c.g.request("GET", nil, h)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.g.t.Fatalf("GET stream %q: %d %s", sid, resp.StatusCode, b)
	}
	go func() {
		defer resp.Body.Close()
		for ev, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: 16 << 20}) {
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal([]byte(ev.Data), &m) == nil {
				c.msgs <- m
			}
		}
	}()
}

// post sends one message and returns the status.
func (c *httpClient) post(msg map[string]any, sid string) int {
	code, body := c.g.status("POST", msg, c.headers(sid))
	if code != http.StatusAccepted {
		c.g.t.Logf("POST %v: %d %s", msg["method"], code, body)
	}
	return code
}

// wait returns the first message that match takes, within a generous
// deadline.
func (c *httpClient) wait(what string, match func(map[string]any) bool) map[string]any {
	c.g.t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case m := <-c.msgs:
			if match(m) {
				return m
			}
		case <-timer.C:
			c.g.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func response(id float64) func(map[string]any) bool {
	return func(m map[string]any) bool {
		v, ok := m["id"].(float64)
		_, isReq := m["method"]
		return ok && v == id && !isReq
	}
}

func TestHandler_HTTPSessionFlow(t *testing.T) {
	g := newTestGateway(t, &Options{Replica: "gw one"})
	resp := g.request("POST", rpc(0, "initialize", initParams), nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(HeaderConnectionID) == "" || !strings.Contains(string(b), `"protocolVersion"`) {
		t.Fatalf("initialize: %d %q %s", resp.StatusCode, resp.Header.Get(HeaderConnectionID), b)
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == AffinityCookie {
			cookie = ck
		}
	}
	if cookie == nil || cookie.Value != "gw_one" || !cookie.HttpOnly {
		t.Errorf("affinity cookie = %+v, want %s=gw_one, HttpOnly", cookie, AffinityCookie)
	}
	c := &httpClient{g: g, id: resp.Header.Get(HeaderConnectionID), msgs: make(chan map[string]any, 256)}
	c.stream("")
	if code := c.post(rpc(1, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}}), ""); code != 202 {
		t.Fatalf("session/new: %d", code)
	}
	res := c.wait("the session/new response", response(1))
	sid, _ := res["result"].(map[string]any)["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new response %v", res)
	}
	c.stream(sid)
	if code := c.post(rpc(2, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "/help"}}}), sid); code != 202 {
		t.Fatalf("session/prompt: %d", code)
	}
	c.wait("an agent message", func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		u, _ := p["update"].(map[string]any)
		return m["method"] == "session/update" && u["sessionUpdate"] == "agent_message_chunk"
	})
	res = c.wait("the prompt's response", response(2))
	if stop := res["result"].(map[string]any)["stopReason"]; stop != "end_turn" {
		t.Errorf("stopReason %v", stop)
	}

	// The session's stream has one receiver.
	h := c.headers(sid)
	h["Accept"] = "text/event-stream"
	if code, body := g.status("GET", nil, h); code != http.StatusConflict {
		t.Errorf("a second receiver of the session's stream: %d %s, want 409", code, body)
	}
	// DELETE ends the connection: later requests are 410.
	if code, _ := g.status("DELETE", nil, c.headers("")); code != http.StatusAccepted {
		t.Errorf("DELETE: %d", code)
	}
	g.waitEnded(t, "the connection to end", func() bool {
		code, _ := g.status("POST", rpc(3, "session/list", map[string]any{}), c.headers(""))
		return code == http.StatusGone
	})
}

func TestHandler_RefusesWithTheStatusTheClientActsOn(t *testing.T) {
	g := newTestGateway(t, &Options{Limits: Limits{MaxMessageBytes: 1 << 10}})
	c := g.connect(nil)
	big := rpc(5, "session/list", map[string]any{"x": strings.Repeat("a", 2<<10)})
	cases := []struct {
		name   string
		method string
		body   any
		header map[string]string
		want   int
	}{
		{"not JSON", "POST", []byte("{nope"), c.headers(""), 400},
		{"a batch", "POST", []byte(`[{"jsonrpc":"2.0","id":1,"method":"session/list"}]`), c.headers(""), 400},
		{"too large", "POST", big, c.headers(""), 413},
		{"no connection id", "POST", rpc(1, "session/list", map[string]any{}), nil, 400},
		{"an unknown connection", "POST", rpc(1, "session/list", map[string]any{}), map[string]string{HeaderConnectionID: "conn_nope"}, 404},
		{"initialize on a connection", "POST", rpc(1, "initialize", initParams), c.headers(""), 400},
		{"a session request without Acp-Session-Id", "POST", rpc(1, "session/prompt", map[string]any{"sessionId": "sess_x", "prompt": []any{}}), c.headers(""), 400},
		{"a mismatched Acp-Session-Id", "POST", rpc(1, "session/prompt", map[string]any{"sessionId": "sess_x", "prompt": []any{}}), c.headers("sess_y"), 400},
		{"a session not live here", "POST", rpc(1, "session/prompt", map[string]any{"sessionId": "sess_x", "prompt": []any{}}), c.headers("sess_x"), 409},
		{"a second receiver of the connection's stream", "GET", nil, map[string]string{HeaderConnectionID: c.id, "Accept": "text/event-stream"}, 409},
		{"a GET without Accept", "GET", nil, c.headers(""), 406},
		{"PUT", "PUT", nil, c.headers(""), 405},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := g.status(tc.method, tc.body, tc.header); code != tc.want {
				t.Errorf("%d %s, want %d", code, body, tc.want)
			}
		})
	}
	// Content-Type.
	req, _ := http.NewRequest("POST", g.url, strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d, want 415", resp.StatusCode)
	}
	// After all that, the connection still works.
	c.post(rpc(9, "session/list", map[string]any{}), "")
	c.wait("session/list's response", response(9))
}

func TestHandler_CredentialsOriginsAndHosts(t *testing.T) {
	g := newTestGateway(t, &Options{
		Authenticate:   BearerAuth(map[string]string{"alice-token-0123456789abcdef": "alice", "bob-token-0123456789abcdefgh": "bob"}),
		AllowedOrigins: []string{"https://ide.example"},
		Limits:         Limits{MaxConnectionsPerTenant: 2},
	})
	alice := map[string]string{"Authorization": "Bearer alice-token-0123456789abcdef"}
	bob := map[string]string{"Authorization": "Bearer bob-token-0123456789abcdefgh"}
	if code, _ := g.status("POST", rpc(0, "initialize", initParams), nil); code != 401 {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, _ := g.status("POST", rpc(0, "initialize", initParams), map[string]string{"Authorization": "Bearer wrong"}); code != 401 {
		t.Errorf("a wrong token: %d, want 401", code)
	}
	a := g.connect(alice)
	// bob cannot use alice's connection: it is unknown to him.
	h := map[string]string{HeaderConnectionID: a.id, "Authorization": bob["Authorization"]}
	if code, _ := g.status("POST", rpc(1, "session/list", map[string]any{}), h); code != 404 {
		t.Errorf("bob on alice's connection: %d, want 404", code)
	}
	if code, _ := g.status("DELETE", nil, h); code != 404 {
		t.Errorf("bob deleting alice's connection: %d, want 404", code)
	}
	withOrigin := func(o string) map[string]string {
		m := map[string]string{"Origin": o}
		for k, v := range alice {
			m[k] = v
		}
		return m
	}
	if code, _ := g.status("POST", rpc(0, "initialize", initParams), withOrigin("https://evil.example")); code != 403 {
		t.Errorf("a foreign origin: %d, want 403", code)
	}
	g.connect(withOrigin("https://ide.example"))
	if code, body := g.status("POST", rpc(0, "initialize", initParams), alice); code != 429 {
		t.Errorf("alice's third connection: %d %s, want 429", code, body)
	}
	g.connect(bob) // bob has his own quota

	lg := newTestGateway(t, &Options{LoopbackHost: true})
	req, _ := http.NewRequest("POST", lg.url, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Host = "attacker.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("a rebound Host: %d, want 403", resp.StatusCode)
	}
}

func TestHandler_WebSocket(t *testing.T) {
	g := newTestGateway(t, &Options{Replica: "r1"})
	wsURL := "ws" + strings.TrimPrefix(g.url, "http")
	ws, resp, err := websocket.DefaultDialer.DialContext(t.Context(), wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if resp.Header.Get(HeaderConnectionID) == "" || !strings.Contains(resp.Header.Get("Set-Cookie"), AffinityCookie+"=r1") {
		t.Errorf("upgrade headers: %v", resp.Header)
	}
	send := func(m any) {
		b, _ := json.Marshal(m)
		if err := ws.WriteMessage(websocket.TextMessage, b); err != nil {
			t.Fatal(err)
		}
	}
	read := func(match func(map[string]any) bool) map[string]any {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if json.Unmarshal(b, &m) == nil && match(m) {
				return m
			}
		}
	}
	send(rpc(1, "initialize", initParams))
	read(response(1))
	// A binary frame is ignored; a text frame that is not JSON is answered.
	_ = ws.WriteMessage(websocket.BinaryMessage, []byte("\x00\x01"))
	_ = ws.WriteMessage(websocket.TextMessage, []byte("{nope"))
	if m := read(func(m map[string]any) bool { return m["error"] != nil }); m["error"].(map[string]any)["code"].(float64) != -32700 {
		t.Errorf("not JSON: %v", m)
	}
	send(rpc(2, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}}))
	sid := read(response(2))["result"].(map[string]any)["sessionId"].(string)
	send(rpc(3, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "/help"}}}))
	if m := read(response(3)); m["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Errorf("prompt: %v", m)
	}
	// A message over the limit is answered, and the connection goes on.
	send(rpc(4, "session/list", map[string]any{"pad": strings.Repeat("x", acp.MaxFrameBytes)}))
	if m := read(response(4)); m["error"] == nil || !strings.Contains(fmt.Sprint(m["error"]), "over the limit") {
		t.Errorf("an oversized message: %v", m)
	}
	send(rpc(5, "session/list", map[string]any{}))
	read(response(5))
	// Closing the socket ends the connection and its session.
	g.mu.Lock()
	core := g.cores[""]
	g.mu.Unlock()
	_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	ws.Close()
	g.waitEnded(t, "the session to end with its connection", func() bool { return core.Lookup(sid) == nil })
}

func TestHandler_SlowReaderLosesItsConnectionAlone(t *testing.T) {
	g := newTestGateway(t, &Options{Limits: Limits{MaxBufferedBytes: 4 << 10, OutputStall: 500 * time.Millisecond}})
	slow := g.connectOnly(nil) // its client never opens the stream: answers pile up
	fast := g.connect(nil)
	for i := range 200 {
		code := slow.post(rpc(100+i, "session/list", map[string]any{}), "")
		if code != http.StatusAccepted {
			break
		}
		if i%20 == 0 {
			fast.post(rpc(i, "session/list", map[string]any{}), "")
			fast.wait("fast's answer", response(float64(i)))
		}
	}
	g.waitEnded(t, "the slow connection to be closed", func() bool {
		code, _ := g.status("POST", rpc(1, "session/list", map[string]any{}), slow.headers(""))
		return code == http.StatusGone
	})
	fast.post(rpc(7, "session/list", map[string]any{}), "")
	fast.wait("fast's answer after slow was closed", response(7))
}

func TestBearerAuth_RefusesWithoutTheToken(t *testing.T) {
	auth := BearerAuth(map[string]string{"t0ken-of-alice-abcdefghijkl": "alice"})
	r := httptest.NewRequest("GET", "/acp", nil)
	if _, err := auth(r); err == nil {
		t.Error("no header: no error")
	}
	r.Header.Set("Authorization", "Bearer t0ken-of-alice-abcdefghijkl")
	if tenant, err := auth(r); err != nil || tenant != "alice" {
		t.Errorf("= %q, %v", tenant, err)
	}
	if BearerAuth(nil) != nil {
		t.Error("BearerAuth(nil) asks for credentials")
	}
}
