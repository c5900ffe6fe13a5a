package remote

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// leaseLog is an Observer that records what it is told.
type leaseLog struct {
	mu     sync.Mutex
	events []string
}

var _ Observer = (*leaseLog)(nil)

func (l *leaseLog) LeaseWaited(outcome string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d < 0 {
		outcome += " (negative wait)"
	}
	l.events = append(l.events, "wait "+outcome)
}

func (l *leaseLog) LeaseLost() { l.mu.Lock(); l.events = append(l.events, "lost"); l.mu.Unlock() }

func (l *leaseLog) StoreCommit(turns int, _ time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("commit %d %v", turns, err))
}

func (l *leaseLog) log() []string { l.mu.Lock(); defer l.mu.Unlock(); return slices.Clone(l.events) }

func TestServer_ObserverHearsLeaseWaitsAndLosses(t *testing.T) {
	leases := &store.LocalLeases{}
	obs := &leaseLog{}
	_, url := wsServer(t, &ServerOptions{Store: memory.New(), Leases: leases, Replica: "replica-1", Observer: obs})
	c := dialStore(t, "", url)
	ctx := t.Context()
	if err := c.Store().Create(ctx, testRecord("s1")); err != nil {
		t.Fatal(err)
	}
	other, err := leases.Acquire(ctx, "s1", "replica-2")
	if err != nil {
		t.Fatal(err)
	}
	send := func() error {
		_, err := c.Send(ctx, gateway.SendRequest{SessionKey: "acp:s1", Message: []gateway.Content{gateway.TextContent("hi")}}, func(gateway.Event) {})
		return err
	}
	if send() == nil {
		t.Fatal("chat.send while replica-2 holds the lease succeeded")
	}
	_ = other.Release(ctx)
	if err := send(); err != nil {
		t.Fatal(err)
	}
	if err := c.Store().AppendTurn(ctx, "s1", userTurn("kept")); err != nil {
		t.Fatal(err)
	}
	if got, want := obs.log(), []string{"wait busy", "wait acquired", "commit 1 <nil>"}; !slices.Equal(got, want) {
		t.Errorf("observed %q, want %q", got, want)
	}

	// A lease lost mid-turn.
	lossy := &lossyLeases{}
	obs = &leaseLog{}
	_, url = wsServer(t, &ServerOptions{Store: memory.New(), Leases: lossy, Replica: "replica-1", Observer: obs})
	c = dialStore(t, "", url)
	if err := c.Store().Create(ctx, testRecord("s2")); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	if err := c.SetExtraTools(ctx, "acp:s2", []*gateway.Tool{blockingTool(started)}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Send(ctx, gateway.SendRequest{SessionKey: "acp:s2", Message: []gateway.Content{gateway.TextContent("/call wait {}")}}, func(gateway.Event) {})
		errc <- err
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn's tool never started")
	}
	lossy.mu.Lock()
	close(lossy.lost)
	lossy.mu.Unlock()
	select {
	case <-errc:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn went on after its lease was lost")
	}
	if got, want := obs.log(), []string{"wait acquired", "lost"}; !slices.Equal(got, want) {
		t.Errorf("observed %q, want %q", got, want)
	}
}
