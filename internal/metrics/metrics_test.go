package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seed02d3eb6b/acp-agent/acp/remote"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session"
)

var (
	_ gateway.Observer = (*Metrics)(nil)
	_ session.Observer = (*Metrics)(nil)
	_ remote.Observer  = (*TransportMetrics)(nil)
)

func TestMetrics_Record(t *testing.T) {
	m := New(nil)
	m.SessionOpened()
	m.SessionOpened()
	m.SessionClosed()
	m.ModelRequest("claude", gateway.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 100, CacheWriteTokens: 7, Requests: 1, Cost: 0.25}, 20*time.Millisecond, nil)
	m.ModelRequest("claude", gateway.Usage{}, time.Millisecond, errors.New("overloaded"))
	m.TurnEnded("claude", gateway.StopEndTurn, time.Second, nil)
	m.TurnEnded("claude", "", time.Second, errors.New("provider failed"))
	m.ToolCallEnded("everything", "mcp__everything__echo", "ok", 3*time.Millisecond)
	m.ToolCallEnded("everything", "mcp__everything__echo", "refused", 0)
	m.PermissionDecided("allow_once")
	m.SignIn("started")
	m.LeaseWaited("acquired", time.Millisecond)
	m.LeaseLost()
	m.StoreCommit(3, time.Millisecond, nil)
	m.StoreCommit(1, time.Millisecond, errors.New("disk full"))
	m.ServerStates(func() map[string]int { return map[string]int{"connected": 2, "failed": 1} })

	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"sessions open", testutil.ToFloat64(m.sessionsOpen), 1},
		{"sessions opened", testutil.ToFloat64(m.sessionsOpened), 2},
		{"sessions closed", testutil.ToFloat64(m.sessionsClosed), 1},
		{"input tokens", testutil.ToFloat64(m.tokens.WithLabelValues("claude", "input")), 10},
		{"output tokens", testutil.ToFloat64(m.tokens.WithLabelValues("claude", "output")), 5},
		{"cache read tokens", testutil.ToFloat64(m.tokens.WithLabelValues("claude", "cache_read")), 100},
		{"cache write tokens", testutil.ToFloat64(m.tokens.WithLabelValues("claude", "cache_write")), 7},
		{"cost", testutil.ToFloat64(m.cost.WithLabelValues("claude")), 0.25},
		{"requests ok", testutil.ToFloat64(m.modelRequests.WithLabelValues("claude", "ok")), 1},
		{"requests error", testutil.ToFloat64(m.modelRequests.WithLabelValues("claude", "error")), 1},
		{"turns end_turn", testutil.ToFloat64(m.turns.WithLabelValues("claude", "end_turn")), 1},
		{"turns error", testutil.ToFloat64(m.turns.WithLabelValues("claude", "error")), 1},
		{"tool ok", testutil.ToFloat64(m.toolCalls.WithLabelValues("everything", "mcp__everything__echo", "ok")), 1},
		{"tool refused", testutil.ToFloat64(m.toolCalls.WithLabelValues("everything", "mcp__everything__echo", "refused")), 1},
		{"permission", testutil.ToFloat64(m.permissions.WithLabelValues("allow_once")), 1},
		{"sign-in", testutil.ToFloat64(m.signIns.WithLabelValues("started")), 1},
		{"leases lost", testutil.ToFloat64(m.leasesLost), 1},
		{"committed turns", testutil.ToFloat64(m.committedTurns), 3},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Histograms: one observation each where recorded; a refused call
	// has no duration.
	for name, want := range map[string]int{
		"acp_agent_turn_duration_seconds":          2,
		"gen_ai_client_operation_duration_seconds": 1, // one series (chat, claude), two observations
		"mcp_client_operation_duration_seconds":    1,
		"acp_agent_lease_wait_seconds":             1,
		"acp_agent_store_commit_duration_seconds":  2,
		"mcp_client_servers":                       2,
	} {
		if n, err := testutil.GatherAndCount(m.Registry(), name); err != nil || n != want {
			t.Errorf("%s: %d series (err %v), want %d", name, n, err, want)
		}
	}
	const servers = `
# HELP mcp_client_servers MCP servers of the live sessions, by state (connecting, connected, failed, lost, closed, needs sign-in).
# TYPE mcp_client_servers gauge
mcp_client_servers{state="connected"} 2
mcp_client_servers{state="failed"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(servers), "mcp_client_servers"); err != nil {
		t.Error(err)
	}
}

func TestMetrics_LabelsBounded(t *testing.T) {
	m := New(nil)
	for i := range MaxTools + 10 {
		m.ToolCallEnded("s", fmt.Sprintf("tool%d", i), "ok", time.Millisecond)
	}
	m.ToolCallEnded("s", strings.Repeat("x", maxLabelLen+1), "ok", time.Millisecond)
	m.ToolCallEnded("s", "tool0", "ok", time.Millisecond) // admitted before the cap: still itself
	if got := testutil.ToFloat64(m.toolCalls.WithLabelValues("s", Other, "ok")); got != 11 {
		t.Errorf("calls counted as %q = %v, want 11 (10 over the cap, 1 too long)", Other, got)
	}
	if got := testutil.ToFloat64(m.toolCalls.WithLabelValues("s", "tool0", "ok")); got != 2 {
		t.Errorf("tool0 calls = %v, want 2", got)
	}
	if n := testutil.CollectAndCount(m.toolCalls); n != MaxTools+1 {
		t.Errorf("%d tool call series, want %d (the cap and %q)", n, MaxTools+1, Other)
	}
}

func TestMetrics_Endpoints(t *testing.T) {
	m := New(nil)
	m.SessionOpened()
	var readyErr error
	const token = "0123456789abcdef0123456789abcdef"
	mux := http.NewServeMux()
	var logs syncBuffer
	m.Mount(mux, &HandlerOptions{
		Ready:      func(ctx context.Context) error { return readyErr },
		Authorized: BearerAuth(token),
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path, bearer string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(PathHealth, ""); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}
	if code, body := get(PathReady, ""); code != 200 || body != "ok\n" {
		t.Errorf("/readyz = %d %q, want 200 ok", code, body)
	}
	readyErr = errors.New("the session store does not answer: postgres://u@db/x: connection refused")
	// Who is not the operator is told not ready and a reference, which
	// the log gives with the reason (a store's names its database URL).
	for _, bearer := range []string{"", "a-tenant-token-0123456789abcdef"} {
		logs.Reset()
		code, body := get(PathReady, bearer)
		ref, ok := strings.CutPrefix(body, "not ready (ref ")
		if code != 503 || !ok || len(ref) < 8 || strings.Contains(body, "connection refused") || strings.Contains(body, "postgres") {
			t.Errorf("/readyz with bearer %q, store down = %d %q, want 503, a ref and no reason", bearer, code, body)
			continue
		}
		if l := logs.String(); !strings.Contains(l, "ref="+ref[:8]) || !strings.Contains(l, "postgres://u@db/x") {
			t.Errorf("the log of a hidden /readyz reason lacks its ref %s and reason:\n%s", ref[:8], l)
		}
	}
	if code, body := get(PathReady, token); code != 503 || !strings.Contains(body, "connection refused") {
		t.Errorf("/readyz with the token, store down = %d %q, want 503 with the reason", code, body)
	}
	if code, _ := get(PathMetrics, ""); code != 401 {
		t.Errorf("/metrics without a token = %d, want 401", code)
	}
	if code, _ := get(PathMetrics, token+"x"); code != 401 {
		t.Errorf("/metrics with a wrong token = %d, want 401", code)
	}
	code, body := get(PathMetrics, token)
	if code != 200 || !strings.Contains(body, "acp_agent_sessions_open 1") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics with the token = %d, want 200 with acp_agent_sessions_open 1 and the Go collector's metrics:\n%s", code, body)
	}
}

func TestMetrics_ReadyTimesOut(t *testing.T) {
	m := New(nil)
	mux := http.NewServeMux()
	m.Mount(mux, &HandlerOptions{Ready: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }})
	synctest.Test(t, func(t *testing.T) {
		rec := httptest.NewRecorder()
		start := time.Now()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+PathReady, nil))
		if rec.Code != 503 || !strings.Contains(rec.Body.String(), "deadline exceeded") {
			t.Errorf("/readyz of a store that hangs = %d %q, want 503 deadline exceeded", rec.Code, rec.Body.String())
		}
		if d := time.Since(start); d != ReadyTimeout || d >= 5*time.Second {
			t.Errorf("/readyz took %v, want ReadyTimeout (%v), under 5 s", d, ReadyTimeout)
		}
	})
}

func TestMetrics_OpenListenerRefusesRebinding(t *testing.T) {
	m := New(nil)
	mux := http.NewServeMux()
	m.Mount(mux, nil)
	for host, want := range map[string]int{"127.0.0.1:9464": 200, "localhost:9464": 200, "[::1]:9464": 200, "evil.example:9464": 403, "10.0.0.5": 403} {
		for _, path := range []string{PathHealth, PathReady, PathMetrics} {
			req := httptest.NewRequest("GET", path, nil)
			req.Host = host
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != want {
				t.Errorf("GET %s with Host %s = %d, want %d", path, host, rec.Code, want)
			}
		}
	}
}

func TestBearerAuth_None(t *testing.T) {
	if BearerAuth("", "") != nil {
		t.Error("BearerAuth of no tokens is not nil (everyone)")
	}
}

func TestMetrics_Transport(t *testing.T) {
	m := New(nil)
	tr := m.Transport()
	if m.Transport() != tr {
		t.Fatal("Transport made twice")
	}
	tr.Opened("websocket")
	tr.Opened("http")
	tr.Closed("http", "idle")
	tr.Refused(409)
	tr.Message("websocket", true, 100)
	tr.Message("websocket", false, 50)
	tr.Message("websocket", false, 25)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"open websocket", testutil.ToFloat64(tr.open.WithLabelValues("websocket")), 1},
		{"open http", testutil.ToFloat64(tr.open.WithLabelValues("http")), 0},
		{"closed idle", testutil.ToFloat64(tr.closed.WithLabelValues("http", "idle")), 1},
		{"refused 409", testutil.ToFloat64(tr.refused.WithLabelValues("409")), 1},
		{"messages out", testutil.ToFloat64(tr.messages.WithLabelValues("websocket", "out")), 2},
		{"bytes out", testutil.ToFloat64(tr.bytes.WithLabelValues("websocket", "out")), 75},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// syncBuffer is a bytes.Buffer a logger writes from the handler's
// goroutine while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

// LocalOnly serves a loopback Host without an Origin, and refuses a name
// rebound to 127.0.0.1 and any web page's request.
func TestLocalOnly(t *testing.T) {
	h := LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	for _, tt := range []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:6060", "", 200},
		{"localhost:6060", "", 200},
		{"[::1]:6060", "", 200},
		{"attacker.example", "", 403},
		{"attacker.example:6060", "", 403},
		{"127.0.0.1.nip.io:6060", "", 403},
		{"127.0.0.1:6060", "http://attacker.example", 403},
		{"127.0.0.1:6060", "http://127.0.0.1:6060", 403},
		{"127.0.0.1:6060", "null", 403},
	} {
		r := httptest.NewRequest("GET", "/debug/pprof/cmdline", nil)
		r.Host = tt.host
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tt.want {
			t.Errorf("Host %q Origin %q = %d %q, want %d", tt.host, tt.origin, rec.Code, rec.Body.String(), tt.want)
		}
	}
}

// With tenants, an MCP server's and its tools' names are not recorded: one
// tenant's names stay its own, and no tenant spends the caps on others.
func TestMetrics_TenantsLeaveOutServerNames(t *testing.T) {
	for _, tenants := range []bool{false, true} {
		m := New(&Options{Tenants: tenants})
		m.ToolCallEnded("", "read_file", "ok", time.Millisecond)
		for i := range MaxServers + 10 {
			m.ToolCallEnded(fmt.Sprintf("acme-merger-%d", i), "t", "ok", time.Millisecond)
		}
		series := testutil.CollectAndCount(m.toolCalls)
		named := testutil.ToFloat64(m.toolCalls.WithLabelValues("acme-merger-0", "t", "ok"))
		if tenants && (named != 0 || series != 2) {
			t.Errorf("tenants: %v calls under a server's name, %d series, want none and 2 (other, the agent's own)", named, series)
		}
		if !tenants && named != 1 {
			t.Errorf("no tenants: %v calls under the first server's name, want 1", named)
		}
		if n := testutil.ToFloat64(m.toolCalls.WithLabelValues("", "read_file", "ok")); n != 1 {
			t.Errorf("tenants %v: the agent's own tool by name = %v, want 1", tenants, n)
		}
		if n := testutil.ToFloat64(m.toolCalls.WithLabelValues(Other, Other, "ok")); tenants && n != MaxServers+10 {
			t.Errorf("tenants: MCP servers' calls as other = %v, want %d", n, MaxServers+10)
		}
	}
}

// acp_agent_audit_dropped_lines_total reads the audit log's count at each
// scrape; 0 without one.
func TestMetrics_AuditDropped(t *testing.T) {
	m := New(nil)
	read := func() float64 {
		mfs, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "acp_agent_audit_dropped_lines_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatal("no acp_agent_audit_dropped_lines_total")
		return 0
	}
	if v := read(); v != 0 {
		t.Errorf("without an audit log: %v, want 0", v)
	}
	var dropped int64 = 7
	m.AuditDropped(func() int64 { return dropped })
	if v := read(); v != 7 {
		t.Errorf("with 7 dropped: %v", v)
	}
}
