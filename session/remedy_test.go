package session_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// The session's errors that know what the user can do say it as gateway.Remedier.
var (
	_ gateway.Remedier = (*session.NameTakenError)(nil)
	_ gateway.Remedier = (*session.BusyError)(nil)
	_ gateway.Remedier = (*session.LeaseLostError)(nil)
)

// TestErrorText: the words gateway.ErrorText adds to the session's errors
// (and a provider's), which state only the fact, from their remedies; the
// same for acp, mcpserver and cmd.
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
		if got := gateway.ErrorText(tc.err); got != tc.want {
			t.Errorf("ErrorText(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
