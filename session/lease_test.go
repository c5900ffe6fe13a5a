package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// journal records, in order, what the fleet tests' model and front ends
// see.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
	j.mu.Unlock()
}

// take returns the lines so far and forgets them.
func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.lines
	j.lines = nil
	return out
}

// fleetModel answers a prompt "p" with "re: p" at once, except "hold",
// which waits for the turn's cancellation, and "stubborn", which waits for
// release whatever the context. Each turn request is journaled as "ask P
// (saw A,B,…)": its prompt and every user prompt of the conversation the
// model saw; started gets the prompt of those two as their request
// starts.
type fleetModel struct {
	j       *journal
	started chan string
	release chan struct{}
}

func newFleetModel(j *journal) *fleetModel {
	return &fleetModel{j: j, started: make(chan string, 16), release: make(chan struct{})}
}

func (*fleetModel) Name() string { return "fleet" }

func (m *fleetModel) Complete(ctx context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
	if req.Purpose != "" { // the session's title
		return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("a title")}}}, nil
	}
	var prompts []string
	for _, msg := range req.Messages {
		if msg.Role == gateway.RoleUser {
			prompts = append(prompts, gateway.PromptText(msg.Content))
		}
	}
	prompt := prompts[len(prompts)-1]
	m.j.add("ask %s (saw %s)", prompt, strings.Join(prompts, ","))
	switch prompt {
	case "hold":
		m.started <- prompt
		<-ctx.Done()
		return nil, ctx.Err()
	case "stubborn":
		m.started <- prompt
		<-m.release
	}
	return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("re: " + prompt)}}}, nil
}

// fleetFrontEnd is a tellFrontEnd that replays turns into a journal, as
// "replay A,B": the prompts of the turns.
type fleetFrontEnd struct {
	tellFrontEnd
	j *journal
}

func (f fleetFrontEnd) Replay(_ context.Context, _ string, turns []store.Turn) {
	var prompts []string
	for _, t := range turns {
		prompts = append(prompts, promptOf(t))
	}
	f.j.add("replay %s", strings.Join(prompts, ","))
}

// promptOf is the text of t's prompt.
func promptOf(t store.Turn) string { return gateway.PromptText(t.Messages[0].Content) }

// replica is one Core of a fleet over st, named name, with its model and
// front end; obs counts what its Observer is told.
type replica struct {
	*Core
	name    string
	model   *fleetModel
	fe      fleetFrontEnd
	obs     *countingObserver
	history *History
}

// leasedStore is a store with leases of its own: a fleetStore, or
// PostgreSQL's.
type leasedStore interface {
	store.Store
	store.Leases
}

func newReplica(t *testing.T, st leasedStore, name string, j *journal, opts CoreOptions) *replica {
	t.Helper()
	history := NewHistory(st, nil)
	m := newFleetModel(j)
	gw := runner.NewLocal(&runner.Options{History: history, Models: []gateway.Model{{ID: "m", Label: "M", Provider: m}}})
	obs := &countingObserver{}
	opts.Gateway, opts.Store, opts.History, opts.Leases, opts.Replica, opts.Observer = gw, st, history, st, name, obs
	c := NewCore(&opts)
	t.Cleanup(c.Shutdown)
	return &replica{Core: c, name: name, model: m, fe: fleetFrontEnd{tellFrontEnd{told: make(chan string, 8)}, j}, obs: obs, history: history}
}

// open opens session id on r (a new one when id is "").
func (r *replica) open(t *testing.T, id string) *Session {
	t.Helper()
	s, err := r.Open(t.Context(), OpenRequest{ID: id, Cwd: t.TempDir(), FrontEnd: r.fe})
	if err != nil {
		t.Fatalf("%s: opening %q: %v", r.name, id, err)
	}
	return s
}

func prompt(ctx context.Context, s *Session, text string) (gateway.StopReason, error) {
	return s.Prompt(ctx, PromptRequest{Content: []gateway.Content{gateway.TextContent(text)}})
}

