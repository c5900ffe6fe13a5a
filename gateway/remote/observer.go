package remote

import "time"

// Observer hears of the leases a Server's turns run under and of its
// store's commits, for metrics. Its
// methods are called on the turns' goroutines and must not block; an
// implementation must be safe for concurrent use.
type Observer interface {
	// LeaseWaited reports the taking of a turn's lease: outcome
	// "acquired", "busy" (another replica or turn holds it) or "error"
	// (the leases failed, or the request ended first); d is the time from
	// the request until then, waits for an ending turn of the session
	// included.
	LeaseWaited(outcome string, d time.Duration)
	// LeaseLost reports a lease lost while its turn ran (the turn is
	// cancelled).
	LeaseLost()
	// StoreCommit reports the commit of turns to the Store for a
	// translator (sessions.appendTurn: one turn each), its wall time and
	// its error.
	StoreCommit(turns int, d time.Duration, err error)
}
