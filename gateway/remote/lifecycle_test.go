package remote

import (
	"errors"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// sessions.setTitle and sessions.delete reach the gateway's store, scoped
// by tenant; a delete of a session a replica is running is busy, naming
// the session and the replica, and goes through once the lease is free.
func TestStore_SetTitleAndDeleteOverTheProtocol(t *testing.T) {
	backing := memory.New()
	leases := &store.LocalLeases{}
	_, url := wsServer(t, &ServerOptions{Tokens: map[string]string{"tok-a": "alice", "tok-b": "bob"}, Store: backing, Leases: leases, Replica: "replica-1"})
	as, bs := dialStore(t, "tok-a", url).Store(), dialStore(t, "tok-b", url).Store()
	ctx := t.Context()
	if err := as.Create(ctx, testRecord("a1")); err != nil {
		t.Fatal(err)
	}
	if err := as.AppendTurn(ctx, "a1", userTurn("first prompt")); err != nil {
		t.Fatal(err)
	}
	if err := as.SetTitle(ctx, "a1", "Chosen"); err != nil {
		t.Fatal(err)
	}
	if rec, err := backing.Get(ctx, "a1"); err != nil || rec.Title != "Chosen" {
		t.Fatalf("stored record after sessions.setTitle = %+v, %v", rec, err)
	}
	for name, err := range map[string]error{"SetTitle": bs.SetTitle(ctx, "a1", "bob's"), "Delete": bs.Delete(ctx, "a1")} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("bob's %s of alice's session: %v; want ErrNotFound", name, err)
		}
	}
	other, err := leases.Acquire(ctx, "a1", "replica-2")
	if err != nil {
		t.Fatal(err)
	}
	err = as.Delete(ctx, "a1")
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != CodeBusy || !strings.Contains(re.Message, "a1") || !strings.Contains(re.Message, "replica-2") {
		t.Fatalf("sessions.delete while replica-2 runs the session: %v; want busy naming a1 and replica-2", err)
	}
	if _, err := backing.Get(ctx, "a1"); err != nil {
		t.Fatalf("a busy delete deleted the session: %v", err)
	}
	_ = other.Release(ctx)
	if err := as.Delete(ctx, "a1"); err != nil {
		t.Fatalf("sessions.delete: %v", err)
	}
	if _, err := backing.Get(ctx, "a1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the session is still stored after sessions.delete: %v", err)
	}
	if err := as.Delete(ctx, "a1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("sessions.delete twice: %v; want ErrNotFound", err)
	}
	// The delete gave the lease back.
	l, err := leases.Acquire(ctx, "a1", "replica-2")
	if err != nil {
		t.Fatalf("sessions.delete kept the lease: %v", err)
	}
	_ = l.Release(ctx)
}
