package bridge

import (
	"context"
	"sync"
)

// lifetime ends the work of a server when the server closes: every context
// bound to it (a connect, a request, a list refresh) is cancelled by end.
// It stands in for a context.Context stored in the server: each bound
// context derives from its caller's (keeping the caller's values), and the
// server keeps only the cancel funcs. The zero value is live; a lifetime
// must not be copied after first use.
type lifetime struct {
	// mu guards ended, next and cancels. It is never held with another
	// lock of the bridge: end calls the cancel funcs after releasing it.
	mu      sync.Mutex
	ended   bool                          // end was called
	next    uint64                        // the last id handed out
	cancels map[uint64]context.CancelFunc // the bound contexts not yet released, by id
}

// bind returns a context derived from ctx that is also cancelled when l
// ends (at once if l has ended), and its cancel func, which the caller must
// call when done with it.
func (l *lifetime) bind(ctx context.Context) (context.Context, context.CancelFunc) {
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

// end cancels every bound context, and any bound later at once. It is
// idempotent.
func (l *lifetime) end() {
	l.mu.Lock()
	l.ended = true
	cancels := l.cancels
	l.cancels = nil
	l.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}
