package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
)

// failingStore fails AppendTurn (and AppendTurns) while fail is set, as a
// full disk does.
type failingStore struct {
	*sqlite.Store
	mu   sync.Mutex
	fail bool
}

var errDiskFull = errors.New("database or disk is full")

func (f *failingStore) failing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail
}

func (f *failingStore) AppendTurn(ctx context.Context, id string, t store.Turn) error {
	if f.failing() {
		return errDiskFull
	}
	return f.Store.AppendTurn(ctx, id, t)
}

func (f *failingStore) AppendTurns(ctx context.Context, b []store.SessionTurn) error {
	if f.failing() {
		return errDiskFull
	}
	return f.Store.AppendTurns(ctx, b)
}

// Append returns once the turn is committed: a second store handle sees it
// at once. A turn the store refuses fails Append, stays out of the view
// and out of the store; the next turn follows the one before it, with no
// gap.
func TestHistory_AppendIsDurableAndAFailedTurnLeavesNoGap(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "sessions.db")
	sq, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	st := &failingStore{Store: sq}
	if err := st.Create(ctx, store.Record{ID: "s", Key: "acp:s", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	h := NewHistory(st, nil)
	defer h.Close()
	if _, err := h.Attach(ctx, "acp:s", "s"); err != nil {
		t.Fatal(err)
	}
	other, err := sqlite.Open(ctx, path) // another process's view of the file
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	if err := h.Append(ctx, "acp:s", gatewayTurn(turn("one", "1"))); err != nil {
		t.Fatal(err)
	}
	if turns, err := other.Turns(ctx, "s"); err != nil || len(turns) != 1 {
		t.Fatalf("right after Append: %d turns stored, %v; want 1", len(turns), err)
	}
	st.mu.Lock()
	st.fail = true
	st.mu.Unlock()
	if err := h.Append(ctx, "acp:s", gatewayTurn(turn("two", "2"))); !errors.Is(err, errDiskFull) {
		t.Fatalf("Append on a full disk = %v, want the store's error", err)
	}
	if v := h.View(ctx, "acp:s"); len(v.Messages) != 2 {
		t.Errorf("the view after a failed turn holds %d messages, want the first turn's 2", len(v.Messages))
	}
	st.mu.Lock()
	st.fail = false
	st.mu.Unlock()
	if err := h.Append(ctx, "acp:s", gatewayTurn(turn("three", "3"))); err != nil {
		t.Fatal(err)
	}
	turns, err := other.Turns(ctx, "s")
	if err != nil || len(turns) != 2 {
		t.Fatalf("stored %d turns, %v; want 2", len(turns), err)
	}
	for i, want := range []string{"one", "three"} {
		if got := gateway.PromptText(turns[i].Messages[0].Content); got != want {
			t.Errorf("stored turn %d is %q, want %q", i, got, want)
		}
	}
	if v := h.View(ctx, "acp:s"); len(v.Messages) != 4 {
		t.Errorf("the view holds %d messages, want the 4 of the stored turns", len(v.Messages))
	}
	h.Close()
	if err := h.Append(ctx, "acp:s", gatewayTurn(turn("four", "4"))); err == nil {
		t.Error("Append after Close succeeded")
	}
}

// countingStore counts the commits of a BatchStore and holds the first
// until release is closed.
type countingStore struct {
	*sqlite.Store
	release chan struct{}
	mu      sync.Mutex
	commits []int // turns per commit
}

func (c *countingStore) hold(n int) {
	c.mu.Lock()
	first := len(c.commits) == 0
	c.commits = append(c.commits, n)
	c.mu.Unlock()
	if first {
		<-c.release
	}
}

func (c *countingStore) AppendTurn(ctx context.Context, id string, t store.Turn) error {
	c.hold(1)
	return c.Store.AppendTurn(ctx, id, t)
}

func (c *countingStore) AppendTurns(ctx context.Context, b []store.SessionTurn) error {
	c.hold(len(b))
	return c.Store.AppendTurns(ctx, b)
}

// Turns that end while a commit is under way are committed together, in
// one transaction, each session's in order. The test runs in a synctest
// bubble: synctest.Wait returns once every goroutine of the History is
// blocked, on the held commit or on its turn's.
func TestHistory_GroupCommit(t *testing.T) {
	synctest.Test(t, testHistoryGroupCommit)
}

func testHistoryGroupCommit(t *testing.T) {
	ctx := t.Context()
	sq, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	st := &countingStore{Store: sq, release: make(chan struct{})}
	h := NewHistory(st, nil)
	defer h.Close()
	const sessions = 10
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		if err := st.Create(ctx, store.Record{ID: id, Key: "acp:" + id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Attach(ctx, "acp:"+id, id); err != nil {
			t.Fatal(err)
		}
	}
	var released sync.Once
	release := func() { released.Do(func() { close(st.release) }) }
	defer release() // before Close, on failure too
	var wg sync.WaitGroup
	wg.Go(func() { // its commit is held
		if err := h.Append(ctx, "acp:s0", gatewayTurn(turn("first", "1"))); err != nil {
			t.Error(err)
		}
	})
	synctest.Wait()
	st.mu.Lock()
	started := len(st.commits) == 1
	st.mu.Unlock()
	if !started {
		t.Fatal("the first commit did not start")
	}
	for i := 1; i < sessions; i++ {
		wg.Go(func() {
			if err := h.Append(ctx, fmt.Sprintf("acp:s%d", i), gatewayTurn(turn("queued", "q"))); err != nil {
				t.Error(err)
			}
		})
	}
	synctest.Wait() // the other nine queued behind the held commit
	h.mu.Lock()
	queued := len(h.queue)
	h.mu.Unlock()
	if queued != sessions-1 {
		t.Fatalf("%d turns not queued behind the held commit", sessions-1)
	}
	release()
	wg.Wait()
	st.mu.Lock()
	commits := st.commits
	st.mu.Unlock()
	if len(commits) != 2 || commits[0] != 1 || commits[1] != sessions-1 {
		t.Errorf("commits of %v turns, want [1 %d]: the queued turns in one", commits, sessions-1)
	}
	for i := range sessions {
		if turns, err := sq.Turns(ctx, fmt.Sprintf("s%d", i)); err != nil || len(turns) != 1 {
			t.Errorf("session %d: %d turns, %v", i, len(turns), err)
		}
	}
}

// BenchmarkHistoryAppend is the cost of a turn's durability: the time from
// a finished turn to its response, which now waits for the commit, with 1
// and 32 sessions ending turns at once (group commit), on SQLite.
func BenchmarkHistoryAppend(b *testing.B) {
	for _, sessions := range []int{1, 32} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			ctx := b.Context()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "sessions.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			h := NewHistory(st, nil)
			defer h.Close()
			for i := range sessions {
				id := fmt.Sprintf("s%d", i)
				if err := st.Create(ctx, store.Record{ID: id, Key: "acp:" + id, Cwd: "/w"}); err != nil {
					b.Fatal(err)
				}
				if _, err := h.Attach(ctx, "acp:"+id, id); err != nil {
					b.Fatal(err)
				}
			}
			tr := gatewayTurn(turn(`/call mcp__fixture__echo {"message":"hi"}`, "Echo: hi"))
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N/sessions + 1
			for i := range sessions {
				wg.Go(func() {
					for range per {
						if err := h.Append(ctx, fmt.Sprintf("acp:s%d", i), tr); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(per*sessions), "µs/turn")
		})
	}
}
