package gateway

import (
	"slices"
	"sync"
)

// History keeps the conversation of each session, keyed by session key.
// Implementations must be safe for concurrent use; a turn's messages are
// appended once, when the turn ends.
type History interface {
	// Messages returns the conversation of sessionKey, oldest first. The
	// caller must not modify the returned slice.
	Messages(sessionKey string) []Message
	// Append adds the messages of one finished turn, which ended with stop.
	Append(sessionKey string, stop StopReason, msgs ...Message)
	// Forget drops the conversation of sessionKey.
	Forget(sessionKey string)
}

// MemoryHistory is a History held in memory. The zero value is ready to use.
type MemoryHistory struct {
	mu   sync.Mutex
	msgs map[string][]Message
}

var _ History = (*MemoryHistory)(nil)

// Messages implements History.
func (h *MemoryHistory) Messages(sessionKey string) []Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clip(h.msgs[sessionKey])
}

// Append implements History.
func (h *MemoryHistory) Append(sessionKey string, _ StopReason, msgs ...Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.msgs == nil {
		h.msgs = make(map[string][]Message)
	}
	h.msgs[sessionKey] = append(h.msgs[sessionKey], msgs...)
}

// Forget implements History.
func (h *MemoryHistory) Forget(sessionKey string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.msgs, sessionKey)
}
