package bridge_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/bridge/builtin"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// countingServer wraps srv so that the test sees its server sessions: the
// ones that sent any request (sessions) and the tools/list requests.
type countingServer struct {
	srv   *mcp.Server
	mu    sync.Mutex
	seen  map[*mcp.ServerSession]bool
	lists atomic.Int32
}

func newCountingServer(srv *mcp.Server) *countingServer {
	c := &countingServer{srv: srv, seen: map[*mcp.ServerSession]bool{}}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
				c.mu.Lock()
				c.seen[ss] = true
				c.mu.Unlock()
			}
			if method == "tools/list" {
				c.lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	return c
}

// dialed is how many server sessions were ever connected.
func (c *countingServer) dialed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// open is how many server sessions are connected now.
func (c *countingServer) open() int {
	n := 0
	for range c.srv.Sessions() {
		n++
	}
	return n
}

// A lazy in-process server (ServerSpec.ToolsKey) holds no connection in a
// session that never calls its tools: its tools are listed once per key for
// every Manager sharing the ToolLists, and bridged exactly as when the
// server is connected at once.
func TestLazyInProcess_IdleSessionsHoldNoConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()

	eager := bridge.NewManager(&bridge.Options{Cwd: dir})
	if err := eager.Connect(ctx, []bridge.ServerSpec{{Name: builtin.Name, Transport: bridge.TransportInProcess, Server: builtin.New(&builtin.Options{Root: dir})}}); err != nil {
		t.Fatal(err)
	}
	want := eager.Tools()
	wantStatus := eager.Servers()
	if err := eager.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var lists bridge.ToolLists
	var servers []*countingServer
	var builds atomic.Int32
	for i := range 3 {
		srv := newCountingServer(builtin.New(&builtin.Options{Root: dir}))
		servers = append(servers, srv)
		m := bridge.NewManager(&bridge.Options{Cwd: dir, ToolLists: &lists})
		// The server is built on demand (NewServer): only to list, once.
		spec := bridge.ServerSpec{Name: builtin.Name, Transport: bridge.TransportInProcess, ToolsKey: "builtin",
			NewServer: func() *mcp.Server { builds.Add(1); return srv.srv }}
		if err := m.Connect(ctx, []bridge.ServerSpec{spec}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = m.Close(ctx) }()
		got := m.Tools()
		if len(got) != len(want) {
			t.Fatalf("manager %d: %d tools, want %d", i, len(got), len(want))
		}
		for j := range want {
			g, w := *got[j], *want[j]
			g.Execute, w.Execute = nil, nil // closures over different servers
			if !reflect.DeepEqual(g, w) {
				t.Errorf("manager %d: tool %d = %+v,\nwant (eager) %+v", i, j, g, w)
			}
		}
		st := m.Servers()
		if len(st) != 1 || st[0].State != bridge.StateConnected || !st[0].Idle || st[0].Tools != len(want) ||
			st[0].ServerName != wantStatus[0].ServerName || st[0].ServerVersion != wantStatus[0].ServerVersion {
			t.Errorf("manager %d: servers = %+v; want connected, idle, %d tools, %s %s", i, st, len(want), wantStatus[0].ServerName, wantStatus[0].ServerVersion)
		}
		if n := srv.open(); n != 0 {
			t.Errorf("manager %d: %d in-process server sessions open while idle, want 0", i, n)
		}
	}
	var listed int32
	dialed := 0
	for _, s := range servers {
		listed += s.lists.Load()
		dialed += s.dialed()
	}
	if listed != 1 || dialed != 1 || builds.Load() != 1 {
		t.Errorf("3 sessions of one key: %d tools/list over %d connections, %d servers built; want 1 over 1, 1 built (listed once per key)", listed, dialed, builds.Load())
	}
}

