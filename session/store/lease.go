package store

import (
	"context"
	"fmt"
	"sync"
)

// Leases let one holder at a time run a session's turn: the replicas of a
// gateway fleet on one database, or the connections of one gateway. A
// PostgreSQL store's leases are fleet-wide; [LocalLeases] are a process's.
type Leases interface {
	// Acquire takes the lease of session id for owner (a name others are
	// told, such as a replica's). It returns a *LeasedError when another
	// holder has it, ctx's error, or a store error. It does not wait.
	Acquire(ctx context.Context, id, owner string) (*Lease, error)
}

// Lease is one hold of a session's lease, until Release or loss.
type Lease struct {
	// ID is the session; Owner the holder named at Acquire.
	ID, Owner string
	// Token is the fencing token: greater than the token of every earlier
	// hold of this session's lease, by any holder. A write fenced with it
	// ([FencedStore]) fails once a later hold exists.
	Token int64
	// Lost is closed when the lease is lost before Release (for a
	// database's leases: the holder's connection to it broke, so others
	// may take it): the turn under it should stop.
	Lost <-chan struct{}

	once    sync.Once
	release func(context.Context) error
}

// NewLease returns a held lease whose Release calls release once; lost is
// closed by the Leases when the hold is lost. For Leases implementations.
func NewLease(id, owner string, token int64, lost <-chan struct{}, release func(context.Context) error) *Lease {
	return &Lease{ID: id, Owner: owner, Token: token, Lost: lost, release: release}
}

// Release gives the lease up; later calls do nothing. Safe for concurrent
// use.
func (l *Lease) Release(ctx context.Context) error {
	var err error
	l.once.Do(func() {
		if l.release != nil {
			err = l.release(ctx)
		}
	})
	return err
}

// LeasedError is the answer to Acquire while another holder has the lease.
// It reads "session ID is running a turn on OWNER"; what the user should do
// about it is for the front end that shows it to say (session.BusyError
// says it).
type LeasedError struct {
	// ID is the session; Owner the holder of its lease, as named at its
	// Acquire (a replica's name, say).
	ID, Owner string
}

func (e *LeasedError) Error() string {
	return fmt.Sprintf("session %s is running a turn on %s", e.ID, e.Owner)
}

// FencedStore is a Store whose turn writes can be fenced by a lease token.
// The PostgreSQL store (package session/store/postgres) implements it.
// Memory and SQLite do not: their leases are one process's [LocalLeases],
// which are never lost, so there is no stale holder to fence; check with a
// type assertion.
type FencedStore interface {
	Store
	// AppendTurnFenced is AppendTurn, committed only if token is still the
	// session's latest lease token (else ErrFenced), in the same
	// transaction.
	AppendTurnFenced(ctx context.Context, id string, token int64, turn Turn) error
}

// LocalLeases are Leases held in this process: one gateway's, over a store
// that is not shared (memory, SQLite). The zero value is ready to use. Safe
// for concurrent use.
type LocalLeases struct {
	mu     sync.Mutex
	held   map[string]string // session id → owner
	tokens map[string]int64  // session id → latest token
}

var _ Leases = (*LocalLeases)(nil)

// Acquire implements Leases. A local lease is never lost.
func (ll *LocalLeases) Acquire(ctx context.Context, id, owner string) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ll.mu.Lock()
	defer ll.mu.Unlock()
	if ll.held == nil {
		ll.held, ll.tokens = make(map[string]string), make(map[string]int64)
	}
	if o, ok := ll.held[id]; ok {
		return nil, &LeasedError{ID: id, Owner: o}
	}
	ll.held[id] = owner
	ll.tokens[id]++
	token := ll.tokens[id]
	return NewLease(id, owner, token, nil, func(context.Context) error {
		ll.mu.Lock()
		defer ll.mu.Unlock()
		if ll.tokens[id] == token {
			delete(ll.held, id)
		}
		return nil
	}), nil
}

// Latest returns the session's latest token (0: never leased), to fence a
// local store's writes.
func (ll *LocalLeases) Latest(id string) int64 {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	return ll.tokens[id]
}
