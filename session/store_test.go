package session

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

func turn(prompt, answer string) Turn {
	return Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{
		{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(prompt)}},
		{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(answer)}},
	}}
}

// oldStore writes a store at schema version v holding the session
// sess_old (title "old one"), runs each of stmts on it, and returns its path.
func oldStore(t *testing.T, v int, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	old, err := openSQLite(t.Context(), path, v)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	stmts = append([]string{`INSERT INTO sessions (id, gateway_key, cwd, title, created_at, updated_at) VALUES ('sess_old', 'acp:sess_old', '/w', 'old one', 1, 2)`}, stmts...)
	for _, q := range stmts {
		if _, err := old.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestSQLite_MigratesSchemaVersion1(t *testing.T) {
	path := oldStore(t, 1, `INSERT INTO turns (session_id, seq, messages) VALUES ('sess_old', 1, '[{"Role":"user","Content":[{"Type":"text","Text":"hi"}]}]')`)
	st, err := OpenSQLite(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var v int
	st.db.QueryRow("PRAGMA user_version").Scan(&v)
	turns, err := st.Turns(t.Context(), "sess_old")
	if v != SchemaVersion || err != nil || len(turns) != 1 || turns[0].StopReason != gateway.StopEndTurn || turns[0].Messages[0].Content[0].Text != "hi" {
		t.Errorf("version %d, turns %+v, %v", v, turns, err)
	}
	if err := st.AppendTurn(t.Context(), "sess_old", turn("new", "turn")); err != nil {
		t.Errorf("writing after the upgrade: %v", err)
	}
}

// A store of schema version 4 (before usage and compaction were kept)
// opens at the current version: its turns read zero usage and no
// compaction, its sessions zero usage, and new turns keep both.
func TestSQLite_MigratesSchemaVersion4(t *testing.T) {
	path := oldStore(t, 4,
		`INSERT INTO turns (session_id, seq, messages, stop_reason) VALUES ('sess_old', 1, '[{"role":"user","content":[{"type":"text","text":"hi"}]}]', 'cancelled')`)
	st, err := OpenSQLite(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var v int
	st.db.QueryRow("PRAGMA user_version").Scan(&v)
	turns, err := st.Turns(t.Context(), "sess_old")
	if v != SchemaVersion || err != nil || len(turns) != 1 || turns[0].StopReason != gateway.StopCancelled || turns[0].Messages[0].Content[0].Text != "hi" ||
		turns[0].Usage != (gateway.Usage{}) || turns[0].Compaction != nil {
		t.Fatalf("version %d, turns %+v, %v", v, turns, err)
	}
	checkUsageAfterUpgrade(t, st)
}

func TestSQLite_RefusesNewerAndBrokenDatabases(t *testing.T) {
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.db")
	db, _ := sql.Open("sqlite", newer)
	db.Exec("PRAGMA user_version = 99")
	db.Close()
	if _, err := OpenSQLite(t.Context(), newer); err == nil || !strings.Contains(err.Error(), newer) || !strings.Contains(err.Error(), "newer") {
		t.Errorf("newer schema: %v", err)
	}
	corrupt := filepath.Join(dir, "corrupt.db")
	os.WriteFile(corrupt, []byte(strings.Repeat("not a database ", 100)), 0o600)
	if _, err := OpenSQLite(t.Context(), corrupt); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), corrupt) {
		t.Errorf("corrupt file: %v", err)
	}
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o500)
	if os.Getuid() != 0 { // root writes anywhere
		if _, err := OpenSQLite(t.Context(), filepath.Join(ro, "s.db")); err == nil {
			t.Error("an unwritable directory was accepted")
		}
	}
}

func TestSQLite_ConcurrentWritersShareTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	var stores []*SQLite
	for range 2 {
		st, err := OpenSQLite(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores = append(stores, st)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for w, st := range stores {
		for g := range 4 {
			wg.Go(func() {
				id := fmt.Sprintf("sess_%d_%d", w, g)
				if err := st.Create(ctx, Record{ID: id, Key: id, Cwd: "/w", Created: time.Now(), Updated: time.Now()}); err != nil {
					errs <- err
					return
				}
				for i := range 25 {
					if err := st.AppendTurn(ctx, id, turn(fmt.Sprint(i), "x")); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent write: %v", err)
	}
	for w, st := range stores {
		turns, err := st.Turns(ctx, fmt.Sprintf("sess_%d_0", 1-w))
		if err != nil || len(turns) != 25 {
			t.Errorf("store %d sees %d turns of the other's session, %v", w, len(turns), err)
		}
	}
}

func TestHistory_AttachAppendForget(t *testing.T) {
	st := NewMemory()
	ctx := t.Context()
	st.Create(ctx, Record{ID: "s", Key: "acp:s", Cwd: "/w"})
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
	Store
	release chan struct{}
}

func (g *gatedStore) AppendTurn(ctx context.Context, id string, t Turn) error {
	<-g.release
	return g.Store.AppendTurn(ctx, id, t)
}

// waitPending waits until n sessions have a commit under way in h.
func waitPending(t *testing.T, h *History, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h.mu.Lock()
		got := len(h.pending)
		h.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions with a commit under way within 30s, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Append returns once the turn is committed: while the store is held the
// turn is in neither the view nor the store, and Flush and Attach wait for
// it; the commits land in order.
func TestHistory_AppendWaitsForTheCommitInOrder(t *testing.T) {
	ctx := t.Context()
	mem := NewMemory()
	mem.Create(ctx, Record{ID: "s", Key: "acp:s", Cwd: "/w"})
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
	ctx := t.Context()
	mem := NewMemory()
	for _, id := range []string{"a", "b"} {
		mem.Create(ctx, Record{ID: id, Key: "acp:" + id, Cwd: "/w"})
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

// BenchmarkSQLiteAppendTurn is the per-turn commit of the default store: a
// /call turn (prompt, tool call, result) in one transaction, made before
// the turn's response (History).
func BenchmarkSQLiteAppendTurn(b *testing.B) {
	st, err := OpenSQLite(b.Context(), filepath.Join(b.TempDir(), "sessions.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Create(b.Context(), Record{ID: "s", Key: "acp:s", Cwd: "/w"}); err != nil {
		b.Fatal(err)
	}
	tr := turn(`/call mcp__fixture__echo {"message":"hi"}`, "Echo: hi")
	b.ResetTimer()
	for b.Loop() {
		if err := st.AppendTurn(b.Context(), "s", tr); err != nil {
			b.Fatal(err)
		}
	}
}

// checkUsageAfterUpgrade checks a store upgraded from before usage and
// compaction were kept, holding the session "sess_old" titled "old one":
// the session reads zero usage, and a new turn keeps its usage and
// compaction and adds to the session's.
func checkUsageAfterUpgrade(t *testing.T, st Store) {
	t.Helper()
	if rec, err := st.Get(t.Context(), "sess_old"); err != nil || rec.Usage != (gateway.Usage{}) || rec.Title != "old one" {
		t.Errorf("the old session: %+v, %v; want zero usage", rec, err)
	}
	tr := turn("new", "turn")
	tr.Usage = gateway.Usage{InputTokens: 10, OutputTokens: 2, Requests: 1, Cost: 0.125}
	tr.Compaction = &gateway.Compaction{Summary: "said hi", From: 1}
	if err := st.AppendTurn(t.Context(), "sess_old", tr); err != nil {
		t.Fatalf("writing after the upgrade: %v", err)
	}
	turns, err := st.Turns(t.Context(), "sess_old")
	if err != nil || len(turns) != 2 || turns[1].Usage != tr.Usage || !reflect.DeepEqual(turns[1].Compaction, tr.Compaction) {
		t.Errorf("turns after the upgrade: %+v, %v", turns, err)
	}
	if rec, _ := st.Get(t.Context(), "sess_old"); rec.Usage != tr.Usage {
		t.Errorf("usage after the upgrade: %+v, want the new turn's %+v", rec.Usage, tr.Usage)
	}
}
