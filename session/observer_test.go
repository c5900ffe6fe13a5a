package session

import (
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// countingObserver counts what an Observer is told; told is notified after
// each count.
type countingObserver struct {
	mu             sync.Mutex
	opened, closed int
	signIns        []string
	leaseWaits     []string // outcomes
	leasesLost     int
	told           testutil.Signal
}

var _ Observer = (*countingObserver)(nil)

// count runs f under the lock, then notifies told.
func (o *countingObserver) count(f func()) {
	o.mu.Lock()
	f()
	o.mu.Unlock()
	o.told.Notify()
}

func (o *countingObserver) SessionOpened() { o.count(func() { o.opened++ }) }
func (o *countingObserver) SessionClosed() { o.count(func() { o.closed++ }) }
func (o *countingObserver) SignIn(outcome string) {
	o.count(func() { o.signIns = append(o.signIns, outcome) })
}

func (o *countingObserver) LeaseWaited(outcome string, _ time.Duration) {
	o.count(func() { o.leaseWaits = append(o.leaseWaits, outcome) })
}

func (o *countingObserver) LeaseLost() { o.count(func() { o.leasesLost++ }) }

// leases returns the lease outcomes and losses told so far.
func (o *countingObserver) leases() (waits []string, lost int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.leaseWaits...), o.leasesLost
}

func (o *countingObserver) counts() (opened, closed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.opened, o.closed
}

func TestCore_ObserverCountsLiveSessions(t *testing.T) {
	obs := &countingObserver{}
	c, _ := newTestCore(t, CoreOptions{Observer: obs})
	a, err := c.Open(t.Context(), OpenRequest{Key: "a", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(t.Context(), OpenRequest{Key: "b", Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(t.Context(), OpenRequest{Key: "a", Cwd: t.TempDir()}); err == nil {
		t.Fatal("a second session with key a opened")
	}
	// Reopening a live session replaces its instance: one closed, one opened.
	if _, err := c.Open(t.Context(), OpenRequest{ID: a.ID(), Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if o, cl := obs.counts(); o != 3 || cl != 1 || len(c.sessions) != o-cl {
		t.Errorf("opened %d, closed %d with %d live; want 3, 1 and 2", o, cl, len(c.sessions))
	}
	if got := c.ServerStates(); len(got) != 0 {
		t.Errorf("ServerStates of sessions without servers = %v, want none", got)
	}
	c.Shutdown()
	if o, cl := obs.counts(); o != 3 || cl != 3 {
		t.Errorf("after Shutdown: opened %d, closed %d; want 3 and 3", o, cl)
	}
}

func TestSignIns_Outcomes(t *testing.T) {
	obs := &countingObserver{}
	si := &signIns{obs: obs, asked: map[string]bool{}}
	si.changed(bridge.ServerStatus{Name: "gh", State: bridge.StateConnected}) // no sign-in under way: nothing
	si.started("gh")
	si.started("jira")
	si.changed(bridge.ServerStatus{Name: "gh", State: bridge.StateConnecting}) // not an end
	si.changed(bridge.ServerStatus{Name: "gh", State: bridge.StateConnected})
	si.changed(bridge.ServerStatus{Name: "jira", State: bridge.StateFailed})
	si.changed(bridge.ServerStatus{Name: "jira", State: bridge.StateFailed}) // already told
	want := []string{"started", "started", "completed", "failed"}
	if len(obs.signIns) != len(want) {
		t.Fatalf("sign-ins %q, want %q", obs.signIns, want)
	}
	for i := range want {
		if obs.signIns[i] != want[i] {
			t.Fatalf("sign-ins %q, want %q", obs.signIns, want)
		}
	}
	(&signIns{}).started("x") // no Observer: nothing, no panic
}

func TestHistory_ObserveCommits(t *testing.T) {
	st := memory.New()
	h := NewHistory(st, nil)
	type commit struct {
		turns int
		err   error
	}
	var mu sync.Mutex
	var got []commit
	h.ObserveCommits(func(turns int, d time.Duration, err error) {
		if d < 0 {
			t.Errorf("commit took %v", d)
		}
		mu.Lock()
		got = append(got, commit{turns, err})
		mu.Unlock()
	})
	if err := st.Create(t.Context(), store.Record{ID: "s1", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Attach(t.Context(), "k", "s1"); err != nil {
		t.Fatal(err)
	}
	if err := h.Append(t.Context(), "k", gateway.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("hi")}}}}); err != nil {
		t.Fatal(err)
	}
	// The committer tells the observer after the turn's Append returns;
	// Close waits for it.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].turns != 1 || got[0].err != nil {
		t.Errorf("commits observed %+v, want one of 1 turn without error", got)
	}
}
