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
// otherwise. A front end without an editor (the MCP server mode) passes nil.
package editor

import "context"

// Capabilities are the client methods an Editor offers: the client's
// fs.readTextFile, fs.writeTextFile and terminal capabilities.
type Capabilities struct {
	ReadTextFile  bool
	WriteTextFile bool
	Terminal      bool
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
