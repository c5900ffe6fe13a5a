package remote

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// clientSession drives one session through c: initialize, session/new,
// a /help prompt; it returns the sessionId.
func clientSession(t *testing.T, c *ClientConn, cwd string) string {
	t.Helper()
	send := func(m any) {
		b, _ := json.Marshal(m)
		if err := c.WriteMessage(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(rpc(1, "initialize", initParams))
	readResponse(t, c, 1)
	send(rpc(2, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}))
	sid := readResponse(t, c, 2)["result"].(map[string]any)["sessionId"].(string)
	send(rpc(3, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "/help"}}}))
	if stop := readResponse(t, c, 3)["result"].(map[string]any)["stopReason"]; stop != "end_turn" {
		t.Errorf("stopReason = %v", stop)
	}
	return sid
}

// readResponse reads c until the response to id, within a generous
// deadline.
func readResponse(t *testing.T, c *ClientConn, id float64) map[string]any {
	t.Helper()
	type result struct {
		m   map[string]any
		err error
	}
	ch := make(chan result, 1)
	go func() {
		for {
			b, err := c.ReadMessage()
			if err != nil {
				ch <- result{err: err}
				return
			}
			var m map[string]any
			if json.Unmarshal(b, &m) == nil && response(id)(m) {
				ch <- result{m: m}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("waiting for the response to %v: %v", id, r.err)
		}
		return r.m
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for the response to %v", id)
	}
	return nil
}

func TestDial_BothTransports(t *testing.T) {
	g := newTestGateway(t, &Options{Authenticate: BearerAuth(map[string]string{"tok-0123456789abcdef0123": "alice"})})
	for _, tr := range []string{TransportWebSocket, TransportHTTP} {
		t.Run(tr, func(t *testing.T) {
			c, err := Dial(t.Context(), g.url, &DialOptions{Token: "tok-0123456789abcdef0123", Transport: tr})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Transport() != tr {
				t.Errorf("Transport() = %s", c.Transport())
			}
			sid := clientSession(t, c, t.TempDir())
			g.mu.Lock()
			core := g.cores["alice"]
			g.mu.Unlock()
			if core.Lookup(sid) == nil {
				t.Fatal("the session is not live on the gateway")
			}
			c.Close()
			g.waitEnded(t, "the session to end with the connection", func() bool { return core.Lookup(sid) == nil })
		})
	}
	if _, err := Dial(t.Context(), g.url, &DialOptions{Token: "wrong"}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong token: err = %v, want the 401", err)
	}
}

func TestDial_FallsBackToStreamableHTTP(t *testing.T) {
	g := newTestGateway(t, nil)
	// A front that refuses upgrades, as a proxy without WebSocket does.
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if websocket.IsWebSocketUpgrade(r) {
			http.Error(w, "no WebSocket here", http.StatusUpgradeRequired)
			return
		}
		g.h.ServeHTTP(w, r)
	}))
	defer front.Close()
	c, err := Dial(t.Context(), front.URL+"/acp", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Transport() != TransportHTTP {
		t.Fatalf("Transport() = %s, want http", c.Transport())
	}
	clientSession(t, c, t.TempDir())
}

func TestDial_HTTPSessionNotHereFailsItsRequests(t *testing.T) {
	g := newTestGateway(t, nil)
	c, err := Dial(t.Context(), g.url, &DialOptions{Transport: TransportHTTP})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	clientSession(t, c, t.TempDir())
	b, _ := json.Marshal(rpc(9, "session/prompt", map[string]any{"sessionId": "sess_elsewhere", "prompt": []any{}}))
	if err := c.WriteMessage(b); err != nil {
		t.Fatal(err)
	}
	m := readResponse(t, c, 9)
	e, _ := m["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if data["status"] != float64(409) {
		t.Fatalf("response = %v, want an error with data.status 409", m)
	}
	// The connection goes on.
	b, _ = json.Marshal(rpc(10, "session/list", map[string]any{}))
	if err := c.WriteMessage(b); err != nil {
		t.Fatal(err)
	}
	readResponse(t, c, 10)
}

// Streamable HTTP over HTTP/2 (TLS), as the RFD asks: the POSTs and the
// streams of one connection share one TCP connection.
func TestDial_HTTP2(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := httptest.NewUnstartedServer(g.h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	var protos []string
	var mu sync.Mutex
	hc := srv.Client()
	inner := hc.Transport
	hc.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := inner.RoundTrip(r)
		if err == nil {
			mu.Lock()
			protos = append(protos, resp.Proto)
			mu.Unlock()
		}
		return resp, err
	})
	c, err := Dial(t.Context(), srv.URL+"/acp", &DialOptions{Transport: TransportHTTP, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	clientSession(t, c, t.TempDir())
	mu.Lock()
	defer mu.Unlock()
	for _, p := range protos {
		if p != "HTTP/2.0" {
			t.Fatalf("a request went over %s, want HTTP/2.0 (all: %v)", p, protos)
		}
	}
	if len(protos) < 4 {
		t.Errorf("%d requests, want initialize, the streams and the POSTs", len(protos))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
