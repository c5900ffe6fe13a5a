package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// fleetStore is a memory store with leases of its own by whose tokens it
// fences turns, as the PostgreSQL store does: Cores over one fleetStore
// are replicas of a fleet. lose and expire take a holder's lease away.
type fleetStore struct {
	*memory.Store

	mu    sync.Mutex
	local store.LocalLeases
	holds map[string]fleetHold // the current hold of each session
	fail  error                // Acquire's error, when set
}

type fleetHold struct {
	lease *store.Lease // the local lease underneath
	lost  chan struct{}
}

var (
	_ store.Leases      = (*fleetStore)(nil)
	_ store.FencedStore = (*fleetStore)(nil)
)

func newFleetStore() *fleetStore {
	return &fleetStore{Store: memory.New(), holds: map[string]fleetHold{}}
}

func (f *fleetStore) Acquire(ctx context.Context, id, owner string) (*store.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	l, err := f.local.Acquire(ctx, id, owner)
	if err != nil {
		return nil, err
	}
	lost := make(chan struct{})
	f.holds[id] = fleetHold{lease: l, lost: lost}
	return store.NewLease(id, owner, l.Token, lost, l.Release), nil
}

// lose takes the lease of session id from its holder as a broken database
// connection does: others may take it, and its Lost closes.
func (f *fleetStore) lose(id string) {
	close(f.expire(id).lost)
}

// expire takes the lease of session id from its holder without telling
// it (its Lost stays open, as before a broken connection is noticed).
func (f *fleetStore) expire(id string) fleetHold {
	f.mu.Lock()
	h := f.holds[id]
	delete(f.holds, id)
	f.mu.Unlock()
	_ = h.lease.Release(context.Background())
	return h
}

func (f *fleetStore) failLeases(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

func (f *fleetStore) AppendTurnFenced(ctx context.Context, id string, token int64, turn store.Turn) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.local.Latest(id) != token {
		return store.ErrFenced
	}
	return f.Store.AppendTurn(ctx, id, turn)
}

// wait returns what ch gives, failing t if it gives nothing within a
// minute.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("%s: timed out", what)
	}
	panic("unreachable")
}
