package gateway

import (
	"context"
	"slices"
	"sync"
)

// History keeps the conversation of each session, keyed by session key.
// Implementations must be safe for concurrent use; a turn's messages are
// appended once, when the turn ends. ctx bounds the work of each call (a
// store's I/O); the runner appends a turn with a ctx that is not cancelled
// with the turn, so a cancelled turn is kept too.
type History interface {
	// Messages returns the conversation of sessionKey, oldest first. The
	// caller must not modify the returned slice.
	Messages(ctx context.Context, sessionKey string) []Message
	// Append adds the messages of one finished turn, which ended with stop.
	Append(ctx context.Context, sessionKey string, stop StopReason, msgs ...Message)
	// Forget drops the conversation of sessionKey.
	Forget(ctx context.Context, sessionKey string)
}

// MemoryHistory is a History held in memory. The zero value is ready to use.
type MemoryHistory struct {
	mu   sync.Mutex
	msgs map[string][]Message
}

var _ History = (*MemoryHistory)(nil)

// Messages implements History.
func (h *MemoryHistory) Messages(_ context.Context, sessionKey string) []Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clip(h.msgs[sessionKey])
}

// Append implements History.
func (h *MemoryHistory) Append(_ context.Context, sessionKey string, _ StopReason, msgs ...Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.msgs == nil {
		h.msgs = make(map[string][]Message)
	}
	h.msgs[sessionKey] = append(h.msgs[sessionKey], msgs...)
}

// Forget implements History.
func (h *MemoryHistory) Forget(_ context.Context, sessionKey string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.msgs, sessionKey)
}