// promptAsync prompts s with text on a goroutine of the test, returning
// the turn's error once it ends; the model has started the turn's request
// when it returns.
func promptAsync(t *testing.T, s *Session, m *fleetModel, text string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := prompt(context.Background(), s, text)
		done <- err
	}()
	select {
	case got := <-m.started:
		if got != text {
			t.Fatalf("the model started %q, want %q", got, text)
		}
	case err := <-done:
		t.Fatalf("the turn %q ended before its model request: %v", text, err)
	case <-time.After(time.Minute):
		t.Fatalf("the turn %q did not reach the model", text)
	}
	return done
}

// A prompt for a session another replica is running a turn of fails at
// once with a *BusyError naming that replica, whose words say what to do;
// once that turn has ended, the prompt runs.
func TestLeases_ATurnRunningOnAnotherReplicaIsBusy(t *testing.T) {
	st, j := newFleetStore(), &journal{}
	a, b := newReplica(t, st, "replica-a", j, CoreOptions{}), newReplica(t, st, "replica-b", j, CoreOptions{})
	sa := a.open(t, "")
	sb := b.open(t, sa.ID())
	running := promptAsync(t, sa, a.model, "hold")

	_, err := prompt(t.Context(), sb, "mine")
	var busy *BusyError
	var leased *store.LeasedError
	if !errors.As(err, &busy) || busy.ID != sa.ID() || busy.Owner != "replica-a" || !errors.As(err, &leased) {
		t.Fatalf("prompt on replica-b = %v, want a *BusyError naming replica-a, wrapping the LeasedError", err)
	}
	want := "session " + sa.ID() + " is running a turn on replica-a; send the prompt again once that turn ends"
	if got := gateway.ErrorText(err); got != want {
		t.Errorf("ErrorText = %q, want %q", got, want)
	}
	if waits, _ := b.obs.leases(); strings.Join(waits, ",") != "busy" {
		t.Errorf("replica-b's lease waits = %q, want busy", waits)
	}

	sa.Cancel()
	if err := wait(t, running, "the cancelled turn"); err != nil {
		t.Fatalf("the cancelled turn = %v", err)
	}
	if _, err := prompt(t.Context(), sb, "mine"); err != nil {
		t.Fatalf("prompt on replica-b after the turn ended = %v", err)
	}
	if waits, _ := a.obs.leases(); strings.Join(waits, ",") != "acquired" {
		t.Errorf("replica-a's lease waits = %q, want acquired", waits)
	}
}

// A lease lost while its turn runs stops the turn, which fails with a
// *LeaseLostError saying so and what to do; the Observer hears of it, and
// the session's next prompt runs.
func TestLeases_ALostLeaseStopsTheTurn(t *testing.T) {
	st, j := newFleetStore(), &journal{}
	a := newReplica(t, st, "replica-a", j, CoreOptions{})
	s := a.open(t, "")
	running := promptAsync(t, s, a.model, "hold")
	st.lose(s.ID())
	err := wait(t, running, "the turn whose lease was lost")
	var lost *LeaseLostError
	if !errors.As(err, &lost) || lost.ID != s.ID() {
		t.Fatalf("turn = %v, want a *LeaseLostError", err)
	}
	if got := gateway.ErrorText(err); !strings.Contains(got, "the lease of session "+s.ID()+" was lost") || !strings.Contains(got, "the turn was stopped; send the prompt again") {
		t.Errorf("ErrorText = %q", got)
	}
	if _, n := a.obs.leases(); n != 1 {
		t.Errorf("leases lost told = %d, want 1", n)
	}
	if _, err := prompt(t.Context(), s, "again"); err != nil {
		t.Fatalf("the next prompt = %v", err)
	}
}

