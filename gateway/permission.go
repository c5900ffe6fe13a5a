package gateway

import "context"

// PermissionRequest asks the user whether a tool call may run (ACP
// session/request_permission:
// https://agentclientprotocol.com/protocol/tool-calls#requesting-permission).
type PermissionRequest struct {
	// Call is the pending tool call, as its ToolStart event showed it.
	Call ToolCallEvent
	// Content, if set, is shown with the question (ACP tool call
	// content): what a request other than a plain tool call asks for,
	// such as an MCP server's sampling request.
	Content []Content
	// Always, if set, is the label of the "allow always" answer; empty
	// means "Always allow <Call.Title> in this session".
	Always string
	// Subagent, if set, is the Name of the child run (a task call's
	// subagent, see [Subagent]) whose call this is; Call.Title then starts
	// with the task's description. A front end that shows subagents asks
	// under the child's session.
	Subagent string
}

// PermissionOutcome is the user's answer.
type PermissionOutcome int

// The answers to a PermissionRequest.
const (
	PermissionAllowOnce PermissionOutcome = iota
	PermissionAllowAlways
	PermissionReject
	PermissionCancelled
	// PermissionUnavailable: no one could be asked (the front end's client
	// cannot answer permission questions), so the call is refused; the model
	// is told so.
	PermissionUnavailable
)

// AskFunc asks the user about one tool call. It returns PermissionCancelled,
// or an error, when the question could not be answered (the turn was
// cancelled, the client went away).
type AskFunc func(ctx context.Context, req PermissionRequest) (PermissionOutcome, error)
