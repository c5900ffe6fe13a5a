package bridge

import "errors"

// Errors a tool call or a server status may wrap.
var (
	// ErrUnsupportedTransport: the entry's transport cannot be served.
	ErrUnsupportedTransport = errors.New("unsupported transport")
	// ErrNotConnected: the server failed to connect or lost its connection.
	ErrNotConnected = errors.New("server not connected")
	// ErrTimeout: connect, tools/list or tools/call exceeded its timeout.
	ErrTimeout = errors.New("timeout")

	// errSessionLost: an http or sse server no longer has the client's
	// session (isSessionLost).
	errSessionLost = errors.New("the server lost the MCP session")
)