// A turn whose lease another holder took while it ran (without its
// holder noticing) is not stored: its commit is fenced out, the prompt
// fails saying so, and neither the store nor the view holds it. The
// session's next turn catches up with the other holder's turn: the
// client is shown it, and the model sees it.
func TestLeases_AFencedOutTurnIsNotStored(t *testing.T) {
	st, j := newFleetStore(), &journal{}
	a, b := newReplica(t, st, "replica-a", j, CoreOptions{}), newReplica(t, st, "replica-b", j, CoreOptions{})
	sa := a.open(t, "")
	sb := b.open(t, sa.ID())
	running := promptAsync(t, sa, a.model, "stubborn")
	st.expire(sa.ID())
	if _, err := prompt(t.Context(), sb, "b1"); err != nil {
		t.Fatalf("replica-b's turn = %v", err)
	}
	close(a.model.release)
	err := wait(t, running, "the stubborn turn")
	if !errors.Is(err, gateway.ErrTurnNotStored) || !errors.Is(err, store.ErrFenced) || !strings.Contains(err.Error(), "another holder took the session's lease while this turn ran") {
		t.Fatalf("the fenced-out turn = %v, want ErrTurnNotStored wrapping ErrFenced, saying why", err)
	}
	turns, err := st.Turns(t.Context(), sa.ID())
	if err != nil || len(turns) != 1 || gateway.PromptText(turns[0].Messages[0].Content) != "b1" {
		t.Fatalf("stored turns = %d (%v), want only replica-b's", len(turns), err)
	}
	j.take()
	if _, err := prompt(t.Context(), sa, "a2"); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(j.take(), "|"), "replay b1|ask a2 (saw b1,a2)"; got != want {
		t.Errorf("replica-a's next turn: %q, want %q", got, want)
	}
}

// Catch-up: a replica that has a session open runs its next turn on the
// turns another replica committed meanwhile, and shows its client exactly
// those, before the turn; a turn right after its own turn reads nothing
// again.
func TestLeases_ATurnCatchesUpWithAnotherReplicasTurns(t *testing.T) {
	st, j := newFleetStore(), &journal{}
	a, b := newReplica(t, st, "replica-a", j, CoreOptions{}), newReplica(t, st, "replica-b", j, CoreOptions{})
	sa := a.open(t, "")
	sb := b.open(t, sa.ID())
	for _, step := range []struct {
		s      *Session
		prompt string
		want   string
	}{
		{sa, "one", "ask one (saw one)"},
		{sb, "two", "replay one|ask two (saw one,two)"},
		{sb, "three", "ask three (saw one,two,three)"},
		{sa, "four", "replay two,three|ask four (saw one,two,three,four)"},
		{sa, "five", "ask five (saw one,two,three,four,five)"},
	} {
		if _, err := prompt(t.Context(), step.s, step.prompt); err != nil {
			t.Fatalf("%s: %v", step.prompt, err)
		}
		if got := strings.Join(j.take(), "|"); got != step.want {
			t.Errorf("%s: %q, want %q", step.prompt, got, step.want)
		}
	}
}

// Open waits a bounded time for a lease that another replica's turn holds,
// then opens without it: the client is told that a turn runs elsewhere,
// and the session's first turn shows it once it is stored.
func TestLeases_OpenWaitsForABusyLeaseThenTellsTheClient(t *testing.T) {
	st, j := newFleetStore(), &journal{}
	a := newReplica(t, st, "replica-a", j, CoreOptions{})
	b := newReplica(t, st, "replica-b", j, CoreOptions{OpenLeaseWait: 300 * time.Millisecond})
	sa := a.open(t, "")
	running := promptAsync(t, sa, a.model, "hold")
	sb := b.open(t, sa.ID())
	if got := wait(t, b.fe.told, "the message of a turn running elsewhere"); got != RunningElsewhereText("replica-a") {
		t.Errorf("told %q", got)
	}
	sa.Cancel()
	if err := wait(t, running, "the cancelled turn"); err != nil {
		t.Fatal(err)
	}
	j.take()
	if _, err := prompt(t.Context(), sb, "next"); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(j.take(), "|"), "replay hold|ask next (saw hold,next)"; got != want {
		t.Errorf("replica-b's first turn: %q, want %q", got, want)
	}
}

