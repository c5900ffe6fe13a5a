package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// teardownGrace is the grace period the teardown tests configure: long, so
// that "answered at once" and "after the grace period" are far apart even on
// a loaded machine.
const teardownGrace = 20 * time.Second

// startAgentWithGrace runs the agent with teardownGrace as its grace period.
func startAgentWithGrace(t *testing.T) *agent {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.json")
	data, _ := json.Marshal(map[string]any{"timeouts": map[string]any{"grace": teardownGrace.String()}})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return startAgentWith(t, nil, "--config", cfg)
}

// promptResult is how a prompt turn ended.
type promptResult struct {
	stop acpsdk.StopReason
	err  error
	at   time.Time
}

// startSlowCall starts a long fixture call in its own turn and returns once
// the fixture has received it; the channel gets the turn's outcome.
func startSlowCall(t *testing.T, a *agent, sid, log string) <-chan promptResult {
	t.Helper()
	done := make(chan promptResult, 1)
	go func() {
		stop, err := a.Prompt(context.Background(), sid, `/call mcp__fixture__slow {"seconds": 300, "steps": 1}`)
		done <- promptResult{stop, err, time.Now()}
	}()
	waitFile(t, log, "called slow", 30*time.Second)
	return done
}

// TestTeardown_InFlightCallIsCancelledFirst checks that ending a session
// while a tool call runs — session/close, stdin EOF, SIGTERM — first cancels
// the call (the server receives notifications/cancelled, the prompt is
// answered cancelled at once), then tears down, well within the grace period.
func TestTeardown_InFlightCallIsCancelledFirst(t *testing.T) {
	tests := []struct {
		name     string
		end      func(a *agent, sid string) error
		answered bool // the client can still read the prompt's answer
	}{
		{"session/close", func(a *agent, sid string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*teardownGrace)
			defer cancel()
			_, err := a.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)})
			return err
		}, true},
		{"stdin EOF", func(a *agent, _ string) error { return a.CloseStdin() }, false},
		{"SIGTERM", func(a *agent, _ string) error { return a.Cmd.Process.Signal(syscall.SIGTERM) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := startAgentWithGrace(t)
			cwd := t.TempDir()
			log := filepath.Join(cwd, "fixture.log") // in the cwd: the fixture runs in workspace-write mode
			sid := a.newSession(cwd, fixtureServer("fixture", log))
			done := startSlowCall(t, a, sid, log)
			pids := descendants(a.Cmd.Process.Pid)
			ended := time.Now()
			if err := tt.end(a, sid); err != nil {
				t.Fatal(err)
			}
			if tt.answered {
				select {
				case r := <-done:
					if r.err != nil || r.stop != acpsdk.StopReasonCancelled {
						t.Errorf("prompt answered %q, %v; want cancelled", r.stop, r.err)
					}
					if d := r.at.Sub(ended); d > teardownGrace/2 {
						t.Errorf("the prompt was answered %v after the session ended; want at once, not after the %v grace period", d, teardownGrace)
					}
				case <-time.After(2 * teardownGrace):
					t.Fatal("the prompt was never answered")
				}
			}
			waitFile(t, log, "received notifications/cancelled", teardownGrace/2)
			for _, p := range waitAllGone(pids, teardownGrace/2-time.Since(ended)) {
				t.Errorf("process %d (%s) outlived the session by half the grace period", p, cmdline(p))
			}
		})
	}
}

