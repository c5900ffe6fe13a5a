//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// TestBuiltin_RootsClosedWithSession: the built-in tools go through the
// session directories opened as roots (one descriptor each, package
// bridge/builtin), opened for a call; once the call has ended and the
// built-in server's connection rested, the agent holds neither the cwd nor
// the additional directory open, nor after session/close.
func TestBuiltin_RootsClosedWithSession(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir, other := filepath.Join(base, "work"), filepath.Join(base, "other")
	for _, d := range []string{dir, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := fakemodel.NewOpenAI(t)
	a := startModelAgent(t, "openai", fake.URL, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	from := len(a.Client.Updates())
	res, err := a.Conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: dir, AdditionalDirectories: []string{other}, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	sid := string(res.SessionId)
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.Update.AvailableCommandsUpdate != nil }); err != nil {
		t.Fatal(err)
	}

	// openDirs lists the session directories among the agent's open files.
	pid := a.Cmd.Process.Pid
	openDirs := func() []string {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		var open []string
		for _, fd := range fds {
			if p, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && (p == dir || p == other) {
				open = append(open, p)
			}
		}
		slices.Sort(open)
		return open
	}
	fake.Push(
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_read", Name: "mcp__acp__read_file", Args: `{"path":"a.txt"}`}}},
		fakemodel.Turn{Text: "Read."},
	)
	_, out := a.prompt(sid, "read a.txt")
	if e := finalUpdates(out)["call_read"]; e == nil || *e.Status != acpsdk.ToolCallStatusCompleted || contentText(e) != "a\n" {
		t.Fatalf("read_file:\n%s", dump(out))
	}
	// The built-in server's connection rests once its last call has ended
	// (bridge, lazy.go), and its roots are released with its last MCP
	// session: an idle session holds no descriptor of its directories.
	testutil.WaitFor(t, 30*time.Second, func() bool { return len(openDirs()) == 0 }, "the session directories %s and %s are still open after the turn ended (%v)", dir, other, openDirs())
	if _, err := a.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: res.SessionId}); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	if got := openDirs(); len(got) != 0 {
		t.Errorf("open session directories after session/close = %v, want none", got)
	}
}
