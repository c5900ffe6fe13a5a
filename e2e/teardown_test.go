package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
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
			log := filepath.Join(t.TempDir(), "fixture.log")
			sid := a.newSession(t.TempDir(), fixtureServer("fixture", log))
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
