package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

func turn(prompt, answer string) store.Turn {
	return store.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{
		{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(prompt)}},
		{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(answer)}},
	}}
}

func TestHistory_AttachAppendForget(t *testing.T) {
	st := memory.New()
	ctx := t.Context()
	st.Create(ctx, store.Record{ID: "s", Key: "acp:s", Cwd: "/w"})
	st.AppendTurn(ctx, "s", turn("one", "1"))
	h := NewHistory(st, nil)
	turns, err := h.Attach(ctx, "acp:s", "s")
	if err != nil || len(turns) != 1 || len(h.View(ctx, "acp:s").Messages) != 2 {
		t.Fatalf("attach: %d turns, %d messages, %v", len(turns), len(h.View(ctx, "acp:s").Messages), err)
	}
	h.Append(ctx, "acp:s", gateway.Turn{StopReason: gateway.StopEndTurn, Messages: turn("two", "2").Messages})
	if len(h.View(ctx, "acp:s").Messages) != 4 {
		t.Errorf("append: %d messages cached at once, want 4", len(h.View(ctx, "acp:s").Messages))
	}
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Turns(ctx, "s"); len(got) != 2 || len(h.View(ctx, "acp:s").Messages) != 4 {
		t.Errorf("append: %d stored turns, %d messages", len(got), len(h.View(ctx, "acp:s").Messages))
	}
	h.Forget(ctx, "acp:s")
	if h.View(ctx, "acp:s").Messages != nil {
		t.Error("Forget kept the cache")
	}
	if got, _ := st.Turns(ctx, "s"); len(got) != 2 {
		t.Error("Forget dropped the stored turns")
	}
}

// gatedStore holds each AppendTurn until release is closed.
type gatedStore struct {
	store.Store
	release chan struct{}
}

func (g *gatedStore) AppendTurn(ctx context.Context, id string, t store.Turn) error {
	<-g.release
	return g.Store.AppendTurn(ctx, id, t)
}

// waitPending waits, in a synctest bubble, until every other goroutine of
// the test is blocked (on a held commit, or on its turn's), and fails
// unless n sessions have a commit under way in h then.
func waitPending(t *testing.T, h *History, n int) {
	t.Helper()
	synctest.Wait()
	h.mu.Lock()
	pending := len(h.pending)
	h.mu.Unlock()
	if pending != n {
		t.Fatalf("not %d sessions with a commit under way", n)
	}
}

// Append returns once the turn is committed: while the store is held the
// turn is in neither the view nor the store, and Flush and Attach wait for
// it; the commits land in order.
func TestHistory_AppendWaitsForTheCommitInOrder(t *testing.T) {
	synctest.Test(t, testHistoryAppendWaitsForTheCommitInOrder)
}

func testHistoryAppendWaitsForTheCommitInOrder(t *testing.T) {
	ctx := t.Context()
	mem := memory.New()
	mem.Create(ctx, store.Record{ID: "s", Key: "acp:s", Cwd: "/w"})
	st := &gatedStore{Store: mem, release: make(chan struct{})}
	h := NewHistory(st, nil)
	defer h.Close()
	if _, err := h.Attach(ctx, "acp:s", "s"); err != nil {
		t.Fatal(err)
	}
	appended := make(chan error, 1)
	go func() {
		appended <- h.Append(ctx, "acp:s", gateway.Turn{StopReason: gateway.StopEndTurn, Messages: turn("prompt 0", "0").Messages})
	}()
	waitPending(t, h, 1)
	select {
	case err := <-appended:
		t.Fatalf("Append returned (%v) while the store held the commit", err)
	default:
	}
	if n := len(h.View(ctx, "acp:s").Messages); n != 0 {
		t.Fatalf("%d messages in the view before the commit, want 0", n)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := h.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with the store held = %v, want the deadline", err)
	}
	if _, err := h.Attach(short, "acp:other", "s"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Attach with a commit under way = %v, want the deadline", err)
	}
	close(st.release)
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 5; i++ {
		if err := h.Append(ctx, "acp:s", gateway.Turn{StopReason: gateway.StopEndTurn, Messages: turn(fmt.Sprint("prompt ", i), fmt.Sprint(i)).Messages}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.View(ctx, "acp:s").Messages); n != 10 {
		t.Errorf("%d messages in the view, want 10", n)
	}
	turns, err := h.Attach(ctx, "acp:again", "s")
	if err != nil || len(turns) != 5 {
		t.Fatalf("Attach after the commits: %d turns, %v", len(turns), err)
	}
	for i, tr := range turns {
		if got := gateway.PromptText(tr.Messages[0].Content); got != fmt.Sprint("prompt ", i) {
			t.Errorf("turn %d is %q: commits out of order", i, got)
		}
	}
	if rec, _ := mem.Get(ctx, "s"); rec.Title != "prompt 0" {
		t.Errorf("title %q, want the first prompt", rec.Title)
	}
}

// Forget and Close return only once the commits under way are made.
func TestHistory_ForgetAndCloseWaitForCommits(t *testing.T) {
	synctest.Test(t, testHistoryForgetAndCloseWaitForCommits)
}

func testHistoryForgetAndCloseWaitForCommits(t *testing.T) {
	ctx := t.Context()
	mem := memory.New()
	for _, id := range []string{"a", "b"} {
		mem.Create(ctx, store.Record{ID: id, Key: "acp:" + id, Cwd: "/w"})
	}
	st := &gatedStore{Store: mem, release: make(chan struct{})}
	h := NewHistory(st, nil)
	var appends sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		if _, err := h.Attach(ctx, "acp:"+id, id); err != nil {
			t.Fatal(err)
		}
		appends.Go(func() {
			if err := h.Append(ctx, "acp:"+id, gateway.Turn{StopReason: gateway.StopEndTurn, Messages: turn("p", "a").Messages}); err != nil {
				t.Error(err)
			}
		})
	}
	waitPending(t, h, 2)
	forgot, closed := make(chan struct{}), make(chan struct{})
	go func() { h.Forget(ctx, "acp:a"); close(forgot) }()
	go func() { h.Close(); close(closed) }()
	select {
	case <-forgot:
		t.Fatal("Forget returned before the commit")
	case <-closed:
		t.Fatal("Close returned before the commits")
	case <-time.After(50 * time.Millisecond):
	}
	close(st.release)
	<-forgot
	<-closed
	appends.Wait()
	for _, id := range []string{"a", "b"} {
		if got, _ := mem.Turns(ctx, id); len(got) != 1 {
			t.Errorf("session %s: %d turns after Close, want 1", id, len(got))
		}
	}
}
