package gateway

// TaskToolName is the name of the runner's built-in tool that hands a task
// to a subagent: a child turn with a context of its own (as Claude Code's
// Task tool).
const TaskToolName = "task"

// Subagent is one run of a subagent, kept on the Result of the task call
// that ran it (Result.Subagent), so it is stored with the parent session's
// turn and replayed with it. The model never sees it: the call's Content
// is the child's final answer alone.
type Subagent struct {
	// Name names the child within its parent session: "task-" and the
	// task call's ID. The child's gateway session key is the parent's key,
	// "/" and Name; a front end names the child session likewise (ACP: the
	// parent's sessionId, "/" and Name).
	Name string `json:"name"`
	// Title is the task's short description (the call's "description").
	Title string `json:"title"`
	// Type is the configured subagent that ran the task, or "" for the
	// general-purpose one.
	Type string `json:"type,omitempty"`
	// Description says what the child does: its subagent's description,
	// else the start of its prompt.
	Description string `json:"description,omitempty"`
	// Turn is the child's one turn: its prompt, its model's messages and
	// tool calls, its stop reason and usage.
	Turn Turn `json:"turn"`
}

// SubagentState is the state of a child run in a SubagentEvent.
type SubagentState string

// The states of a child run.
const (
	// SubagentRunning: the child works (its start, and each of its
	// events).
	SubagentRunning SubagentState = "running"
	// SubagentDone: the child's turn ended (SubagentEvent.Stop, .Usage).
	SubagentDone SubagentState = "done"
)

// SubagentEvent is what an EventSubagent tells of a child run of the
// turn's task call CallID: its start (State running, Event nil), each of
// its own events (Event), and its end (State done).
type SubagentEvent struct {
	// CallID is the parent's task call that runs the child.
	CallID string
	// Name, Title, Type and Description are the child's (see Subagent).
	Name, Title, Type, Description string
	State                          SubagentState
	// Event is the child's own event, or nil for its start and end.
	Event *Event
	// Prompt is the child's task, at its start.
	Prompt string
	// Progress is a running summary of the child's work for a front end
	// that folds it into the task call ("3 tool calls; now: <title>").
	Progress string
	// Stop and Usage are set at the end: why the child's turn ended and
	// what it used (also added to the parent turn's usage).
	Stop  StopReason
	Usage Usage
}
