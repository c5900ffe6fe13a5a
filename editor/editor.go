// Package editor is what a session's client, the editor, can do for the
// session's tools: read and write its files (with the buffers the user has
// not saved yet) and run commands in its terminals. It follows ACP's client
// methods fs/* (https://agentclientprotocol.com/protocol/file-system) and
// terminal/* (https://agentclientprotocol.com/protocol/terminals).
//
// Package acp implements Editor over the ACP connection, offering only what
// the client advertised at initialize; package session carries it to the
// session's in-process MCP servers (session.InProcessEnv); the built-in tools
// (package bridge/builtin) use it when it offers a method and work locally
// otherwise, or, on a gateway (builtin.Options.EditorOnly), fail the call. A
// front end without an editor (the MCP server mode) passes nil.
package editor

import "context"

// Elicitation modes (ACP and MCP elicitation/create "mode").
const (
	ModeForm = "form"
	ModeURL  = "url"
)

// Elicitation answers (ACP and MCP elicitation/create "action").
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// Elicitor is an Editor that can ask its user for input on behalf of a
// tool: ACP elicitation/create and elicitation/complete
// (https://agentclientprotocol.com/rfds/elicitation, unstable in
// acp-go-sdk v0.13.5). It offers only the modes in Capabilities
// (ElicitForm, ElicitURL); a mode it does not offer fails without a
// request. Methods may be called concurrently.
type Elicitor interface {
	// Elicit asks the user and returns the answer. Ending ctx withdraws
	// the question (the request is cancelled with $/cancel_request) and
	// returns ctx's error.
	Elicit(ctx context.Context, req ElicitRequest) (ElicitResult, error)
	// CompleteElicitation tells the client that the out-of-band interaction
	// of the URL-mode elicitation id has finished (ACP
	// elicitation/complete).
	CompleteElicitation(ctx context.Context, id string) error
}

// ElicitRequest is one question to the user.
type ElicitRequest struct {
	// Mode is ModeForm or ModeURL.
	Mode string
	// Message tells the user what is asked and why.
	Message string
	// ToolCallID is the tool call the question belongs to, or empty.
	ToolCallID string
	// Schema is the form's JSON Schema (mode form): an object of flat
	// properties, with defaults and enums as the server gave them.
	Schema map[string]any
	// URL and ID are the page to open and the elicitation's ID (mode url).
	URL string
	ID  string
}

// ElicitResult is the user's answer: Action is ActionAccept (with
// Content, the form's values, for a form), ActionDecline or ActionCancel.
type ElicitResult struct {
	Action  string
	Content map[string]any
}

// Capabilities are the client methods an Editor offers: the client's
// fs.readTextFile, fs.writeTextFile and terminal capabilities, and the
// elicitation modes it serves (elicitation.form, elicitation.url).
type Capabilities struct {
	ReadTextFile  bool
	WriteTextFile bool
	Terminal      bool
	// ElicitForm and ElicitURL say the client renders form-mode and
	// URL-mode elicitations (ACP elicitation/create; see Elicitor).
	ElicitForm bool
	ElicitURL  bool
}

// Editor is one session's editor. Methods the editor does not offer (see
// Capabilities) fail without a request. Paths are absolute. Errors are the
// editor's answers (for example a JSON-RPC error naming a missing file) or
// the connection's. Methods may be called concurrently.
type Editor interface {
	// Capabilities reports what the editor offers; it does not change
	// during a session.
	Capabilities() Capabilities
	// ReadTextFile returns the text of the file at path as the editor has
	// it, from line (1-based; 0 means the first) for at most limit lines
	// (0 means all): ACP fs/read_text_file.
	ReadTextFile(ctx context.Context, path string, line, limit int) (string, error)
	// WriteTextFile creates or overwrites the file at path with content:
	// ACP fs/write_text_file.
	WriteTextFile(ctx context.Context, path, content string) error
	// CreateTerminal starts a command in a new terminal of the editor and
	// returns it at once, while the command runs: ACP terminal/create. The
	// caller must Release it.
	CreateTerminal(ctx context.Context, req TerminalRequest) (Terminal, error)
}

// TerminalRequest is a command to run in an editor terminal.
type TerminalRequest struct {
	// Command is the program; Args its arguments.
	Command string
	Args    []string
	// Cwd is the absolute working directory; empty means the session's.
	Cwd string
	// Env are extra environment variables, "NAME=value".
	Env []string
	// OutputByteLimit is the most output bytes the editor keeps (it drops
	// the oldest); 0 means the editor's default.
	OutputByteLimit int
}

// Terminal is a command running in an editor terminal. Its methods follow
// ACP terminal/output, terminal/wait_for_exit, terminal/kill and
// terminal/release; after Release only ID is valid.
type Terminal interface {
	// ID is the terminal's ID, which tool call content can show
	// ({"type":"terminal","terminalId":ID}).
	ID() string
	// Output returns the output so far and, once the command has exited,
	// its exit status.
	Output(ctx context.Context) (Output, error)
	// WaitForExit returns when the command has exited.
	WaitForExit(ctx context.Context) (ExitStatus, error)
	// Kill ends the command; the terminal stays until Release.
	Kill(ctx context.Context) error
	// Release kills the command if it still runs and frees the terminal.
	Release(ctx context.Context) error
}

// Output is a terminal's output so far.
type Output struct {
	Text string
	// Truncated says the editor dropped the start of the output to stay
	// within its byte limit.
	Truncated bool
	// Exit is the exit status once the command has exited, else nil.
	Exit *ExitStatus
}

// ExitStatus is how a command ended: its exit Code, or the Signal that
// ended it (then Code is nil).
type ExitStatus struct {
	Code   *int
	Signal string
}