// Open takes a lease that frees up while it waits, and then tells nothing.
func TestLeases_OpenTakesALeaseThatFreesUp(t *testing.T) {
	st, j := newFleetStore(), &journal{}
	a := newReplica(t, st, "replica-a", j, CoreOptions{})
	b := newReplica(t, st, "replica-b", j, CoreOptions{OpenLeaseWait: 10 * time.Minute})
	sa := a.open(t, "")
	running := promptAsync(t, sa, a.model, "hold")
	opened, dir := make(chan *Session, 1), t.TempDir()
	go func() {
		s, err := b.Open(context.Background(), OpenRequest{ID: sa.ID(), Cwd: dir, FrontEnd: b.fe})
		if err != nil {
			t.Errorf("Open = %v", err)
		}
		opened <- s
	}()
	sa.Cancel()
	if err := wait(t, running, "the cancelled turn"); err != nil {
		t.Fatal(err)
	}
	sb := wait(t, opened, "the open")
	if sb == nil {
		t.FailNow()
	}
	j.take()
	if _, err := prompt(t.Context(), sb, "next"); err != nil {
		t.Fatal(err)
	}
	// The open took the lease once the cancelled turn was stored, and knows
	// its token: nothing to catch up with.
	if got, want := strings.Join(j.take(), "|"), "ask next (saw hold,next)"; got != want {
		t.Errorf("replica-b's first turn: %q, want %q", got, want)
	}
	select {
	case text := <-b.fe.told:
		t.Errorf("told %q; the open got the lease", text)
	default:
	}
}

// Delete takes the session's lease: a session another replica runs a turn
// of is refused with a *BusyError saying what to do, and stays.
func TestLeases_DeleteIsRefusedWhileAnotherReplicaRunsATurn(t *testing.T) {
	st, j := newFleetStore(), &journal{}
	a, b := newReplica(t, st, "replica-a", j, CoreOptions{}), newReplica(t, st, "replica-b", j, CoreOptions{})
	sa := a.open(t, "")
	running := promptAsync(t, sa, a.model, "hold")
	err := b.Delete(t.Context(), sa.ID())
	var busy *BusyError
	if !errors.As(err, &busy) || !busy.Delete || busy.Owner != "replica-a" ||
		gateway.ErrorText(err) != "session "+sa.ID()+" is running a turn on replica-a; delete it once that turn ends (or cancel that turn where it runs)" {
		t.Fatalf("Delete = %v (%q), want a *BusyError", err, gateway.ErrorText(err))
	}
	if _, err := st.Get(t.Context(), sa.ID()); err != nil {
		t.Fatalf("the refused session is gone: %v", err)
	}
	sa.Cancel()
	if err := wait(t, running, "the cancelled turn"); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(t.Context(), sa.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(t.Context(), sa.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after Delete: %v", err)
	}
}

// A failure of the leases fails a prompt naming the cause, and the
// Observer hears "error"; an open goes on without the lease.
func TestLeases_AFailureOfTheLeasesFailsThePrompt(t *testing.T) {
	st, j := newFleetStore(), &journal{}
	a := newReplica(t, st, "replica-a", j, CoreOptions{})
	broken := errors.New("connection refused")
	st.failLeases(broken)
	s := a.open(t, "")
	_, err := prompt(t.Context(), s, "one")
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), "taking the lease of session "+s.ID()) {
		t.Errorf("prompt = %v", err)
	}
	if waits, _ := a.obs.leases(); strings.Join(waits, ",") != "error" {
		t.Errorf("lease waits = %q, want error", waits)
	}
	st.failLeases(nil)
	if _, err := prompt(t.Context(), s, "one"); err != nil {
		t.Errorf("prompt once the leases work = %v", err)
	}
}

// Without Leases a Core takes none: the store's leases are never asked.
func TestLeases_NoneWithoutLeases(t *testing.T) {
	st := newFleetStore()
	st.failLeases(errors.New("asked"))
	history := NewHistory(st, nil)
	c := NewCore(&CoreOptions{Store: st, History: history})
	t.Cleanup(c.Shutdown)
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(t.Context(), s, "/help"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
}
