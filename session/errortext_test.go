package session_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// TestErrorText: the words a front end adds to errors that state only the
// fact, written once for acp, mcpserver and cmd; Shown keeps the error for
// errors.As.
func TestErrorText(t *testing.T) {
	taken := fmt.Errorf("opening: %w", &session.NameTakenError{Name: "acp"})
	hinted := &provider.Error{Provider: "anthropic", Status: 401, Hint: "set ANTHROPIC_API_KEY"}
	busy := fmt.Errorf("turn: %w", &session.BusyError{ID: "s1", Owner: "replica-b"})
	lostLease := &session.LeaseLostError{ID: "s1"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{taken, taken.Error() + "; choose another name"},
		{hinted, hinted.Error() + " (set ANTHROPIC_API_KEY)"},
		{busy, "turn: session s1 is running a turn on replica-b; send the prompt again once that turn ends"},
		{&session.BusyError{ID: "s1", Owner: "replica-b", Delete: true}, "session s1 is running a turn on replica-b; delete it once that turn ends (or cancel that turn where it runs)"},
		{lostLease, "the lease of session s1 was lost (the connection to the session store that holds it broke): the turn was stopped; send the prompt again: it runs once the session store can be reached"},
		{errors.New("plain"), "plain"},
	} {
		if got := session.ErrorText(tc.err); got != tc.want {
			t.Errorf("ErrorText(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	shown := session.Shown(taken)
	var nt *session.NameTakenError
	if shown.Error() != taken.Error()+"; choose another name" || !errors.As(shown, &nt) || nt.Name != "acp" {
		t.Errorf("Shown = %v (As %v)", shown, nt)
	}
	if plain := errors.New("plain"); session.Shown(plain) != plain {
		t.Error("Shown wrapped an error with nothing to add")
	}
}
