package gateway

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// Turn is one finished prompt turn as the runner hands it to a [History].
type Turn struct {
	// Messages are the turn's messages: the user message, the assistant
	// messages and the tool results, in order.
	Messages []Message `json:"messages"`
	// StopReason is why the turn ended.
	StopReason StopReason `json:"stopReason"`
	// Usage is the tokens of the turn's model requests (compaction
	// requests included).
	Usage Usage `json:"usage,omitzero"`
	// Compaction, when set, replaced the session's older messages for the
	// model during this turn: from this turn on the model sees its summary
	// and the messages from Compaction.From on.
	Compaction *Compaction `json:"compaction,omitempty"`
}

// Compaction is a summary that stands, for the model, for the messages of a
// session before From. The stored transcript keeps every message for replay;
// a compaction only changes what later requests send.
type Compaction struct {
	// Summary is the model-written summary of the messages before From.
	Summary string `json:"summary"`
	// From is the index, in the session's whole conversation (every turn's
	// messages, oldest first, this turn's included), of the first message the
	// model still sees verbatim. It is never a tool result, so a tool call
	// and its result are never split.
	From int `json:"from"`
	// Loaded are the deferred tools that tool search had loaded before the
	// compaction: they stay loaded after it.
	Loaded []string `json:"loaded,omitempty"`
	// Head are messages from before From that the model still sees
	// verbatim, right after the summary: the running turn's user message,
	// when a turn outgrew the window and the compaction fell inside it.
	Head []Message `json:"head,omitempty"`
}

// View is what the model sees of a session's conversation at the start of a
// turn, and what the session has used so far.
type View struct {
	// Compaction is the latest compaction, or nil: its summary stands for
	// every message before Base.
	Compaction *Compaction `json:"compaction,omitempty"`
	// Messages are the messages from Base on, verbatim, oldest first.
	Messages []Message `json:"messages,omitempty"`
	// Base is the index of Messages[0] in the whole conversation
	// (Compaction.From, or 0).
	Base int `json:"base,omitempty"`
	// Usage is the session's usage so far.
	Usage Usage `json:"usage,omitzero"`
}

// ErrTurnNotStored marks the error of a turn that ran but that the History
// could not keep (History.Append failed, such as on a full disk): the turn
// is not part of the conversation, and its prompt fails saying why.
var ErrTurnNotStored = errors.New("the turn could not be stored, so the conversation goes on without it")

// History keeps the conversation of each session, keyed by session key.
// Implementations must be safe for concurrent use; a turn is appended once,
// when it ends. ctx bounds the work of each call (a store's I/O); the runner
// appends a turn with a ctx that is not cancelled with the turn, so a
// cancelled turn is kept too.
type History interface {
	// View returns what the model sees of the conversation of sessionKey
	// (see [View]). The caller must not modify the returned slices.
	View(ctx context.Context, sessionKey string) View
	// Append adds one finished turn. It returns once the turn is kept as
	// durably as the History keeps anything (committed, for one backed by
	// a store), so the prompt's response may follow. An error means the
	// turn is not kept: it is not part of the conversation either (View
	// does not show it), so the history has no gap where it failed.
	Append(ctx context.Context, sessionKey string, turn Turn) error
	// Forget drops the conversation of sessionKey.
	Forget(ctx context.Context, sessionKey string)
}

// ViewAfter returns v after turn: its messages added, its usage counted and
// its compaction, if any, applied. It is how every History keeps its view.
// It appends to v.Messages in place (amortized O(turn)): a History hands out
// only clipped copies of the slice header (slices.Clip), so no reader sees
// the change.
func ViewAfter(v View, turn Turn) View {
	v.Usage = v.Usage.Add(turn.Usage)
	msgs := append(v.Messages, turn.Messages...)
	if c := turn.Compaction; c != nil {
		cut := min(max(c.From-v.Base, 0), len(msgs))
		msgs = slices.Clone(msgs[cut:])
		v.Base, v.Compaction = c.From, c
	}
	v.Messages = msgs
	return v
}

// MemoryHistory is a History held in memory. The zero value is ready to use.
type MemoryHistory struct {
	mu    sync.Mutex
	views map[string]View
}

var _ History = (*MemoryHistory)(nil)

// View implements History.
func (h *MemoryHistory) View(_ context.Context, sessionKey string) View {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := h.views[sessionKey]
	v.Messages = slices.Clip(v.Messages)
	return v
}

// Append implements History; it never fails.
func (h *MemoryHistory) Append(_ context.Context, sessionKey string, turn Turn) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.views == nil {
		h.views = make(map[string]View)
	}
	h.views[sessionKey] = ViewAfter(h.views[sessionKey], turn)
	return nil
}

// Forget implements History.
func (h *MemoryHistory) Forget(_ context.Context, sessionKey string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.views, sessionKey)
}
