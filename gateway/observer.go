package gateway

import "time"

// Observer is told what an agent loop does, for metrics: it sees counts,
// durations and bounded names, never prompts, arguments or results. Every
// method is called on the turn's own goroutines (a tool call's on the
// call's), so an implementation must be safe for concurrent use and must
// not block: a slow Observer slows the turn. A nil Observer is off.
type Observer interface {
	// ModelRequest reports one request to model (its ID): the usage the
	// provider reported (zero when it reported none), priced; d is the
	// request's wall time; err is its failure, if any.
	ModelRequest(model string, u Usage, d time.Duration, err error)
	// TurnEnded reports a finished turn of model: its stop reason ("" when
	// it failed with err) and its wall time.
	TurnEnded(model string, stop StopReason, d time.Duration, err error)
	// ToolCallEnded reports a finished tool call: server is the tool's
	// Group ("" for the runner's own tools and others without one), tool
	// the tool's model-facing name ("" for a name the session has no tool
	// of), outcome "ok", "error" (an error result) or "refused" (it never
	// ran: unknown, denied, declined or cancelled first); d is the time
	// Execute took (zero for a refused call).
	ToolCallEnded(server, tool, outcome string, d time.Duration)
	// PermissionDecided reports the decision on one tool call that the
	// permissions policy covers: "allow" and "deny" (the policy's own
	// answer), "read_only" (refused by read-only mode, nobody asked),
	// "allow_once", "allow_always", "reject", "cancelled" or "unavailable"
	// (the user's, see PermissionOutcome), "granted" (an earlier "allow
	// always").
	PermissionDecided(decision string)
}

// String returns the snake_case name of o, as metrics and logs show it.
func (o PermissionOutcome) String() string {
	switch o {
	case PermissionAllowOnce:
		return "allow_once"
	case PermissionAllowAlways:
		return "allow_always"
	case PermissionReject:
		return "reject"
	case PermissionCancelled:
		return "cancelled"
	case PermissionUnavailable:
		return "unavailable"
	}
	return "unknown"
}
