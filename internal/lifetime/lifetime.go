// Package lifetime ends the work bound to something when that thing ends,
// without storing a context.Context in it: each bound context derives from
// its caller's (keeping the caller's values), and the Lifetime keeps only
// the cancel funcs. A bridge server's connects, requests and list refreshes
// end when it closes; the ACP front end's calls under way end at the end
// of input.
package lifetime

import (
	"context"
	"sync"
)

// Lifetime cancels every context bound to it when it ends. The zero value
// is live; a Lifetime must not be copied after first use. Its methods are
// safe for concurrent use.
type Lifetime struct {
	// mu guards ended, next and cancels. It is a leaf: End calls the
	// cancel funcs after releasing it.
	mu      sync.Mutex
	ended   bool                          // end was called
	next    uint64                        // the last id handed out
	cancels map[uint64]context.CancelFunc // the bound contexts not yet released, by id
}

// Bind returns a context derived from ctx that is also cancelled when l
// ends (at once if l has ended), and its cancel func, which the caller must
// call when done with it.
func (l *Lifetime) Bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		cancel()
		return ctx, cancel
	}
	if l.cancels == nil {
		l.cancels = make(map[uint64]context.CancelFunc)
	}
	l.next++
	id := l.next
	l.cancels[id] = cancel
	return ctx, func() {
		l.mu.Lock()
		delete(l.cancels, id)
		l.mu.Unlock()
		cancel()
	}
}

// End cancels every bound context, and any bound later at once. It is
// idempotent.
func (l *Lifetime) End() {
	l.mu.Lock()
	l.ended = true
	cancels := l.cancels
	l.cancels = nil
	l.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}
