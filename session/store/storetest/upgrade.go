package storetest

import (
	"reflect"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// CheckUsageAfterUpgrade checks a store upgraded from before usage and
// compaction were kept, holding the session "sess_old" titled "old one":
// the session reads zero usage, and a new turn keeps its usage and
// compaction and adds to the session's.
func CheckUsageAfterUpgrade(t *testing.T, st store.Store) {
	t.Helper()
	if rec, err := st.Get(t.Context(), "sess_old"); err != nil || rec.Usage != (gateway.Usage{}) || rec.Title != "old one" {
		t.Errorf("the old session: %+v, %v; want zero usage", rec, err)
	}
	tr := Turn("new", "turn")
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

// CheckModeAfterUpgrade checks a store upgraded from before modes were
// kept, holding the session "sess_old" titled "old one": the session
// reads mode "" (the configuration's default), and SetMode keeps a mode
// that Get and List then read.
func CheckModeAfterUpgrade(t *testing.T, st store.Store) {
	t.Helper()
	ctx := t.Context()
	if rec, err := st.Get(ctx, "sess_old"); err != nil || rec.Mode != "" || rec.Title != "old one" {
		t.Errorf("the old session: %+v, %v; want mode \"\"", rec, err)
	}
	if err := st.SetMode(ctx, "sess_old", "workspace-write"); err != nil {
		t.Fatalf("SetMode after the upgrade: %v", err)
	}
	if rec, err := st.Get(ctx, "sess_old"); err != nil || rec.Mode != "workspace-write" {
		t.Errorf("Get after SetMode: mode %q, %v; want workspace-write", rec.Mode, err)
	}
	if recs, _, err := st.List(ctx, store.ListOptions{}); err != nil || len(recs) != 1 || recs[0].Mode != "workspace-write" {
		t.Errorf("List after SetMode: %+v, %v; want sess_old in workspace-write", recs, err)
	}
}

// CheckServerChangesAfterUpgrade checks a store upgraded from before
// server changes were kept, holding the session "sess_old" titled "old
// one": the session reads none, and SetServerChanges keeps changes that
// Get then reads.
func CheckServerChangesAfterUpgrade(t *testing.T, st store.Store) {
	t.Helper()
	ctx := t.Context()
	if rec, err := st.Get(ctx, "sess_old"); err != nil || rec.ServerChanges != nil || rec.Title != "old one" {
		t.Errorf("the old session: %+v, %v; want no server changes", rec, err)
	}
	if err := st.SetServerChanges(ctx, "sess_old", []byte(`{"disabled":["fs"]}`)); err != nil {
		t.Fatalf("SetServerChanges after the upgrade: %v", err)
	}
	if rec, err := st.Get(ctx, "sess_old"); err != nil || string(rec.ServerChanges) != `{"disabled":["fs"]}` {
		t.Errorf("Get after SetServerChanges: %q, %v", rec.ServerChanges, err)
	}
}
