package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// restartable is a Streamable HTTP (/mcp) and legacy SSE (/sse) MCP server
// on a fixed loopback port that
// can be stopped (connections reset, port closed) and started again as a
// new process would be: with a new go-sdk handler that knows no session.
// fault, if set, may answer a request itself (and return true).
type restartable struct {
	t     *testing.T
	addr  string
	inits atomic.Int32 // initialize requests served, over all lives
	fault atomic.Pointer[func(w http.ResponseWriter, r *http.Request) bool]

	mu  sync.Mutex
	srv *http.Server
	wg  sync.WaitGroup
}

func newRestartable(t *testing.T) *restartable {
	r := &restartable{t: t, addr: "127.0.0.1:0"}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *restartable) url() string { return "http://" + r.addr + "/mcp" }

func (r *restartable) start() {
	r.t.Helper()
	var ln net.Listener
	var err error
	// The old listener's port may still be being released.
	if !testutil.Eventually(20*time.Second, func() bool {
		ln, err = net.Listen("tcp", r.addr)
		return err == nil
	}) {
		r.t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	srv := headerServer()
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	sse := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/sse") {
			sse.ServeHTTP(w, req)
			return
		}
		streamable.ServeHTTP(w, req)
	})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if f := r.fault.Load(); f != nil && req.Header.Get("Mcp-Session-Id") != "" && req.Method == http.MethodPost && (*f)(w, req) {
			return
		}
		if isInitialize(req) {
			r.inits.Add(1)
		}
		handler.ServeHTTP(w, req)
	})}
	r.mu.Lock()
	r.srv = hs
	r.mu.Unlock()
	r.wg.Go(func() { _ = hs.Serve(ln) })
}

// isInitialize reports whether req is an MCP initialize request (a POST
// whose JSON-RPC method is "initialize"), leaving its body to be read again.
// The server/discover probe that comes before it at 2026-07-28 is not one.
func isInitialize(req *http.Request) bool {
	if req.Method != http.MethodPost || req.Header.Get("Mcp-Session-Id") != "" {
		return false
	}
	body, err := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct{ Method string }
	return err == nil && json.Unmarshal(body, &msg) == nil && msg.Method == "initialize"
}

func (r *restartable) stop() {
	r.mu.Lock()
	hs := r.srv
	r.srv = nil
	r.mu.Unlock()
	if hs != nil {
		_ = hs.Close()
	}
	r.wg.Wait()
}

// once makes the next session-bearing POST answer with f, once.
func (r *restartable) once(f func(w http.ResponseWriter, r *http.Request)) {
	var used atomic.Bool
	fn := func(w http.ResponseWriter, req *http.Request) bool {
		if used.Swap(true) {
			return false
		}
		f(w, req)
		return true
	}
	r.fault.Store(&fn)
}

