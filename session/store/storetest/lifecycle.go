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

// deleteSession: Delete removes the record, its turns (with their usage
// and compaction) and leaves other sessions alone; a second Delete, and
// every read of the deleted session, is ErrNotFound; the id can be used
// again for a new session, which starts empty.
func deleteSession(t *testing.T, st store.Store) {
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	for _, id := range []string{"gone", "kept"} {
		create(t, st, store.Record{ID: id, Key: "acp:" + id, Cwd: "/w", Created: now, Updated: now})
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
	if err != nil || r.Title != "" || r.Usage != (gateway.Usage{}) {
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
