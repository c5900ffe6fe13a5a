package acp

import (
	"context"
	"sync"
)

// The order of prompts and cancels. acp-go-sdk's engine handles a
// session/cancel on its notification goroutine and each request on a
// goroutine of its own, so a prompt read after a cancel may start before
// the cancel is handled, and one read before may start after. A cancel
// must cancel exactly the prompts of its session read before it: two
// types keep that, both owned by the connection (conn).
//
//   - readOrder is what the reader (framing) read: each request counted,
//     each session/prompt's place in the input, each session/cancel
//     forwarded and not handled yet.
//   - promptCancels are the running prompts' contexts, by the place each
//     prompt took from readOrder.
//
// Calls go one way. The reader records into readOrder as it forwards each
// message (request, cancel), before the engine can dispatch it; the
// handlers take from it (claimPrompt, cancelHandled) through the
// connection. readOrder calls neither, and no handler calls the reader.
// It is this way round, not the handlers telling the reader, because only
// the reader knows the order of the input, and because it records a
// message before the engine sees it, a handler always finds its own
// record.

// maxQueuedCancels bounds the session/cancel notifications forwarded to the
// SDK and not yet handled; it is well below the SDK's queue of 1024
// notifications, whose overflow closes the connection.
const maxQueuedCancels = 256

// readOrder is the order in which the reader forwarded the requests and
// the session/cancel notifications it handed the engine (see above). The
// reader calls request and cancel, the handlers claimPrompt and
// cancelHandled, and close releases a reader waiting in cancel. Safe for
// concurrent use.
type readOrder struct {
	mu   sync.Mutex
	cond *sync.Cond // signalled when pending shrinks or closed is set
	// requests counts the requests forwarded so far. A prompt's ordinal is
	// its value once the prompt is counted; a cancel's, its value when the
	// cancel is forwarded.
	requests uint64
	// prompts are the ordinals of the session/prompt requests forwarded and
	// not yet claimed, by sessionId, oldest first.
	prompts map[string][]uint64
	// pending are the session/cancel notifications forwarded and not yet
	// handled, oldest first; len(pending) <= maxQueuedCancels: cancel waits
	// for room (back-pressure on the reader), so the engine's notification
	// queue cannot overflow.
	pending []pendingCancel
	// closed releases cancel's wait for room (close).
	closed bool
}

// pendingCancel is a forwarded session/cancel: its sessionId, and the
// number of requests forwarded before it.
type pendingCancel struct {
	session  string
	requests uint64
}

func newReadOrder() *readOrder {
	o := &readOrder{prompts: make(map[string][]uint64)}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// request records a request forwarded: a session/prompt of sessionID when
// prompt is set (its ordinal is then the count of requests, itself
// included).
func (o *readOrder) request(prompt bool, sessionID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests++
	if prompt {
		o.prompts[sessionID] = append(o.prompts[sessionID], o.requests)
	}
}

// cancel records a session/cancel of sessionID about to be forwarded, and
// reports whether to forward it: false for a repeat of a cancel still
// pending with no request read in between (a duplicate). With
// maxQueuedCancels pending it waits for one to be handled, or for close.
func (o *readOrder) cancel(sessionID string) (forward bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range o.pending {
		if c.session == sessionID && c.requests == o.requests {
			return false
		}
	}
	for len(o.pending) >= maxQueuedCancels && !o.closed {
		o.cond.Wait()
	}
	o.pending = append(o.pending, pendingCancel{session: sessionID, requests: o.requests})
	return true
}

// close releases a cancel waiting for room, and every later one. It is
// idempotent.
func (o *readOrder) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	o.cond.Broadcast()
}

// cancelHandled records that the session/cancel of sessionID is being
// handled, and returns how many requests were read before it: the prompts
// it cancels are those read before it (claimPrompt gives a prompt's
// ordinal). The engine handles notifications one at a time in order, so
// every cancel forwarded before it is done too (those it refused never
// reach the handler).
func (o *readOrder) cancelHandled(sessionID string) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, c := range o.pending {
		if c.session == sessionID {
			o.pending = append(o.pending[:0], o.pending[i+1:]...)
			o.cond.Broadcast()
			return c.requests
		}
	}
	return o.requests
}

// claimPrompt returns the ordinal of the oldest session/prompt of
// sessionID forwarded and not yet claimed: its place among the requests
// read (1 for the first). The prompt handler claims its own as it starts
// (prompts of one session start in the order read, as their turns are
// taken one at a time); 0 means none is known.
func (o *readOrder) claimPrompt(sessionID string) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.prompts[sessionID]
	if len(q) == 0 {
		return 0
	}
	if len(q) == 1 {
		delete(o.prompts, sessionID)
	} else {
		o.prompts[sessionID] = q[1:]
	}
	return q[0]
}

// promptCancels are the contexts of the running session/prompt requests,
// by sessionId. A session/cancel cancels the session's prompts read before
// it, and only those: the engine handles the cancel on its notification
// goroutine and each request on its own, so a prompt read after a cancel
// may start before the cancel is handled, and one read before may start
// after. Prompts and cancels carry their place in the input (ordinals from
// readOrder) to tell them apart. A new prompt also cancels the one
// before it (as acp-go-sdk's agent side does). Safe for concurrent use.
type promptCancels struct {
	mu sync.Mutex
	m  map[string]runningPrompt // by sessionId
	// cut is, by sessionId, the most requests read before a session/cancel
	// handled: a prompt whose ordinal is not above it starts cancelled.
	cut map[string]uint64
}

// runningPrompt is a running prompt's cancel and ordinal.
type runningPrompt struct {
	cancel  *context.CancelFunc
	ordinal uint64
}

// start returns ctx for the prompt of session sid with ordinal (0: not
// known), cancelling the previous prompt's, and the func that ends it. The
// context starts cancelled when a cancel read after the prompt has been
// handled already.
func (p *promptCancels) start(ctx context.Context, sid string, ordinal uint64) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	key := &cancel
	p.mu.Lock()
	if p.m == nil {
		p.m, p.cut = make(map[string]runningPrompt), make(map[string]uint64)
	}
	if prev, ok := p.m[sid]; ok {
		(*prev.cancel)()
	}
	if ordinal != 0 && ordinal <= p.cut[sid] {
		cancel()
	}
	p.m[sid] = runningPrompt{cancel: key, ordinal: ordinal}
	p.mu.Unlock()
	return ctx, func() {
		p.mu.Lock()
		if p.m[sid].cancel == key {
			delete(p.m, sid)
		}
		p.mu.Unlock()
		cancel()
	}
}

// cancel cancels session sid's prompts among the first upTo requests read:
// the running one, and one that has not started yet.
func (p *promptCancels) cancel(sid string, upTo uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m, p.cut = make(map[string]runningPrompt), make(map[string]uint64)
	}
	p.cut[sid] = max(p.cut[sid], upTo)
	if r, ok := p.m[sid]; ok && r.ordinal <= upTo {
		(*r.cancel)()
		delete(p.m, sid)
	}
}

// forget drops what is kept of session sid (its session ended).
func (p *promptCancels) forget(sid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.cut, sid)
}
