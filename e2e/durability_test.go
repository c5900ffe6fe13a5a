package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"golang.org/x/sys/unix"

	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/postgres"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
)

// TestDurability_KillUnderLoadKeepsEveryAnsweredTurn: SIGKILL of the agent
// while many sessions prompt loses no turn whose prompt was answered, on
// SQLite and on PostgreSQL. Turns used to be committed behind the
// response, with no bound on the queue: a kill lost up to thousands.
func TestDurability_KillUnderLoadKeepsEveryAnsweredTurn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) string
		open  func(ctx context.Context, store string) (store.Store, error)
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "sessions.db") },
			func(ctx context.Context, store string) (store.Store, error) { return sqlite.Open(ctx, store) }},
		{"postgres", func(t *testing.T) string { return pgtest.Start(t) },
			func(ctx context.Context, store string) (store.Store, error) {
				return postgres.Open(ctx, store, nil)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := tc.store(t)
			a := startAgentWith(t, nil, "--model", "direct", "--store", store)
			const sessions, enough = 20, 400
			var sids []string
			for range sessions {
				sids = append(sids, a.newSession(t.TempDir()))
			}
			answered := make([]atomic.Int64, sessions)
			var total atomic.Int64
			reached := make(chan struct{})
			var once sync.Once
			var wg sync.WaitGroup
			for i, sid := range sids {
				wg.Go(func() {
					for n := 0; ; n++ {
						res, err := a.Conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid),
							Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(fmt.Sprintf("/help turn %d", n))}})
						if err != nil {
							return // the agent was killed
						}
						if res.StopReason != acpsdk.StopReasonEndTurn {
							t.Errorf("session %d turn %d: %s", i, n, res.StopReason)
							return
						}
						answered[i].Add(1)
						if total.Add(1) >= enough {
							once.Do(func() { close(reached) })
						}
					}
				})
			}
			select {
			case <-reached:
			case <-time.After(120 * time.Second):
				t.Fatalf("only %d turns answered within 120s", total.Load())
			}
			if err := a.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = a.Wait(20 * time.Second)
			wg.Wait()

			ctx := t.Context()
			st, err := tc.open(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var lost int64
			for i, sid := range sids {
				turns, err := st.Turns(ctx, sid)
				if err != nil {
					t.Fatal(err)
				}
				if n := answered[i].Load(); int64(len(turns)) < n {
					lost += n - int64(len(turns))
				}
			}
			if lost > 0 {
				t.Errorf("%d of %d answered turns lost by SIGKILL", lost, total.Load())
			}
		})
	}
}

// TestDurability_FullDiskFailsThePromptAndLeavesNoGap: a turn the store
// cannot write (the agent's files may not grow: RLIMIT_FSIZE, as a full
// disk) fails its prompt with an error saying so; once there is room again
// the session goes on, and after a restart the transcript holds the turns
// before and after, with nothing in between.
func TestDurability_FullDiskFailsThePromptAndLeavesNoGap(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "sessions.db")
	a := startAgentWith(t, nil, "--model", "direct", "--store", store)
	cwd := t.TempDir()
	sid := a.newSession(cwd)
	prompt := func(text string) (acpsdk.StopReason, error) {
		res, err := a.Conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
		return res.StopReason, err
	}
	if _, err := prompt("/help before"); err != nil {
		t.Fatal(err)
	}
	pid := a.Cmd.Process.Pid
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 1, Max: unix.RLIM_INFINITY}, &old); err != nil {
		t.Fatal(err)
	}
	_, err := prompt("/help while full")
	if err == nil || !strings.Contains(err.Error(), "could not be stored") || !strings.Contains(err.Error(), "session store") {
		t.Errorf("prompt on a full disk = %v, want an error saying the turn could not be stored and why", err)
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &old, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := prompt("/help after"); err != nil {
		t.Fatalf("prompt once there is room again: %v", err)
	}
	if err := a.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	b := startAgentWith(t, nil, "--model", "direct", "--store", store)
	from := len(b.Client.Updates())
	if _, err := b.Conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, l := range transcript(b.Client.Updates()[from:]) {
		if strings.HasPrefix(l, "user:") {
			users = append(users, l)
		}
	}
	got := strings.Join(users, "\n")
	if len(users) != 2 || !strings.Contains(users[0], "/help before") || !strings.Contains(users[1], "/help after") {
		t.Errorf("replayed user turns:\n%s\nwant the turns before and after the full disk, and not the one in between", got)
	}
}
