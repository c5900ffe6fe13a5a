package bridge

import (
	"errors"
	"fmt"
)

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

// StdioRefusedError is the refusal of a stdio server that would run on a
// gateway host whose operator does not allow its command
// (Options.StdioPolicy, as acp-agent gateway sets it). Its text states the
// fact; Remedy says what the user can do (a [gateway.Remedier]), and
// [gateway.ErrorText] shows both:
//
//	stdio server "fs" would run "npx" on the gateway host, which runs only
//	the commands its operator allows (config gateway.allowCommands); run the
//	editor's stdio servers on the editor's machine with `acp-agent connect
//	URL`
type StdioRefusedError struct {
	// Server is the server's name; Command the program it would run, as
	// the entry gave it.
	Server, Command string
	// GatewayURL is the gateway's ACP URL, for the remedy to name; empty
	// writes the placeholder URL.
	GatewayURL string
}

// Error states the refusal, naming the server, the command and the
// configuration key that allows commands.
func (e *StdioRefusedError) Error() string {
	return fmt.Sprintf("stdio server %q would run %q on the gateway host, which runs only the commands its operator allows (config gateway.allowCommands)",
		e.Server, e.Command)
}

// Remedy is what the user can do: run the stdio servers on the editor's
// machine with acp-agent connect, which starts them there and hands them
// to the gateway over MCP-over-ACP.
func (e *StdioRefusedError) Remedy() string {
	url := e.GatewayURL
	if url == "" {
		url = "URL"
	}
	return "run the editor's stdio servers on the editor's machine with `acp-agent connect " + url + "`"
}