// resetConn closes the request's connection with a TCP reset.
func resetConn(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func callHeaders(t *testing.T, m *Manager) (gateway.Result, error) {
	t.Helper()
	return toolByName(t, m, "mcp__web__headers").Execute(t.Context(), "c", nil, nil)
}

// TestHTTP_LostSessionReinitializesOnce: each way a Streamable HTTP server
// loses the session costs one fresh initialize. The call is retried when the
// server provably did not run it (404, 400, refused) or when the tool is
// read-only or idempotent; a tool that is neither, cut by a reset or EOF that
// the server may have run it before, gets an error saying so, and the next
// call works.
func TestHTTP_LostSessionReinitializesOnce(t *testing.T) {
	tests := []struct {
		name      string
		lose      func(r *restartable)
		ambiguous bool // the server may have run the cut call
		// maybe: whether the cut is ambiguous depends on the connection the
		// call takes: a kept-alive one reads EOF (ambiguous), a new one gets
		// the restarted server's 404 (not run, so retried).
		maybe bool
	}{
		{"restart", func(r *restartable) { r.stop(); r.start() }, true, true},
		{"404 session not found", func(r *restartable) {
			r.once(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "session not found", http.StatusNotFound) })
		}, false, false},
		{"400 no valid session (TypeScript SDK)", func(r *restartable) {
			r.once(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
			})
		}, false, false},
		{"400 no valid session (plain text)", func(r *restartable) {
			r.once(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "Bad Request: No valid session ID provided", http.StatusBadRequest)
			})
		}, false, false},
		{"connection reset", func(r *restartable) { r.once(resetConn) }, true, false},
	}
	for _, tt := range tests {
		for _, tool := range []string{"mcp__web__headers", "mcp__web__touch"} {
			t.Run(tt.name+"/"+tool, func(t *testing.T) {
				r := newRestartable(t)
				m := connectHTTP(t, ServerSpec{Name: "web", Transport: TransportHTTP, URL: r.url()}, nil)
				call := func() (gateway.Result, error) {
					return toolByName(t, m, tool).Execute(t.Context(), "c", nil, nil)
				}
				if _, err := call(); err != nil {
					t.Fatal(err)
				}
				tt.lose(r)
				res, err := call()
				if tt.ambiguous && tool == "mcp__web__touch" && (!tt.maybe || res.IsError) {
					if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "may or may not have run") {
						t.Fatalf("the cut call of a tool that is not idempotent: %v %+v; want an error result saying it may have run", err, res)
					}
					res, err = call()
				}
				if err != nil || res.IsError {
					t.Fatalf("the call after the loss: %v %+v; want it to work on a fresh session", err, res)
				}
				if n := r.inits.Load(); n != 2 {
					t.Errorf("initialize count = %d, want 2 (the first and one re-initialize)", n)
				}
				if st := m.Servers()[0]; st.State != StateConnected {
					t.Errorf("state = %v %v, want connected", st.State, st.Err)
				}
			})
		}
	}
}

// fakeClock is an injected clock that tests advance by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestHTTP_LostServerIsDialedAgainWithBackoff: a server that is down is not
// failed forever: calls in the backoff fail fast saying when the next attempt
// is, the first call after it dials again, and once the server is back the
// calls work.
func TestHTTP_LostServerIsDialedAgainWithBackoff(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	r := newRestartable(t)
	m := connectHTTP(t, ServerSpec{Name: "web", Transport: TransportHTTP, URL: r.url()}, &Options{Clock: clock.Now, CallsPerMinute: -1})
	r.stop()

	_, err := callHeaders(t, m)
	if !errors.Is(err, ErrNotConnected) || !strings.Contains(err.Error(), "dialing again failed") {
		t.Fatalf("call with the server down = %v, want a failed redial", err)
	}
	st := m.Servers()[0]
	if st.State != StateLost || !st.RetryAt.Equal(clock.Now().Add(time.Second)) {
		t.Fatalf("status = %v (retry at %v), want lost, retry in 1s", st.State, st.RetryAt)
	}

	res, err := callHeaders(t, m) // in the backoff: no dial, a tool error
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "dials it again on the first call after 1s") {
		t.Fatalf("call in the backoff = %v %+v, want a tool error saying when", err, res)
	}

	clock.Advance(time.Second)
	if _, err := callHeaders(t, m); err == nil {
		t.Fatal("the server is still down, yet the call worked")
	}
	if st := m.Servers()[0]; !st.RetryAt.Equal(clock.Now().Add(2 * time.Second)) {
		t.Errorf("retry at %v, want the backoff doubled to 2s", st.RetryAt)
	}

	r.start()
	clock.Advance(2 * time.Second)
	if res, err := callHeaders(t, m); err != nil || res.IsError {
		t.Fatalf("the server is back: %v %+v", err, res)
	}
	if st := m.Servers()[0]; st.State != StateConnected || st.Err != nil || !st.RetryAt.IsZero() {
		t.Errorf("status = %v %v %v, want connected", st.State, st.Err, st.RetryAt)
	}
}

