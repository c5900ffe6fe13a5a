package session

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// History is the gateway.History of live sessions, backed by a Store: what
// the model sees of each attached session (its gateway.View: the latest
// compaction, the messages after it, the usage so far) is cached in memory,
// and each finished turn is committed to the store whole (messages, stop
// reason, usage, compaction) in one transaction. The store keeps every
// message for replay; the view is rebuilt from the stored turns at Attach,
// so a reloaded session continues where its last compaction left it.
//
// The commit is written behind: Append returns once the turn is in the
// cache, so a turn's response does not wait for the disk, and the commit
// follows at once on its own goroutine. Commits of one session are made in
// order; Attach of a session, Forget, Flush and Close wait for its pending
// commits, so whatever this process reads from the store (session/load,
// resume, list) already holds every finished turn. An agent killed between
// a response and its commit (well under a millisecond) loses that turn; a
// commit once made survives a crash of the agent. Safe for concurrent use.
type History struct {
	store Store
	log   *slog.Logger

	mu      sync.Mutex
	live    map[string]*liveHistory  // gateway session key → attached session
	pending map[string]chan struct{} // session id → closed when its last queued commit is done
	writes  sync.WaitGroup
}

type liveHistory struct {
	id string
	// view is what the model sees: gateway.ViewAfter of every turn. Its
	// Messages are appended to in place; View hands out clipped copies.
	view gateway.View
}

var _ gateway.History = (*History)(nil)

// NewHistory returns a History over store. log may be nil.
func NewHistory(store Store, log *slog.Logger) *History {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &History{store: store, log: log, live: make(map[string]*liveHistory), pending: make(map[string]chan struct{})}
}

// Attach binds the gateway session key to the stored session id and loads
// its committed turns (after this process's pending commits of id), so the
// model continues the conversation: the view is the stored turns folded
// with gateway.ViewAfter (the latest compaction, the messages after it, the
// usage of every turn). It returns the turns whole, every message included,
// for replay.
func (h *History) Attach(ctx context.Context, key, id string) ([]Turn, error) {
	if err := h.wait(ctx, id); err != nil {
		return nil, err
	}
	turns, err := h.store.Turns(ctx, id)
	if err != nil {
		return nil, err
	}
	var v gateway.View
	for _, t := range turns {
		v = gateway.ViewAfter(v, gateway.Turn{Messages: t.Messages, StopReason: t.StopReason, Usage: t.Usage, Compaction: t.Compaction})
	}
	h.mu.Lock()
	h.live[key] = &liveHistory{id: id, view: v}
	h.mu.Unlock()
	return turns, nil
}

// View implements gateway.History: the view of the session attached under
// key (the zero View for a key not attached). Its Messages are clipped, so
// later appends never show through it.
func (h *History) View(_ context.Context, key string) gateway.View {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.live[key]; l != nil {
		v := l.view
		v.Messages = slices.Clip(v.Messages)
		return v
	}
	return gateway.View{}
}

// Append implements gateway.History: the turn joins the cached view at once
// (gateway.ViewAfter: its messages, usage and compaction) and is committed
// to the store whole behind it, after the session's earlier turns. A store
// failure is logged; the conversation goes on in memory.
func (h *History) Append(ctx context.Context, key string, turn gateway.Turn) {
	h.mu.Lock()
	l := h.live[key]
	if l == nil {
		h.mu.Unlock()
		h.log.Warn("turn of an unattached session not stored", "sessionKey", key)
		return
	}
	l.view = gateway.ViewAfter(l.view, turn)
	id, prev, done := l.id, h.pending[l.id], make(chan struct{})
	h.pending[id] = done
	h.writes.Add(1)
	h.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer h.writes.Done()
		if prev != nil {
			<-prev
		}
		if err := h.store.AppendTurn(ctx, id, Turn{Messages: turn.Messages, StopReason: turn.StopReason, Usage: turn.Usage, Compaction: turn.Compaction}); err != nil {
			h.log.Error("storing the turn failed; it stays in memory only", "session", id, "err", err)
		}
		h.mu.Lock()
		if h.pending[id] == done {
			delete(h.pending, id)
		}
		h.mu.Unlock()
		close(done)
	}()
}

// Forget implements gateway.History: the session's pending commits are
// waited for (without ctx's cancellation: they are the session's last
// turns), then the cache is dropped; the stored session stays.
func (h *History) Forget(ctx context.Context, key string) {
	h.mu.Lock()
	l := h.live[key]
	delete(h.live, key)
	h.mu.Unlock()
	if l != nil {
		_ = h.wait(context.WithoutCancel(ctx), l.id)
	}
}

// Wait waits until the turns appended so far for the session attached
// under key are committed, or ctx ends (its error). A client whose next
// turn must follow the last one's commit calls it: a fleet gateway fences
// the commit with the lease of the turn it belongs to, which the next turn
// replaces.
func (h *History) Wait(ctx context.Context, key string) error {
	h.mu.Lock()
	l := h.live[key]
	h.mu.Unlock()
	if l == nil {
		return nil
	}
	return h.wait(ctx, l.id)
}

// Flush waits until every turn appended so far is committed, or ctx ends
// (its error). Call it before reading sessions from the store directly
// (session/list).
func (h *History) Flush(ctx context.Context) error {
	h.mu.Lock()
	waits := make([]chan struct{}, 0, len(h.pending))
	for _, c := range h.pending {
		waits = append(waits, c)
	}
	h.mu.Unlock()
	for _, c := range waits {
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close waits for every pending commit; call it before closing the store.
// Appends after Close are not allowed.
func (h *History) Close() error {
	h.writes.Wait()
	return nil
}

// wait waits for the pending commits of session id, or ctx.
func (h *History) wait(ctx context.Context, id string) error {
	h.mu.Lock()
	c := h.pending[id]
	h.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