// The first calls of a lazy server's tools connect it once, even when they
// come together: calls under way share the connection. A call soon after
// the last one ended uses it still; a while (restAfter) after, the
// connection closes and the server idles again; the next call connects
// again, and the Manager's Close leaves nothing.
func TestLazyInProcess_CallsUnderWayShareOneConnectionThenRest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const callers = 8
	arrived := make(chan struct{}, callers)
	release := make(chan struct{})
	inner := mcp.NewServer(&mcp.Implementation{Name: "lazy", Version: "1"}, nil)
	inner.AddTool(&mcp.Tool{Name: "wait", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	srv := newCountingServer(inner)
	// A nil ToolLists: the Manager lists through a connection of its own,
	// closed at once.
	m := bridge.NewManager(&bridge.Options{Cwd: t.TempDir()})
	if err := m.Connect(ctx, []bridge.ServerSpec{{Name: "lazy", Transport: bridge.TransportInProcess, Server: srv.srv, ToolsKey: "lazy"}}); err != nil {
		t.Fatal(err)
	}
	if n := srv.open(); n != 0 {
		t.Fatalf("%d server sessions open after Connect, want 0", n)
	}
	wait := toolNamed(t, m, "mcp__lazy__wait")
	call := func() error {
		res, err := wait.Execute(ctx, "c", nil, nil)
		if err == nil && res.IsError {
			err = errors.New(gateway.PromptText(res.Content))
		}
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			if err := call(); err != nil {
				errs <- err
			}
		})
	}
	for range callers { // every call is in the tool at once
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatal("the calls did not all reach the tool")
		}
	}
	// One connection to list, one for the calls.
	if d, o := srv.dialed(), srv.open(); d != 2 || o != 1 {
		t.Errorf("%d calls under way: %d connections ever, %d open; want 2 (the listing's, the calls') and 1", callers, d, o)
	}
	if st := m.Servers(); st[0].Idle || st[0].State != bridge.StateConnected {
		t.Errorf("calls under way: servers = %+v; want connected, not idle", st)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("wait: %v", err)
	}
	rested := func(when string) {
		t.Helper()
		var waits []func() error
		for ss := range srv.srv.Sessions() {
			waits = append(waits, ss.Wait)
		}
		if !testutil.Ended(30*time.Second, waits...) || srv.open() != 0 {
			t.Fatalf("%s: the connection did not rest", when)
		}
		if st := m.Servers(); !st[0].Idle || st[0].State != bridge.StateConnected {
			t.Errorf("%s: servers = %+v; want connected, idle", when, st)
		}
	}
	if err := call(); err != nil { // soon after: the same connection
		t.Fatalf("a call right after: %v", err)
	}
	if d := srv.dialed(); d != 2 {
		t.Errorf("a call right after the others: %d connections ever, want 2 (it used the calls')", d)
	}
	rested("after the calls")
	if err := call(); err != nil {
		t.Fatalf("a later call: %v", err)
	}
	if d := srv.dialed(); d != 3 {
		t.Errorf("a call after the rest: %d connections ever, want 3", d)
	}
	rested("after a later call")
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := srv.open(); n != 0 {
		t.Errorf("%d server sessions open after Close, want 0", n)
	}
}

// A failed connect on first use is the call's failure, naming the server and
// the cause (the runner makes it an isError result); the next call connects.
func TestLazyInProcess_FailedConnectIsRetried(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	var dials atomic.Int32
	m := bridge.NewManager(&bridge.Options{Cwd: dir, Dial: func(context.Context, bridge.ServerSpec) (mcp.Transport, error) {
		if dials.Add(1) == 2 { // the listing's dial is the first
			return nil, errors.New("no more in-process sessions today")
		}
		return nil, nil // the built-in in-process transport
	}})
	if err := m.Connect(ctx, []bridge.ServerSpec{{Name: builtin.Name, Transport: bridge.TransportInProcess, Server: builtin.New(&builtin.Options{Root: dir}), ToolsKey: "builtin"}}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close(ctx) }()
	list := toolNamed(t, m, "mcp__acp__list_directory")
	_, err := list.Execute(ctx, "c1", map[string]any{"path": "."}, nil)
	if err == nil || !strings.Contains(err.Error(), `MCP server "acp"`) || !strings.Contains(err.Error(), "no more in-process sessions today") ||
		!strings.Contains(err.Error(), "first use") {
		t.Fatalf("first call: err = %v; want the server's name and the cause", err)
	}
	if st := m.Servers(); st[0].State != bridge.StateConnected || !st[0].Idle {
		t.Errorf("after a failed first connect: servers = %+v; want connected, idle", st)
	}
	res, err := list.Execute(ctx, "c2", map[string]any{"path": "."}, nil)
	if err != nil || res.IsError {
		t.Fatalf("second call = %+v, %v; want it to connect and succeed", res, err)
	}
}

func toolNamed(t *testing.T, m *bridge.Manager, name string) *gateway.Tool {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s in %v", name, m.Tools())
	return nil
}