// TestTeardown_LingeringServerDoesNotDelayTheAnswer closes a session while
// server-everything runs a long operation (it ignores cancellation and
// outlives its closed stdin, so it keeps the grace period): the prompt is
// answered cancelled at once, not after the grace period.
func TestTeardown_LingeringServerDoesNotDelayTheAnswer(t *testing.T) {
	t.Parallel()
	a := startAgentWithGrace(t)
	sid := a.newSession(t.TempDir(), everythingServer("everything"))
	from := len(a.Client.Updates())
	done := make(chan promptResult, 1)
	go func() {
		stop, err := a.Prompt(context.Background(), sid, `/call mcp__everything__trigger-long-running-operation {"duration": 300, "steps": 300}`)
		done <- promptResult{stop, err, time.Now()}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := a.Client.WaitFor(ctx, from, toolRunning); err != nil {
		t.Fatalf("the call never ran: %v", err)
	}
	ended := time.Now()
	closed := make(chan error, 1)
	go func() {
		_, err := a.Conn.CloseSession(context.Background(), acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)})
		closed <- err
	}()
	select {
	case r := <-done:
		if r.err != nil || r.stop != acpsdk.StopReasonCancelled {
			t.Errorf("everything: prompt answered %q, %v; want cancelled", r.stop, r.err)
		}
		t.Logf("answered %v after session/close", r.at.Sub(ended))
		if d := r.at.Sub(ended); d > teardownGrace/2 {
			t.Errorf("everything: the prompt was answered %v after session/close; want at once, not after the %v grace period", d, teardownGrace)
		}
	case <-time.After(2 * teardownGrace):
		t.Fatal("everything: the prompt was never answered")
	}
	if err := <-closed; err != nil {
		t.Errorf("session/close: %v", err)
	}
}

// spawnEscapees has the fixture start two processes out of its process
// group and session: a child that called setsid, and a daemon (orphaned at
// once, so adopted by the agent). It returns their pids and the fixture's.
func spawnEscapees(t *testing.T, a *agent, sid string) (escapees []int, server int) {
	t.Helper()
	for _, args := range []string{`{}`, `{"daemon": true}`} {
		_, out := a.prompt(sid, "/call mcp__fixture__spawn_escapee "+args)
		pid, err := strconv.Atoi(strings.TrimSpace(contentText(finalToolUpdate(t, out))))
		if err != nil {
			t.Fatalf("spawn_escapee %s: %v\n%s", args, err, dump(out))
		}
		escapees = append(escapees, pid)
	}
	for _, p := range descendants(a.Cmd.Process.Pid) {
		if strings.Contains(cmdline(p), "mcp-fixture") {
			server = p
		}
	}
	if server == 0 {
		t.Fatal("no fixture process below the agent")
	}
	for _, p := range escapees {
		if pgid, err := syscall.Getpgid(p); err != nil || pgid == server {
			t.Fatalf("escapee %d: pgid %d (%v); want out of the fixture's group %d", p, pgid, err, server)
		}
	}
	return escapees, server
}

// TestTeardown_EscapedDescendantsEnd checks that processes that left the
// server's process group (setsid, a daemon) do not outlive the session,
// whether it ends by session/close or by the agent exiting on stdin EOF.
func TestTeardown_EscapedDescendantsEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		end  func(a *agent, sid string) error
	}{
		{"session/close", func(a *agent, sid string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := a.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)})
			return err
		}},
		{"stdin EOF", func(a *agent, _ string) error {
			if err := a.CloseStdin(); err != nil {
				return err
			}
			return a.Wait(30 * time.Second)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := startAgent(t)
			sid := a.newSession(t.TempDir(), fixtureServer("fixture", filepath.Join(t.TempDir(), "log")))
			escapees, server := spawnEscapees(t, a, sid)
			if err := tt.end(a, sid); err != nil {
				t.Fatal(err)
			}
			for _, p := range waitAllGone(append(escapees, server), 15*time.Second) {
				t.Errorf("process %d (%s) outlived the session", p, cmdline(p))
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		})
	}
}

