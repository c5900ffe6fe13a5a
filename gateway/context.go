package gateway

import "encoding/json"

// ContextStrategy says who keeps a long conversation within the model's
// context window. The runner's own compaction (a summary the model writes,
// at Options.CompactAt of the window) is always there: alone with
// ContextAgent, as a backstop with the others.
type ContextStrategy string

// The context strategies.
const (
	// ContextAgent: the runner compacts the history itself (the default).
	ContextAgent ContextStrategy = "agent"
	// ContextClearToolUses: the provider clears the oldest tool results
	// from the prompt past a threshold (Anthropic's context editing,
	// clear_tool_uses_20250919); the history keeps them.
	ContextClearToolUses ContextStrategy = "clear_tool_uses"
	// ContextServerCompaction: the provider summarizes the conversation
	// past a threshold and answers with the summary (Anthropic's
	// compaction, compact_20260112), which later requests start from.
	ContextServerCompaction ContextStrategy = "server_compaction"
)

// Valid reports whether s is one of the strategies ("" is not).
func (s ContextStrategy) Valid() bool {
	return s == ContextAgent || s == ContextClearToolUses || s == ContextServerCompaction
}

// ContextManagement asks a provider to manage one request's context on its
// side (Request.Context). Zero numbers leave them to the provider's
// defaults.
type ContextManagement struct {
	// Strategy is ContextClearToolUses or ContextServerCompaction.
	Strategy ContextStrategy
	// Trigger is the prompt size, in input tokens, past which the
	// provider edits or compacts.
	Trigger int64
	// Keep is how many of the newest tool uses keep their results
	// (ContextClearToolUses).
	Keep int64
	// ClearAtLeast is the fewest input tokens a clearing must free, else
	// nothing is cleared, so that the prompt cache is not given up for
	// little (ContextClearToolUses).
	ClearAtLeast int64
}

// ContextManager is a Provider that can manage a request's context on its
// side (Request.Context).
type ContextManager interface {
	Provider
	// ManagesContext reports whether the provider carries out s.
	ManagesContext(s ContextStrategy) bool
}

// ServerCompaction is a provider's own compaction of the conversation,
// carried by the assistant message it answered with
// (ContextServerCompaction): the provider reads the conversation from it
// on, so the messages before it no longer count.
type ServerCompaction struct {
	// Summary is the summary's text.
	Summary string `json:"summary"`
	// Block is the provider's block, sent back verbatim.
	Block json.RawMessage `json:"block"`
}

// FromServerCompaction returns msgs from the last message that carries a
// ServerCompaction on: what a provider that compacted reads of them. It
// returns msgs when none does.
func FromServerCompaction(msgs []Message) []Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].ServerCompaction != nil {
			return msgs[i:]
		}
	}
	return msgs
}
