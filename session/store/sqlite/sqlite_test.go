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
// /call turn (prompt, tool call, result) in one transaction, made before
// the turn's response (History).
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
	b.ResetTimer()
	for b.Loop() {
		if err := st.AppendTurn(b.Context(), "s", tr); err != nil {
			b.Fatal(err)
		}
	}
}
