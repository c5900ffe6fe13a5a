package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

func TestForTenant_AnotherTenantsSessionIsUnknown(t *testing.T) {
	ctx := context.Background()
	shared := memory.New()
	alice, bob := store.ForTenant(shared, "alice", nil), store.ForTenant(shared, "bob", nil)
	now := time.Now()
	if err := alice.Create(ctx, store.Record{ID: "sess_a", Key: "acp:sess_a", Cwd: "/w", Created: now, Updated: now, Tenant: "bob"}); err != nil {
		t.Fatal(err)
	}
	rec, err := shared.Get(ctx, "sess_a")
	if err != nil || rec.Tenant != "alice" {
		t.Fatalf("the record's tenant = %q (%v), want alice whatever Create was given", rec.Tenant, err)
	}
	turn := store.Turn{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{{Type: gateway.ContentText, Text: "hi"}}}}, StopReason: gateway.StopEndTurn}
	if err := alice.AppendTurn(ctx, "sess_a", turn); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"Get":        func() error { _, err := bob.Get(ctx, "sess_a"); return err },
		"Turns":      func() error { _, err := bob.Turns(ctx, "sess_a"); return err },
		"AppendTurn": func() error { return bob.AppendTurn(ctx, "sess_a", turn) },
		"SetTitle":   func() error { return bob.SetTitle(ctx, "sess_a", "mine") },
		"SetModel":   func() error { return bob.SetModel(ctx, "sess_a", "m") },
		"SetMode":    func() error { return bob.SetMode(ctx, "sess_a", "full-access") },
		"SetServers": func() error { return bob.SetServers(ctx, "sess_a", nil) },
		"Delete":     func() error { return bob.Delete(ctx, "sess_a") },
	} {
		if err := f(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("bob's %s of alice's session: %v, want ErrNotFound", name, err)
		}
	}
	if rec, err := shared.Get(ctx, "sess_a"); err != nil || rec.Mode != "" || rec.Model != "" || rec.Title != "hi" {
		t.Errorf("after bob's writes the record is %+v (%v), want it as alice left it", rec, err)
	}
	if err := alice.SetMode(ctx, "sess_a", "read-only"); err != nil {
		t.Fatal(err)
	}
	if rec, err := alice.Get(ctx, "sess_a"); err != nil || rec.Mode != "read-only" {
		t.Errorf("alice's SetMode, then Get: mode %q (%v), want read-only", rec.Mode, err)
	}
	if recs, _, err := bob.List(ctx, store.ListOptions{Tenant: "alice"}); err != nil || len(recs) != 0 {
		t.Errorf("bob's List (asking for alice's) = %d records (%v), want none", len(recs), err)
	}
	if recs, _, err := alice.List(ctx, store.ListOptions{}); err != nil || len(recs) != 1 {
		t.Errorf("alice's List = %d records (%v), want 1", len(recs), err)
	}
	if turns, err := shared.Turns(ctx, "sess_a"); err != nil || len(turns) != 1 {
		t.Errorf("the session has %d turns (%v), want alice's one", len(turns), err)
	}
	if err := alice.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Get(ctx, "sess_a"); err != nil {
		t.Errorf("closing a view closed the shared store: %v", err)
	}
}

// failingStore fails every read with an error naming its database.
type failingStore struct{ store.Store }

func (failingStore) Get(context.Context, string) (store.Record, error) {
	return store.Record{}, errors.New("session store postgres://acp@db.internal/fleet: connection refused")
}

func TestForTenant_HidesTheStoresOwnErrors(t *testing.T) {
	ctx := context.Background()
	var logged []error
	hide := func(err error) error { logged = append(logged, err); return &store.HiddenError{Ref: "0badc0de"} }
	v := store.ForTenant(failingStore{memory.New()}, "alice", &store.TenantOptions{HideError: hide})
	_, err := v.Get(ctx, "sess_x")
	if err == nil || err.Error() != "the session store failed (ref 0badc0de); the gateway's operator finds the cause in its log" {
		t.Fatalf("Get: %v", err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0].Error(), "db.internal") {
		t.Errorf("the cause was not handed to HideError: %v", logged)
	}
	// The request's own errors pass as they are.
	plain := store.ForTenant(memory.New(), "alice", &store.TenantOptions{HideError: hide})
	if _, err := plain.Get(ctx, "sess_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing session: %v, want ErrNotFound", err)
	}
	// A lease held by another holder is said as it is; a failure is hidden.
	var ll store.LocalLeases
	leases := store.HideLeaseErrors(&ll, hide)
	if _, err := ll.Acquire(ctx, "s", "replica-a"); err != nil {
		t.Fatal(err)
	}
	var le *store.LeasedError
	if _, err := leases.Acquire(ctx, "s", "replica-b"); !errors.As(err, &le) {
		t.Errorf("a held lease: %v, want a *LeasedError", err)
	}
}
