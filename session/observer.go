package session

import (
	"sync"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// Observer is told of a Core's sessions, its servers' sign-ins and, with
// CoreOptions.Leases, the leases its prompt turns run under, for metrics. Its methods are called on the Core's goroutines, under none of
// its locks; an implementation must be safe for concurrent use and must
// not block. A nil Observer is off.
type Observer interface {
	// SessionOpened reports a session that became live (a new or loaded
	// one); SessionClosed one that ended. Their difference is the live
	// sessions.
	SessionOpened()
	SessionClosed()
	// SignIn reports a step of an MCP server's sign-in (OAuth): "started"
	// (the user was asked to sign in), "completed" (the server then
	// connected) or "failed" (it failed instead).
	SignIn(outcome string)
	// LeaseWaited reports the taking of a prompt turn's lease
	// (CoreOptions.Leases): outcome "acquired", "busy" (another holder has
	// it: the turn fails with a *BusyError) or "error" (the leases failed,
	// or the turn was cancelled first); d is the time the taking took.
	// Never called without Leases.
	LeaseWaited(outcome string, d time.Duration)
	// LeaseLost reports a lease lost while its turn ran (the turn is
	// stopped: a *LeaseLostError).
	LeaseLost()
}

// ServerStates counts the MCP servers of every live session by state
// (bridge.State's String: "connecting", "connected", "failed", "lost",
// "closed", "needs sign-in"). It reads each session's bridge.Manager, so
// it costs a lock per session: call it when metrics are scraped, not on a
// turn's path. Safe for concurrent use.
func (c *Core) ServerStates() map[string]int {
	c.mu.Lock()
	sessions := make([]*Session, 0, len(c.sessions))
	for _, s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	out := map[string]int{}
	for _, s := range sessions {
		for _, st := range s.Servers() {
			out[st.State.String()]++
		}
	}
	return out
}

// signIns follows the sign-ins of one session's servers so that the
// Observer hears how each ends: a server asked to sign in is remembered
// until its next state change.
type signIns struct {
	obs Observer

	mu    sync.Mutex
	asked map[string]bool // server name → asked to sign in, not yet connected or failed
}

// started reports that server asked the user to sign in.
func (si *signIns) started(server string) {
	if si.obs == nil {
		return
	}
	si.mu.Lock()
	si.asked[server] = true
	si.mu.Unlock()
	si.obs.SignIn("started")
}

// changed reports st, a server's new state: the end of its sign-in, if
// one is under way and st ends it.
func (si *signIns) changed(st bridge.ServerStatus) {
	if si.obs == nil || (st.State != bridge.StateConnected && st.State != bridge.StateFailed) {
		return
	}
	si.mu.Lock()
	was := si.asked[st.Name]
	delete(si.asked, st.Name)
	si.mu.Unlock()
	switch {
	case !was:
	case st.State == bridge.StateConnected:
		si.obs.SignIn("completed")
	default:
		si.obs.SignIn("failed")
	}
}
