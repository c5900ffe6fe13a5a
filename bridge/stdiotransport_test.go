//go:build unix

package bridge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
)

// TestStdioTransport_StartsConfinedAndStops: the child runs in the given
// cwd with the policy's environment (the entry's variable in, the
// process's own out), in a process group of its own; the connection is
// its stdin and stdout; Stop ends it and what it started in its group.
func TestStdioTransport_StartsConfinedAndStops(t *testing.T) {
	dir, cwd := t.TempDir(), t.TempDir()
	t.Setenv("ACP_AGENT_TEST_PARENT_ONLY", "leaked")
	script := `echo $$ > ` + dir + `/sh.pid; pwd > ` + dir + `/cwd; env > ` + dir + `/env.tmp; mv ` + dir + `/env.tmp ` + dir + `/env
sleep 600 & echo $! > ` + dir + `/sleep.pid
exec cat`
	spec := ServerSpec{Name: "cat", Transport: TransportStdio, Command: "/bin/sh", Args: []string{"-c", script},
		Env: []environ.Var{{Name: "FROM_ENTRY", Value: "yes"}}}
	tr, err := NewStdioTransport(spec, &StdioOptions{Cwd: cwd, Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pids := testutil.ReadPIDFiles(t, dir, "sh.pid", "sleep.pid")
	if tr.Pid() != pids[0] {
		t.Errorf("Pid() = %d, want the child's %d", tr.Pid(), pids[0])
	}
	if pgid, err := syscall.Getpgid(pids[0]); err != nil || pgid != pids[0] {
		t.Errorf("the child's process group = %d (%v), want its own (%d)", pgid, err, pids[0])
	}
	testutil.WaitFor(t, 30*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "env")); return err == nil }, "the child wrote no env")
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	if !strings.Contains(string(env), "FROM_ENTRY=yes") || strings.Contains(string(env), "ACP_AGENT_TEST_PARENT_ONLY") {
		t.Errorf("the child's environment has not the entry's variable alone:\n%s", env)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "cwd"))
	if want, _ := filepath.EvalSymlinks(cwd); strings.TrimSpace(string(got)) != want && strings.TrimSpace(string(got)) != cwd {
		t.Errorf("the child's cwd = %q, want %q", got, cwd)
	}

	// cat echoes what it reads: the message goes out on stdin and comes back on stdout.
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized"}); err != nil {
		t.Fatal(err)
	}
	msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "notifications/initialized" {
		t.Errorf("read %#v, want the notification back", msg)
	}

	tr.Stop()
	tr.Stop() // idempotent
	for _, pid := range pids {
		if !testutil.WaitGone(pid, 30*time.Second) {
			t.Errorf("process %d is still running after Stop", pid)
		}
	}
	if _, err := tr.Connect(ctx); err == nil {
		t.Error("a second Connect succeeded")
	}
}

func TestStdioTransport_Errors(t *testing.T) {
	if _, err := NewStdioTransport(ServerSpec{Name: "web", Transport: TransportHTTP, URL: "https://example.com/mcp"}, nil); err == nil {
		t.Error("NewStdioTransport took an http server")
	}
	if _, err := NewStdioTransport(ServerSpec{Name: "x", Transport: TransportStdio}, nil); err == nil {
		t.Error("NewStdioTransport took a stdio server without a command")
	}
	tr, err := NewStdioTransport(ServerSpec{Name: "missing", Transport: TransportStdio, Command: "acp-agent-test-no-such-command"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Connect(t.Context())
	if err == nil || !strings.Contains(err.Error(), `cannot start command "acp-agent-test-no-such-command"`) {
		t.Errorf("Connect of a missing command: %v", err)
	}
	tr.Stop()

	stopped, err := NewStdioTransport(ServerSpec{Name: "cat", Transport: TransportStdio, Command: "cat"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stopped.Stop()
	if _, err := stopped.Connect(t.Context()); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("Connect after Stop: %v, want an error", err)
	}
	if stopped.Pid() != 0 {
		t.Errorf("Pid() = %d before any start", stopped.Pid())
	}
}