// TestHTTP_LostStreamMarksLostThenRedials: when the server goes away the
// standalone stream breaks and the server is marked lost, not failed; the
// next call dials again at once. OnLinkChanged hears of the loss and of
// the return, once each.
func TestHTTP_LostStreamMarksLostThenRedials(t *testing.T) {
	r := newRestartable(t)
	links := make(chan ServerStatus, 4)
	m := connectHTTP(t, ServerSpec{Name: "web", Transport: TransportHTTP, URL: r.url()}, &Options{OnLinkChanged: func(st ServerStatus) { links <- st }})
	r.stop()
	next := func() ServerStatus {
		select {
		case st := <-links:
			return st
		case <-time.After(30 * time.Second):
			t.Fatal("no link change in 30s")
			return ServerStatus{}
		}
	}
	first := next() // told once the server is marked lost
	if st := m.Servers()[0]; st.State != StateLost {
		t.Fatalf("state = %v %v, want lost once the stream broke", st.State, st.Err)
	}
	if st := first; st.Name != "web" || st.State != StateLost || st.Err == nil {
		t.Errorf("first link change = %+v, want web lost, with why", st)
	}
	r.start()
	if res, err := callHeaders(t, m); err != nil || res.IsError {
		t.Fatalf("call after the restart: %v %+v", err, res)
	}
	if st := next(); st.State != StateConnected || st.Tools == 0 {
		t.Errorf("second link change = %+v, want web connected again, its tools bridged", st)
	}
	select {
	case st := <-links:
		t.Errorf("a third link change: %+v", st)
	default:
	}
}

func TestIsSessionLost(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("sending \"tools/call\": failed to connect (session ID: X): %w", mcp.ErrSessionMissing), true},
		{mcp.ErrConnectionClosed, true},
		{fmt.Errorf("Post: %w", &net.OpError{Op: "read", Err: syscall.ECONNRESET}), true},
		{fmt.Errorf("Post: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), true},
		{fmt.Errorf("Post: %w", io.ErrUnexpectedEOF), true},
		{errors.New(`sending "tools/call": Bad Request: No valid session ID provided: rejected: Bad Request`), true},
		{errors.New(`sending "tools/call": Bad Request`), false},
		{errors.New("calling \"tools/call\": invalid params"), false},
		{ErrTimeout, false},
		{context.Canceled, false},
	} {
		if got := isSessionLost(tt.err); got != tt.want {
			t.Errorf("isSessionLost(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestHTTP_ConcurrentCallsShareOneReinitialize: calls that all find the
// session lost at once share one fresh initialize.
func TestHTTP_ConcurrentCallsShareOneReinitialize(t *testing.T) {
	r := newRestartable(t)
	m := connectHTTP(t, ServerSpec{Name: "web", Transport: TransportHTTP, URL: r.url()}, &Options{CallsPerMinute: -1})
	r.stop()
	r.start()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			res, err := callHeaders(t, m)
			if err == nil && res.IsError {
				err = errors.New(res.Content[0].Text)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a call failed: %v", err)
		}
	}
	if n := r.inits.Load(); n != 2 {
		t.Errorf("initialize count = %d, want 2 (one shared re-initialize)", n)
	}
}

// TestSSE_RestartedServerIsDialedAgain: a legacy SSE server that restarts
// is dialed again by the next call, which works.
func TestSSE_RestartedServerIsDialedAgain(t *testing.T) {
	r := newRestartable(t)
	m := connectHTTP(t, ServerSpec{Name: "web", Transport: TransportSSE, URL: "http://" + r.addr + "/sse"}, nil)
	if _, err := callHeaders(t, m); err != nil {
		t.Fatal(err)
	}
	r.stop()
	r.start()
	if res, err := callHeaders(t, m); err != nil || res.IsError {
		t.Fatalf("call after the restart: %v %+v", err, res)
	}
	if st := m.Servers()[0]; st.State != StateConnected {
		t.Errorf("state = %v %v, want connected", st.State, st.Err)
	}
}
