package gateway

import (
	"context"
)

// Gateway is what the session core drives: the extra tools of each session
// and its prompt turns. It is implemented in process by runner.Local.
// Methods are safe for concurrent use; the caller runs one Send per session
// at a time.
type Gateway interface {
	// SetExtraTools replaces the extra tools of sessionKey atomically.
	SetExtraTools(ctx context.Context, sessionKey string, tools []*Tool) error
	// ClearExtraTools removes them and forgets the session's conversation.
	ClearExtraTools(ctx context.Context, sessionKey string) error
	// Send runs one prompt turn; cancelling ctx aborts it and the turn ends
	// with StopCancelled. Events reach emit in order, from one goroutine at
	// a time.
	Send(ctx context.Context, req SendRequest, emit func(Event)) (StopReason, error)
	// Models lists the models a session can choose from, the default first.
	Models() []ModelInfo
}

// ModelInfo describes a model a session can choose.
type ModelInfo struct {
	ID, Label string
	// Thinking says that a turn can turn the model's extended thinking on
	// or off (Toggles.Thinking; its provider is a Thinker); ThinkingOn is
	// whether it thinks when the turn leaves it to the configuration.
	Thinking, ThinkingOn bool
	// ToolSearch says whether the model's requests may defer tools behind
	// search_tools when the session leaves it to the configuration
	// (Toggles.ToolSearch nil): the configuration is not "off". False for
	// the direct model, which sends no requests.
	ToolSearch bool
}

// Toggles are a session's on/off choices for its turns (the ACP front
// end's boolean config options). A nil field leaves the choice to the
// configuration. Changing one changes what the model is sent, so the next
// request re-reads the conversation without the provider's cache once.
type Toggles struct {
	// Thinking turns the model's extended thinking on or off; ignored by a
	// model without ModelInfo.Thinking.
	Thinking *bool `json:"thinking,omitempty"`
	// ToolSearch false offers every tool to the model (tool search off);
	// true defers tools behind search_tools as the configuration says, or,
	// where it turned tool search off, when they are many ("auto").
	ToolSearch *bool `json:"toolSearch,omitempty"`
}

// SendRequest is one user message for a session.
type SendRequest struct {
	SessionKey string
	// RunID identifies the turn in logs.
	RunID string
	// Message is the user's prompt content. It goes to the model as a
	// message, and into the history as the turn's user message, whatever
	// its text: the runner never reads it for a command.
	Message []Content
	// Command is the slash command Message starts with, as the front end
	// classified it, or nil for a message. A Command that is none of the
	// runner's commands and not Unknown is ignored (the message goes to
	// the model). A task's prompt (a subagent's turn) has none.
	Command *Command
	// Model is the ID of the model the session uses; "" means the default.
	Model string
	// Toggles are the session's on/off choices; the zero value leaves all
	// to the configuration.
	Toggles Toggles
	// System is the system prompt of the session (who the agent is, its
	// working directory), or "".
	System string
	// Ask asks the user to permit a tool call (ACP
	// session/request_permission). Nil allows every call the policy would
	// ask about.
	Ask AskFunc
	// ReadOnly says the session is in read-only mode: a call of a tool
	// that may change things (no readOnlyHint, not Confined) is refused
	// before the user is asked, with a result naming the mode.
	ReadOnly bool
	// Tenant is the tenant of a shared gateway whose session this is (a
	// token's tenant, as acp/remote authenticated the connection), for the
	// runner's traces and audit log; "" for a local agent and for the
	// gateway's default tenant. It names; it grants nothing (the session
	// core and its store keep tenants apart).
	Tenant string
	// SessionID is the session's id (its ACP sessionId; an MCP front end
	// conversation's stored id), for the runner's traces and audit log;
	// unlike SessionKey it is never a key the client chose. "" when the
	// caller has no session (tests, a one-off request).
	SessionID string
}

// Command is a slash command the front end found at the start of the
// user's message (package session classifies every prompt once), handed to
// the runner typed so that nothing below re-reads the text. The runner
// runs it whatever the session's model: its direct provider answers
// /tools, /call and /help, the runner itself /usage and /compact.
type Command struct {
	// Name is the command word without its slash: one of the runner's
	// commands ("call"), or, with Unknown, the word as typed ("halp").
	Name string
	// Args is the text after the command word, trimmed of white space; ""
	// when none was given ("/call echo {}" → "echo {}").
	Args string
	// Unknown marks a word shaped like a command that is none of the
	// agent's: the runner answers that it is unknown and asks no model.
	Unknown bool
}
