package session

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// History is the gateway.History of live sessions, backed by a Store: the
// conversation of each attached session is cached in memory, and each
// finished turn is committed to the store in one transaction. Safe for
// concurrent use.
type History struct {
	store Store
	log   *slog.Logger

	mu   sync.Mutex
	live map[string]*liveHistory // gateway session key → attached session
}

type liveHistory struct {
	id   string
	msgs []gateway.Message
}

var _ gateway.History = (*History)(nil)

// NewHistory returns a History over store. log may be nil.
func NewHistory(store Store, log *slog.Logger) *History {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &History{store: store, log: log, live: make(map[string]*liveHistory)}
}

// Attach binds the gateway session key to the stored session id and loads
// its committed turns, so the model continues the conversation. It returns
// the turns, for replay.
func (h *History) Attach(ctx context.Context, key, id string) ([]Turn, error) {
	turns, err := h.store.Turns(ctx, id)
	if err != nil {
		return nil, err
	}
	var msgs []gateway.Message
	for _, t := range turns {
		msgs = append(msgs, t.Messages...)
	}
	h.mu.Lock()
	h.live[key] = &liveHistory{id: id, msgs: msgs}
	h.mu.Unlock()
	return turns, nil
}

// Messages implements gateway.History.
func (h *History) Messages(_ context.Context, key string) []gateway.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.live[key]; l != nil {
		return slices.Clip(l.msgs)
	}
	return nil
}

// Append implements gateway.History: the turn joins the cache and is
// committed to the store. A store failure is logged; the conversation goes
// on in memory.
func (h *History) Append(ctx context.Context, key string, stop gateway.StopReason, msgs ...gateway.Message) {
	h.mu.Lock()
	l := h.live[key]
	if l != nil {
		l.msgs = append(l.msgs, msgs...)
	}
	h.mu.Unlock()
	if l == nil {
		h.log.Warn("turn of an unattached session not stored", "sessionKey", key)
		return
	}
	if err := h.store.AppendTurn(ctx, l.id, Turn{Messages: msgs, StopReason: stop}); err != nil {
		h.log.Error("storing the turn failed; it stays in memory only", "session", l.id, "err", err)
	}
}

// Forget implements gateway.History: the cache is dropped; the stored
// session stays.
func (h *History) Forget(_ context.Context, key string) {
	h.mu.Lock()
	delete(h.live, key)
	h.mu.Unlock()
}
