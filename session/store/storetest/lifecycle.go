package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// setTitle: a title set before the first turn is kept by it, one set
// after replaces the automatic title, List shows it, and the updated time
// does not move.
func setTitle(t *testing.T, st store.Store) {
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	create(t, st, store.Record{ID: "early", Key: "acp:early", Cwd: "/w", Created: now, Updated: now})
	create(t, st, store.Record{ID: "late", Key: "acp:late", Cwd: "/w", Created: now, Updated: now})
	if err := st.SetTitle(ctx, "early", "Chosen"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"early", "late"} {
		if err := st.AppendTurn(ctx, id, Turn("automatic title", "ok")); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := st.Get(ctx, "early"); r.Title != "Chosen" {
		t.Errorf("title set before the first turn = %q after it, want %q", r.Title, "Chosen")
	}
	before, _ := st.Get(ctx, "late")
	if before.Title != "automatic title" {
		t.Fatalf("automatic title = %q", before.Title)
	}
	if err := st.SetTitle(ctx, "late", "Renamed"); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendTurn(ctx, "late", Turn("another", "ok")); err != nil {
		t.Fatal(err)
	}
	after, _ := st.Get(ctx, "late")
	if after.Title != "Renamed" {
		t.Errorf("title after SetTitle and a turn = %q, want %q", after.Title, "Renamed")
	}
	recs, _, err := st.List(ctx, store.ListOptions{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("List = %+v, %v", recs, err)
	}
	for _, r := range recs {
		if want := map[string]string{"early": "Chosen", "late": "Renamed"}[r.ID]; r.Title != want {
			t.Errorf("List: %s titled %q, want %q", r.ID, r.Title, want)
		}
	}
	if err := st.SetTitle(ctx, "late", "Again"); err != nil {
		t.Fatal(err)
	}
	if r, _ := st.Get(ctx, "late"); !r.Updated.Equal(after.Updated) {
		t.Errorf("SetTitle moved the updated time from %v to %v", after.Updated, r.Updated)
	}
}

// setMode: a new session's mode is "" (the configuration's default) unless
// Create was given one; SetMode replaces it, as given, read back by Get and
// List, and "" clears it; it changes nothing else of the session (model,
// title, updated time) nor of another, and a turn leaves the mode alone.
func setMode(t *testing.T, st store.Store) {
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	create(t, st, store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Title: "t", Model: "m", Created: now, Updated: now})
	create(t, st, store.Record{ID: "given", Key: "acp:given", Cwd: "/w", Mode: "read-only", Created: now, Updated: now})
	mode := func(id string) string {
		t.Helper()
		r, err := st.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		return r.Mode
	}
	if m := mode("s"); m != "" {
		t.Errorf("a new session's mode = %q, want \"\"", m)
	}
	if m := mode("given"); m != "read-only" {
		t.Errorf("a session created in read-only reads mode %q", m)
	}
	for _, m := range []string{"full-access", "workspace-write", "not a mode, kept as given"} {
		if err := st.SetMode(ctx, "s", m); err != nil {
			t.Fatalf("SetMode(%q): %v", m, err)
		}
		if got := mode("s"); got != m {
			t.Errorf("after SetMode(%q): mode %q", m, got)
		}
	}
	if err := st.SetMode(ctx, "s", "full-access"); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Get(ctx, "s"); err != nil || r.Mode != "full-access" || r.Model != "m" || r.Title != "t" || !r.Updated.Equal(now) {
		t.Errorf("after SetMode: %+v, %v; want only the mode changed", r, err)
	}
	if m := mode("given"); m != "read-only" {
		t.Errorf("SetMode of another session changed this one's mode to %q", m)
	}
	recs, _, err := st.List(ctx, store.ListOptions{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("List = %+v, %v", recs, err)
	}
	for _, r := range recs {
		if want := map[string]string{"s": "full-access", "given": "read-only"}[r.ID]; r.Mode != want {
			t.Errorf("List: %s in mode %q, want %q", r.ID, r.Mode, want)
		}
	}
	if err := st.AppendTurn(ctx, "s", Turn("hello", "hi")); err != nil {
		t.Fatal(err)
	}
	if m := mode("s"); m != "full-access" {
		t.Errorf("after a turn: mode %q, want full-access", m)
	}
	if err := st.SetMode(ctx, "s", ""); err != nil {
		t.Fatal(err)
	}
	if m := mode("s"); m != "" {
		t.Errorf("after SetMode(\"\"): mode %q, want \"\" (the configuration's default)", m)
	}
}

// deleteSession: Delete removes the record, its turns (with their usage
// and compaction) and leaves other sessions alone; a second Delete, and
// every read of the deleted session, is ErrNotFound; the id can be used
// again for a new session, which starts empty.
func deleteSession(t *testing.T, st store.Store) {
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	for _, id := range []string{"gone", "kept"} {
		create(t, st, store.Record{ID: id, Key: "acp:" + id, Cwd: "/w", Created: now, Updated: now})
		if err := st.SetMode(ctx, id, "full-access"); err != nil {
			t.Fatal(err)
		}
		turn := Turn("hello "+id, "hi")
		turn.Usage = gateway.Usage{InputTokens: 10, OutputTokens: 2, Requests: 1}
		if err := st.AppendTurn(ctx, id, turn); err != nil {
			t.Fatal(err)
		}
		turn = Turn("compact", "summary")
		turn.Compaction = &gateway.Compaction{Summary: "s", From: 2}
		if err := st.AppendTurn(ctx, id, turn); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delete(ctx, "gone"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := st.Get(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if _, err := st.Turns(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Turns after Delete: %v, want ErrNotFound", err)
	}
	if err := st.Delete(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete twice: %v, want ErrNotFound", err)
	}
	if err := st.AppendTurn(ctx, "gone", Turn("late", "turn")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AppendTurn after Delete: %v, want ErrNotFound", err)
	}
	recs, _, err := st.List(ctx, store.ListOptions{})
	if err != nil || len(recs) != 1 || recs[0].ID != "kept" {
		t.Errorf("List after Delete = %+v, %v; want only kept", recs, err)
	}
	if turns, err := st.Turns(ctx, "kept"); err != nil || len(turns) != 2 || turns[1].Compaction == nil {
		t.Errorf("the other session's turns = %+v, %v", turns, err)
	}
	if r, _ := st.Get(ctx, "kept"); r.Usage.InputTokens != 10 {
		t.Errorf("the other session's usage = %+v", r.Usage)
	}
	// Nothing of the deleted session is left behind under its id.
	create(t, st, store.Record{ID: "gone", Key: "acp:gone", Cwd: "/w", Created: now, Updated: now})
	r, err := st.Get(ctx, "gone")
	if err != nil || r.Title != "" || r.Mode != "" || r.Usage != (gateway.Usage{}) {
		t.Errorf("a new session under the deleted id = %+v, %v; want it empty", r, err)
	}
	if turns, err := st.Turns(ctx, "gone"); err != nil || len(turns) != 0 {
		t.Errorf("a new session under the deleted id has turns %+v, %v", turns, err)
	}
	if err := st.AppendTurn(ctx, "gone", Turn("fresh", "start")); err != nil {
		t.Fatal(err)
	}
	if turns, err := st.Turns(ctx, "gone"); err != nil || len(turns) != 1 || turns[0].Messages[0].Content[0].Text != "fresh" {
		t.Errorf("turns of the new session = %+v, %v", turns, err)
	}
}

// setServerChanges: a new session has no server changes unless Create was
// given some; SetServerChanges replaces them byte for byte, read back by
// Get and List, nil clears them, and nothing else of the session (nor of
// another) changes, nor does a turn change them.
func setServerChanges(t *testing.T, st store.Store) {
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	create(t, st, store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Title: "t", Mode: "read-only", Created: now, Updated: now})
	create(t, st, store.Record{ID: "given", Key: "acp:given", Cwd: "/w", ServerChanges: []byte(`{"removed":["x"]}`), Created: now, Updated: now})
	changes := func(id string) string {
		t.Helper()
		r, err := st.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		return string(r.ServerChanges)
	}
	if c := changes("s"); c != "" {
		t.Errorf("a new session's server changes = %q, want none", c)
	}
	if c := changes("given"); c != `{"removed":["x"]}` {
		t.Errorf("a session created with server changes reads %q", c)
	}
	want := `{"added":[{"name":"db","transport":"stdio","command":"db-mcp"}],"disabled":["fs"]}`
	if err := st.SetServerChanges(ctx, "s", []byte(want)); err != nil {
		t.Fatalf("SetServerChanges: %v", err)
	}
	if r, err := st.Get(ctx, "s"); err != nil || string(r.ServerChanges) != want || r.Mode != "read-only" || r.Title != "t" || !r.Updated.Equal(now) {
		t.Errorf("after SetServerChanges: %+v, %v; want only the changes set", r, err)
	}
	if c := changes("given"); c != `{"removed":["x"]}` {
		t.Errorf("SetServerChanges of another session changed this one's to %q", c)
	}
	recs, _, err := st.List(ctx, store.ListOptions{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("List = %+v, %v", recs, err)
	}
	for _, r := range recs {
		if w := map[string]string{"s": want, "given": `{"removed":["x"]}`}[r.ID]; string(r.ServerChanges) != w {
			t.Errorf("List: %s has server changes %q, want %q", r.ID, r.ServerChanges, w)
		}
	}
	if err := st.AppendTurn(ctx, "s", Turn("hello", "hi")); err != nil {
		t.Fatal(err)
	}
	if c := changes("s"); c != want {
		t.Errorf("after a turn: server changes %q, want %q", c, want)
	}
	if err := st.SetServerChanges(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if c := changes("s"); c != "" {
		t.Errorf("after SetServerChanges(nil): %q, want none", c)
	}
	if err := st.SetServerChanges(ctx, "nope", []byte(want)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetServerChanges of an unknown session = %v, want ErrNotFound", err)
	}
}
