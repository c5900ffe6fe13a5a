package gateway

import "strconv"

// StopReason says why a turn ended, following ACP's stopReason
// (https://agentclientprotocol.com/protocol/prompt-turn#stop-reasons).
type StopReason string

// The stop reasons of ACP.
const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

// EventKind is the kind of an Event.
type EventKind int

// The events of a turn, in the order a front end sees them: deltas as the
// model streams, and for each tool call one ToolStart, any ToolUpdates, and
// one ToolEnd; a compaction (its start, its summary, its end) before the
// request it shrinks; last, once, the turn's usage.
const (
	EventTextDelta EventKind = iota
	EventThoughtDelta
	EventToolStart
	EventToolUpdate
	EventToolEnd
	// EventUsage ends a turn that asked a model: Event.Usage says what it
	// used and how full the context is.
	EventUsage
	// EventCompaction reports a step of a compaction of the session's
	// history for the model (Event.Compaction): its start, the pieces of
	// its summary, then its end.
	EventCompaction
	// EventSubagent reports a step of a subagent that a task call of the
	// turn runs (Event.Subagent), between the call's ToolStart and its
	// ToolEnd.
	EventSubagent
)

// String returns the name of k.
func (k EventKind) String() string {
	switch k {
	case EventTextDelta:
		return "text_delta"
	case EventThoughtDelta:
		return "thought_delta"
	case EventToolStart:
		return "tool_start"
	case EventToolUpdate:
		return "tool_update"
	case EventToolEnd:
		return "tool_end"
	case EventUsage:
		return "usage"
	case EventCompaction:
		return "compaction"
	case EventSubagent:
		return "subagent"
	}
	return "event(" + strconv.Itoa(int(k)) + ")"
}

// ToolKind is the ACP tool kind shown for a call
// (https://agentclientprotocol.com/protocol/tool-calls#creating).
type ToolKind string

// The ACP tool kinds. A tool declares its kind with [Tool.Kind]; without
// one the runner shows read for tools annotated readOnlyHint and other for
// the rest.
const (
	ToolKindRead    ToolKind = "read"
	ToolKindEdit    ToolKind = "edit"
	ToolKindDelete  ToolKind = "delete"
	ToolKindMove    ToolKind = "move"
	ToolKindSearch  ToolKind = "search"
	ToolKindExecute ToolKind = "execute"
	ToolKindThink   ToolKind = "think"
	ToolKindFetch   ToolKind = "fetch"
	ToolKindOther   ToolKind = "other"
)

// ValidToolKind reports whether k is one of the ACP tool kinds.
func ValidToolKind(k ToolKind) bool {
	switch k {
	case ToolKindRead, ToolKindEdit, ToolKindDelete, ToolKindMove, ToolKindSearch,
		ToolKindExecute, ToolKindThink, ToolKindFetch, ToolKindOther:
		return true
	}
	return false
}

// ToolStatus is the status of a tool call, following ACP.
type ToolStatus string

// The statuses of a tool call.
const (
	ToolPending    ToolStatus = "pending"
	ToolInProgress ToolStatus = "in_progress"
	ToolCompleted  ToolStatus = "completed"
	ToolFailed     ToolStatus = "failed"
)

// Event is one step of a turn streamed to the front end.
type Event struct {
	Kind EventKind
	// Text is the delta of EventTextDelta and EventThoughtDelta.
	Text string
	// Call is set for the tool events.
	Call *ToolCallEvent
	// Usage is set for EventUsage, Compaction for EventCompaction.
	Usage      *UsageReport
	Compaction *CompactionReport
	// Subagent is set for EventSubagent.
	Subagent *SubagentEvent
}

// MaxToolTitle is the most characters (runes) of a tool call's title
// (ToolCallEvent.Title) the user is shown: titles are made one line of
// visible text, at most this long (bridge, for an MCP server's tool title;
// gateway/runner, for every call; acp, for one replayed from the store).
const MaxToolTitle = 200

// ToolCallEvent describes a tool call at one step.
type ToolCallEvent struct {
	// ID is unique within the session.
	ID string `json:"id"`
	// Name is the tool's model-facing name; Title is its display title.
	Name  string   `json:"name"`
	Title string   `json:"title"`
	Kind  ToolKind `json:"kind"`
	// RawInput is the arguments object, never nil.
	RawInput map[string]any `json:"rawInput"`
	Status   ToolStatus     `json:"status"`
	// Update is the progress report of an EventToolUpdate, if any.
	Update *ToolUpdate `json:"update,omitempty"`
	// Result is the outcome of an EventToolEnd. For a call that could not be
	// carried out it is an error result whose text says why.
	Result *Result `json:"result,omitempty"`
}
