package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge/builtin"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// A Lazy in-process server is listed once for every session of the Core,
// and a session connects it for a call of one of its tools: idle sessions
// hold no connection, before their first call and after each, /servers
// says it is ready, and the call works as when it is connected at open.
func TestCore_LazyInProcessConnectsOnFirstCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var servers []*mcp.Server
	core := session.NewCore(&session.CoreOptions{
		Gateway: runner.NewLocal(&runner.Options{Permissions: runner.Permissions{Mode: runner.PermissionAllow}}),
		InProcess: []session.InProcessServer{{Name: builtin.Name, Lazy: true, New: func(env session.InProcessEnv) *mcp.Server {
			srv := builtin.New(&builtin.Options{Root: env.Cwd})
			mu.Lock()
			servers = append(servers, srv)
			mu.Unlock()
			return srv
		}}},
	})

	defer core.Shutdown()
	open := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, srv := range servers {
			for range srv.Sessions() {
				n++
			}
		}
		return n
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("buy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var live []*session.Session
	for range 3 {
		s, err := core.Open(ctx, session.OpenRequest{Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer s.End()
		live = append(live, s)
		if n := len(s.Tools()); n != 7 {
			t.Fatalf("%d tools, want the 7 built-in ones", n)
		}
	}
	if n := open(); n != 0 {
		t.Fatalf("%d in-process server sessions open in 3 idle sessions, want 0", n)
	}
	text := session.ServersText(live[0].Servers(), 100)
	if want := "- acp: ready (inprocess, 7 tools, acp 1; connects on first use)"; !strings.Contains(text, want) {
		t.Errorf("/servers =\n%s\nwant a line %q", text, want)
	}
	var result string
	_, err := live[0].Prompt(ctx, session.PromptRequest{
		Content: []gateway.Content{{Type: gateway.ContentText, Text: `/call mcp__acp__read_file {"path":"notes.txt"}`}},
		Emit: func(ev gateway.Event) {
			if ev.Kind == gateway.EventToolEnd {
				result = gateway.PromptText(ev.Call.Result.Content)
			}
		},
	})
	if err != nil || result != "buy milk\n" {
		t.Fatalf("read_file = %q, %v", result, err)
	}
	// The call connected the server; a while after it ended, the
	// connection rested: an idle session holds none, called or not.
	mu.Lock()
	var waits []func() error
	for _, srv := range servers {
		for ss := range srv.Sessions() {
			waits = append(waits, ss.Wait)
		}
	}
	mu.Unlock()
	if !testutil.Ended(30*time.Second, waits...) || open() != 0 {
		t.Fatal("the in-process server session stayed open after the call")
	}
	if text := session.ServersText(live[0].Servers(), 100); !strings.Contains(text, "- acp: ready (inprocess, 7 tools, acp 1; connects on first use)") {
		t.Errorf("/servers after the call =\n%s\nwant acp ready again", text)
	}
	live[0].End()
	if n := open(); n != 0 {
		t.Errorf("%d in-process server sessions open after the session ended, want 0", n)
	}
}
