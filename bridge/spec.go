package bridge

import "github.com/seed02d3eb6b/acp-agent/sandbox"

// Transport names how the agent reaches an MCP server, following the
// transport names of ACP mcpServers entries
// (https://agentclientprotocol.com/protocol/session-setup#mcp-servers).
type Transport string

// The transports of ACP mcpServers entries. A ServerSpec may carry any other
// value (an entry type the client sent that the agent does not know); the
// Manager reports such a server as failed.
const (
	TransportStdio Transport = "stdio"
	TransportHTTP  Transport = "http"
	TransportSSE   Transport = "sse"
)

// ServerSpec describes one MCP server of a session, as validated from the
// client's mcpServers entry.
type ServerSpec struct {
	// Name is the server's name, unique within the session and never empty.
	Name string
	// Transport selects the connection kind.
	Transport Transport
	// Command, Args and Env start a stdio server. Env holds exactly the
	// variables the client listed, in order; the child gets them on top of
	// the sandbox baseline (see sandbox.ChildEnv).
	Command string
	Args    []string
	Env     []sandbox.EnvVar
	// URL and Headers reach an http or sse server.
	URL     string
	Headers []Header
}

// Header is one HTTP header sent to an http or sse MCP server.
type Header struct {
	Name  string
	Value string
}
