package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/storetest"
)

func turn(prompt, answer string) store.Turn {
	return store.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{
		{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(prompt)}},
		{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(answer)}},
	}}
}

// oldStore writes a store at schema version v holding the session
// sess_old (title "old one"), runs each of stmts on it, and returns its path.
func oldStore(t *testing.T, v int, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	old, err := open(t.Context(), path, v)
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
	st, err := Open(t.Context(), path)
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
	st, err := Open(t.Context(), path)
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
	storetest.CheckUsageAfterUpgrade(t, st)
}

// A store of schema version 5 (before modes were kept) opens at the
// current version with every session's mode "", and keeps modes set after.
func TestSQLite_MigratesSchemaVersion5(t *testing.T) {
	st, err := Open(t.Context(), oldStore(t, 5))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var v int
	var mode string
	st.db.QueryRow("PRAGMA user_version").Scan(&v)
	err = st.db.QueryRow(`SELECT mode FROM sessions WHERE id = 'sess_old'`).Scan(&mode)
	if v != SchemaVersion || err != nil || mode != "" {
		t.Fatalf("version %d, the old session's mode %q, %v; want %d and \"\"", v, mode, err, SchemaVersion)
	}
	storetest.CheckModeAfterUpgrade(t, st)
}

// A store of schema version 6 (before server changes were kept) opens at
// the current version with none, and keeps those set after.
func TestSQLite_MigratesSchemaVersion6(t *testing.T) {
	st, err := Open(t.Context(), oldStore(t, 6))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var v int
	st.db.QueryRow("PRAGMA user_version").Scan(&v)
	if v != SchemaVersion {
		t.Fatalf("version %d, want %d", v, SchemaVersion)
	}
	storetest.CheckServerChangesAfterUpgrade(t, st)
}

// A store of schema version 7 (before a turn's two steps) opens at the
// current version with every stored turn counted as folded into its
// record: the session's usage is not added twice, and new turns add to it.
func TestSQLite_MigratesSchemaVersion7(t *testing.T) {
	path := oldStore(t, 7,
		`INSERT INTO turns (session_id, seq, messages, usage) VALUES ('sess_old', 1, '[{"role":"user","content":[{"type":"text","text":"hi"}]}]', '{"inputTokens":5}')`,
		`UPDATE sessions SET usage_input = 5`)
	st, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r, err := st.Get(t.Context(), "sess_old"); err != nil || r.Usage.InputTokens != 5 || r.Title != "old one" {
		t.Fatalf("after the upgrade: usage %+v, title %q, %v; want 5 input tokens, \"old one\"", r.Usage, r.Title, err)
	}
	tr := turn("next", "turn")
	tr.Usage = gateway.Usage{InputTokens: 7}
	if err := st.AppendTurn(t.Context(), "sess_old", tr); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Get(t.Context(), "sess_old"); err != nil || r.Usage.InputTokens != 12 {
		t.Errorf("after a new turn: usage %+v, %v; want 12 input tokens", r.Usage, err)
	}
}

// lag undoes in the file what the second step of session s's turns did,
// as a process killed between the two steps of each leaves it.
func lag(t *testing.T, st *Store, s string, created int64) {
	t.Helper()
	if _, err := st.db.Exec(`UPDATE sessions SET applied_seq = 0, title = '', updated_at = ?, `+
		`usage_input = 0, usage_cache_read = 0, usage_cache_write = 0, usage_output = 0, usage_thought = 0, usage_requests = 0, usage_cost = 0, usage_unpriced = 0 WHERE id = ?`, created, s); err != nil {
		t.Fatal(err)
	}
}

// A turn is stored in two steps: its row, then its session's record. A
// record left behind (the agent killed between the two) is caught up from
// the stored turns when the file is opened again, and, in a process that
// goes on, at the session's next turn: updated time, title and usage are
// those of every turn, once each.
func TestSQLite_RecordCaughtUpAfterACrashBetweenTheSteps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	created := time.UnixMilli(1000)
	if err := st.Create(t.Context(), store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Created: created, Updated: created}); err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(5000)
	for i := range 3 {
		tr := turn(fmt.Sprintf("prompt %d", i), "answer")
		tr.Usage = gateway.Usage{InputTokens: 10, OutputTokens: 1, Requests: 1}
		tr.At = at
		if err := st.AppendTurn(t.Context(), "s", tr); err != nil {
			t.Fatal(err)
		}
	}
	want, err := st.Get(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if want.Usage.InputTokens != 30 || want.Title != "prompt 0" || !want.Updated.Equal(time.UnixMilli(5002)) {
		t.Fatalf("after 3 turns stored at 5000 ms: usage %+v, title %q, updated %v; want 30 input tokens, \"prompt 0\", 5002 ms", want.Usage, want.Title, want.Updated.UnixMilli())
	}
	lag(t, st, "s", created.UnixMilli())
	st.Close()

	again, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got, err := again.Get(t.Context(), "s")
	if err != nil || got.Usage != want.Usage || got.Title != want.Title || !got.Updated.Equal(want.Updated) {
		t.Fatalf("reopened after the crash: %+v, %v; want usage %+v, title %q, updated %v", got, err, want.Usage, want.Title, want.Updated)
	}

	lag(t, again, "s", created.UnixMilli()) // and the process goes on
	tr := turn("prompt 3", "answer")
	tr.Usage = gateway.Usage{InputTokens: 10, OutputTokens: 1, Requests: 1}
	if err := again.AppendTurn(t.Context(), "s", tr); err != nil {
		t.Fatal(err)
	}
	got, err = again.Get(t.Context(), "s")
	if err != nil || got.Usage.InputTokens != 40 || got.Usage.Requests != 4 || got.Title != "prompt 0" || !got.Updated.After(want.Updated) {
		t.Errorf("the next turn after a lagging record: usage %+v, title %q, updated %v, %v; want 40 input tokens in 4 requests, \"prompt 0\", after %v",
			got.Usage, got.Title, got.Updated, err, want.Updated)
	}
}