// TestTeardown_DaemonEndsWhileAnotherSessionRuns checks that a daemon a
// server started (orphaned at once, adopted by the agent) ends with its
// session even though another session's server still runs, and that the
// other server survives.
func TestTeardown_DaemonEndsWhileAnotherSessionRuns(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	a.newSession(t.TempDir(), fixtureServer("fixture", filepath.Join(t.TempDir(), "log")))
	var keep int
	for _, p := range descendants(a.Cmd.Process.Pid) {
		if strings.Contains(cmdline(p), "mcp-fixture") {
			keep = p
		}
	}
	if keep == 0 {
		t.Fatal("no fixture process below the agent")
	}
	sid := a.newSession(t.TempDir(), fixtureServer("fixture", filepath.Join(t.TempDir(), "log")))
	_, out := a.prompt(sid, `/call mcp__fixture__spawn_escapee {"daemon": true}`)
	daemon, err := strconv.Atoi(strings.TrimSpace(contentText(finalToolUpdate(t, out))))
	if err != nil {
		t.Fatalf("spawn_escapee: %v\n%s", err, dump(out))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	for _, p := range waitAllGone([]int{daemon}, 15*time.Second) {
		t.Errorf("daemon %d (%s) outlived its session while another session ran", p, cmdline(p))
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	if !testutil.Alive(keep) {
		t.Error("closing one session ended another session's server")
	}
}

// TestTeardown_ToolsListHangCostsItsTimeout checks that a server that hangs
// in tools/list, ignoring SIGTERM and its closed stdin, costs the toolsList
// timeout and no more: not the grace period on top.
func TestTeardown_ToolsListHangCostsItsTimeout(t *testing.T) {
	const listTimeout = 2 * time.Second
	cfg := filepath.Join(t.TempDir(), "config.json")
	data, _ := json.Marshal(map[string]any{"timeouts": map[string]any{"toolsList": listTimeout.String(), "grace": teardownGrace.String()}})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgentWith(t, nil, "--config", cfg)
	cwd := t.TempDir()
	log := filepath.Join(cwd, "fixture.log") // in the cwd: the fixture runs in workspace-write mode
	start := time.Now()
	sid := a.newSession(cwd, acpclient.Stdio("hang", fixtureBin, []string{"-hang-tools-list"}, map[string]string{"FIXTURE_LOG": log}))
	t.Logf("session/new took %v", time.Since(start))
	if d := time.Since(start); d > teardownGrace/2 {
		t.Errorf("session/new took %v with a server hanging in tools/list; want about the %v timeout, not the %v grace period too", d, listTimeout, teardownGrace)
	}
	waitFile(t, log, "hanging in tools/list", time.Second) // it did hang there
	_, out := a.prompt(sid, "/servers")
	if got := text(out); !strings.Contains(got, "- hang: failed (stdio):") || !strings.Contains(got, "tools/list took longer than 2s") {
		t.Errorf("/servers:\n%s", got)
	}
	for _, p := range descendants(a.Cmd.Process.Pid) {
		t.Errorf("process %d (%s) outlived the failed server", p, cmdline(p))
	}
}

// TestTeardown_AgentKilledLeavesNoServer checks that SIGKILL of the agent,
// which runs no teardown at all, still ends its stdio servers, even those
// that ignore SIGTERM and outlive their closed stdin (the kernel sends them
// the parent-death signal), and what they started in their process groups
// (the watchdog kills the groups).
func TestTeardown_AgentKilledLeavesNoServer(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	stubborn := func(name string) acpsdk.McpServer {
		return acpclient.Stdio(name, fixtureBin, []string{"-stubborn"}, nil)
	}
	sid := a.newSession(t.TempDir(), stubborn("fixture"), stubborn("second"))
	_, out := a.prompt(sid, "/call mcp__fixture__spawn_grandchild")
	grandchild, err := strconv.Atoi(strings.TrimSpace(contentText(finalToolUpdate(t, out))))
	if err != nil {
		t.Fatalf("spawn_grandchild: %v\n%s", err, dump(out))
	}
	pids := descendants(a.Cmd.Process.Pid)
	if len(pids) != 3 || !slices.Contains(pids, grandchild) {
		t.Fatalf("descendants = %v, want the two fixtures and grandchild %d", pids, grandchild)
	}
	if err := a.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, p := range waitAllGone(pids, 15*time.Second) {
		t.Errorf("process %d (%s) outlived the agent killed with SIGKILL", p, cmdline(p))
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}
