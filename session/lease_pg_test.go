package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Two replicas on one PostgreSQL database, each with its own store (its
// pool and its lease connection), as two gateway processes are: a turn on
// one catches up with the other's turns; a replica whose lease connection
// breaks mid-turn has its turn stopped, and the turn's late commit is
// fenced out by the other replica's lease; its next turn catches up.
func TestLeases_PostgreSQL(t *testing.T) {
	url := pgtest.Start(t)
	open := func() *postgres.Store {
		st, err := postgres.Open(t.Context(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	j := &journal{}
	a, b := newReplica(t, open(), "replica-a", j, CoreOptions{}), newReplica(t, open(), "replica-b", j, CoreOptions{})
	fenced := make(chan error, 8)
	a.history.ObserveCommits(func(_ int, _ time.Duration, err error) {
		if err != nil {
			fenced <- err
		}
	})
	sa := a.open(t, "")
	sb := b.open(t, sa.ID())
	for _, step := range []struct {
		s            *Session
		prompt, want string
	}{
		{sa, "one", "ask one (saw one)"},
		{sb, "two", "replay one|ask two (saw one,two)"},
	} {
		if _, err := prompt(t.Context(), step.s, step.prompt); err != nil {
			t.Fatalf("%s: %v", step.prompt, err)
		}
		if got := strings.Join(j.take(), "|"); got != step.want {
			t.Errorf("%s: %q, want %q", step.prompt, got, step.want)
		}
	}

	// replica-a's turn holds the session's advisory lock, the only one
	// held: its lease connection is cut, as a dead network would.
	running := promptAsync(t, sa, a.model, "stubborn")
	if got, want := strings.Join(j.take(), "|"), "replay two|ask stubborn (saw one,two,stubborn)"; got != want {
		t.Errorf("replica-a's turn: %q, want %q", got, want)
	}
	admin, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(t.Context())
	var killed int
	if err := admin.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("cutting replica-a's lease connection: %d connections, %v", killed, err)
	}
	a.obs.told.WaitFor(t, time.Minute, func() bool { _, n := a.obs.leases(); return n == 1 }, "replica-a never saw its lease lost")
	// replica-b takes the lease once PostgreSQL has ended the cut
	// connection (and with it its lock).
	testutil.WaitFor(t, time.Minute, func() bool {
		_, err := prompt(t.Context(), sb, "b2")
		var busy *BusyError
		if err != nil && !errors.As(err, &busy) {
			t.Fatalf("replica-b's turn = %v", err)
		}
		return err == nil
	}, "replica-b never got the lease")
	close(a.model.release)
	var lost *LeaseLostError
	if err := wait(t, running, "replica-a's stopped turn"); !errors.As(err, &lost) {
		t.Fatalf("replica-a's turn = %v, want a *LeaseLostError", err)
	}
	if err := wait(t, fenced, "replica-a's commit"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("replica-a's late commit = %v, want it fenced out", err)
	}
	turns, err := a.Store().Turns(t.Context(), sa.ID())
	var prompts []string
	for _, tr := range turns {
		prompts = append(prompts, promptOf(tr))
	}
	if err != nil || strings.Join(prompts, ",") != "one,two,b2" {
		t.Fatalf("stored turns %q, %v; want one, two, b2 (not replica-a's stopped turn)", prompts, err)
	}

	j.take()
	if _, err := prompt(t.Context(), sa, "a3"); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(j.take(), "|"), "replay b2|ask a3 (saw one,two,b2,a3)"; got != want {
		t.Errorf("replica-a's next turn: %q, want %q", got, want)
	}
}