// AppendTurn returns once the turn's row is committed, and a read right
// after it sees the turn in the session's record: reads wait for the
// second step of the turns appended before them.
func TestSQLite_ReadsSeeTheTurnsAppendedBefore(t *testing.T) {
	st, err := Open(t.Context(), filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Create(t.Context(), store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Created: time.Now(), Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		tr := turn("p", "a")
		tr.Usage = gateway.Usage{InputTokens: 1}
		if err := st.AppendTurn(t.Context(), "s", tr); err != nil {
			t.Fatal(err)
		}
		r, err := st.Get(t.Context(), "s")
		if err != nil || r.Usage.InputTokens != int64(i+1) {
			t.Fatalf("Get after turn %d: %d input tokens, %v", i+1, r.Usage.InputTokens, err)
		}
		list, _, err := st.List(t.Context(), store.ListOptions{})
		if err != nil || len(list) != 1 || list[0].Usage.InputTokens != int64(i+1) {
			t.Fatalf("List after turn %d: %+v, %v", i+1, list, err)
		}
	}
}

// A session's mode and model are in the file: a store opened on it again
// reads them.
func TestSQLite_ModeAndModelSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.Create(t.Context(), store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetMode(t.Context(), "s", "full-access"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetModel(t.Context(), "s", "openai:x"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	again, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if r, err := again.Get(t.Context(), "s"); err != nil || r.Mode != "full-access" || r.Model != "openai:x" {
		t.Errorf("after reopening: mode %q, model %q, %v; want full-access and openai:x", r.Mode, r.Model, err)
	}
}

func TestSQLite_RefusesNewerAndBrokenDatabases(t *testing.T) {
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.db")
	db, _ := sql.Open("sqlite", newer)
	db.Exec("PRAGMA user_version = 99")
	db.Close()
	_, err := Open(t.Context(), newer)
	var schema *store.SchemaError
	var fe *store.FileError
	if !errors.As(err, &schema) || *schema != (store.SchemaError{Have: 99, Want: SchemaVersion}) || !errors.As(err, &fe) || fe.Path != newer {
		t.Errorf("newer schema: %v; want a *store.SchemaError{99, %d} in a *store.FileError naming %s", err, SchemaVersion, newer)
	}
	if want := fmt.Sprintf("session store %s: the database has schema version 99, newer than this acp-agent's %d", newer, SchemaVersion); err == nil || err.Error() != want {
		t.Errorf("newer schema: %q, want %q (what to do is the front end's)", err, want)
	}
	corrupt := filepath.Join(dir, "corrupt.db")
	os.WriteFile(corrupt, []byte(strings.Repeat("not a database ", 100)), 0o600)
	if _, err := Open(t.Context(), corrupt); !errors.Is(err, store.ErrDamaged) || !errors.As(err, &fe) || fe.Path != corrupt {
		t.Errorf("corrupt file: %v", err)
	}
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o500)
	if os.Getuid() != 0 { // root writes anywhere
		if _, err := Open(t.Context(), filepath.Join(ro, "s.db")); err == nil {
			t.Error("an unwritable directory was accepted")
		}
	}
}

func TestSQLite_ConcurrentWritersShareTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	var stores []*Store
	for range 2 {
		st, err := Open(t.Context(), path)
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
				if err := st.Create(ctx, store.Record{ID: id, Key: id, Cwd: "/w", Created: time.Now(), Updated: time.Now()}); err != nil {
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

// BenchmarkSQLiteAppendTurn is the per-turn commit of the default store: a
// /call turn (prompt, tool call, result), one after the other. ns/op is
// both steps of a turn; stored-us/turn is the first alone, AppendTurn,
// what the turn's response waits for (History): its row committed. The
// second, the session's record, runs after the response; here each turn
// waits for the one before it to be done with both.
func BenchmarkSQLiteAppendTurn(b *testing.B) {
	st, err := Open(b.Context(), filepath.Join(b.TempDir(), "sessions.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Create(b.Context(), store.Record{ID: "s", Key: "acp:s", Cwd: "/w"}); err != nil {
		b.Fatal(err)
	}
	tr := turn(`/call mcp__fixture__echo {"message":"hi"}`, "Echo: hi")
	var stored time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		if err := st.AppendTurn(b.Context(), "s", tr); err != nil {
			b.Fatal(err)
		}
		stored += time.Since(start)
		n++
		if err := st.settle(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(stored.Microseconds())/float64(n), "stored-us/turn")
}

// The applier reads a batch's seqs back by rowid, in one query over
// their range, which another process's turns may share: each turn gets its
// own seq, and a turn whose row is gone, or whose rowid is now another
// session's, is left out (its record caught up later).
func TestSQLite_SeqsReadBackByRowid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	other, err := Open(t.Context(), path) // another process on the same file
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, id := range []string{"a", "b"} {
		if err := st.Create(t.Context(), store.Record{ID: id, Key: "acp:" + id, Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range []*Store{st, other, st, other, st} { // a b a b a
		if err := w.AppendTurn(t.Context(), []string{"a", "b"}[i%2], turn(fmt.Sprint("p", i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	rs, err := st.db.QueryContext(t.Context(), `SELECT rowid, session_id, seq FROM turns ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	var batch, want []applied
	for rs.Next() {
		var a applied
		if err := rs.Scan(&a.rowid, &a.id, &a.seq); err != nil {
			t.Fatal(err)
		}
		want = append(want, a)
		if a.id == "a" {
			batch = append(batch, applied{id: "a", rowid: a.rowid}) // this process's, seq unknown
		}
	}
	rs.Close()
	if len(want) != 5 {
		t.Fatalf("%d turns stored, want 5", len(want))
	}
	batch = append(batch,
		applied{id: "a", rowid: want[1].rowid},     // b's row: not a's
		applied{id: "a", rowid: want[4].rowid + 1}, // no row
		applied{id: "b", rowid: 1 << 40, seq: 7},   // known already: kept as is
	)
	got := st.seqs(t.Context(), batch)
	wantSeqs := []applied{{id: "a", rowid: want[0].rowid, seq: 1}, {id: "a", rowid: want[2].rowid, seq: 2}, {id: "a", rowid: want[4].rowid, seq: 3}, {id: "b", rowid: 1 << 40, seq: 7}}
	if len(got) != len(wantSeqs) {
		t.Fatalf("seqs kept %d turns, want %d: %+v", len(got), len(wantSeqs), got)
	}
	for i, w := range wantSeqs {
		if g := got[i]; g.id != w.id || g.rowid != w.rowid || g.seq != w.seq {
			t.Errorf("turn %d: %s rowid %d seq %d, want %s rowid %d seq %d", i, g.id, g.rowid, g.seq, w.id, w.rowid, w.seq)
		}
	}
}

// Turns of one session appended side by side can reach the second step
// out of their seq order, or with a gap (the turn between them in another
// batch): each is folded once, in seq order, whatever the batches.
func TestSQLite_TurnsFoldedOnceWhateverTheirOrder(t *testing.T) {
	st, err := Open(t.Context(), filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Create(t.Context(), store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Created: time.UnixMilli(1), Updated: time.UnixMilli(1)}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		tr := turn(fmt.Sprint("p", i), "a")
		tr.Usage = gateway.Usage{InputTokens: 1 << i}
		if err := st.AppendTurn(t.Context(), "s", tr); err != nil {
			t.Fatal(err)
		}
	}
	applies := func(seqs ...int64) []applied {
		var out []applied
		for _, q := range seqs {
			out = append(out, applied{id: "s", seq: q, at: 5000, turn: turn(fmt.Sprint("p", q-1), "a"), usage: gateway.Usage{InputTokens: 1 << (q - 1)}})
		}
		return out
	}
	for _, batches := range [][][]applied{
		{applies(3, 1, 2, 4)},
		{applies(2, 4), applies(1, 3)},
		{applies(1, 3), applies(2), applies(4)},
		{applies(4), applies(3, 2, 1)},
	} {
		lag(t, st, "s", 1)
		for _, b := range batches {
			st.applyBatch(t.Context(), b)
		}
		if r, err := st.Get(t.Context(), "s"); err != nil || r.Usage.InputTokens != 15 || r.Title != "p0" {
			t.Errorf("batches %v: %d input tokens, title %q, %v; want 15 (each turn once), \"p0\"", batches, r.Usage.InputTokens, r.Title, err)
		}
	}
}
