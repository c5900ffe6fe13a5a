package bridge

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/seed02d3eb6b/acp-agent/sandbox"
)

// Transport names how the agent reaches an MCP server, following the
// transport names of ACP mcpServers entries
// (https://agentclientprotocol.com/protocol/session-setup#mcp-servers).
type Transport string

// The transports of ACP mcpServers entries. A ServerSpec may carry any other
// value (an entry type the client sent that the agent does not know); the
// Manager reports such a server as failed.
const (
	TransportStdio Transport = "stdio"
	TransportHTTP  Transport = "http" // Streamable HTTP
	TransportSSE   Transport = "sse"  // legacy HTTP+SSE
)

// ServerSpec describes one MCP server of a session, as validated from the
// client's mcpServers entry or the config file.
type ServerSpec struct {
	// Name is the server's name, unique within the session and never empty.
	Name string
	// Transport selects the connection kind.
	Transport Transport
	// Command, Args and Env start a stdio server. Env holds exactly the
	// variables the client listed, in order; the child gets them on top of
	// the sandbox baseline (see sandbox.EnvPolicy).
	Command string
	Args    []string
	Env     []sandbox.EnvVar
	// URL and Headers reach an http or sse server; the headers are sent on
	// every request.
	URL     string
	Headers []Header
	// Timeouts override Options.Timeouts for this server; zero fields inherit.
	Timeouts Timeouts
	// CallsPerMinute overrides Options.CallsPerMinute for this server; zero
	// inherits, negative means no limit.
	CallsPerMinute int
}

// Header is one HTTP header sent to an http or sse MCP server.
type Header struct {
	Name  string
	Value string
}

// Timeouts bound the phases of talking to a server. Zero fields mean "not
// set": a ServerSpec's inherit the Manager's, whose fall back to the
// Default* constants.
type Timeouts struct {
	// Connect bounds starting the transport and the initialize handshake.
	Connect time.Duration
	// ToolsList bounds tools/list, all pages together.
	ToolsList time.Duration
	// ToolCall bounds one tools/call.
	ToolCall time.Duration
}

// Or returns t with each zero field taken from def.
func (t Timeouts) Or(def Timeouts) Timeouts {
	if t.Connect <= 0 {
		t.Connect = def.Connect
	}
	if t.ToolsList <= 0 {
		t.ToolsList = def.ToolsList
	}
	if t.ToolCall <= 0 {
		t.ToolCall = def.ToolCall
	}
	return t
}

// forbiddenHeaders may not be set by a client: they belong to the HTTP
// transport itself, and setting them could smuggle requests.
var forbiddenHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade"}

// ValidateHeader reports why the header name: value may not be sent to an
// MCP server, or nil: the transport's own headers (Host, Content-Length,
// Transfer-Encoding, Connection, Upgrade) are refused, and so is any name or
// value containing CR or LF, or a name that is not an HTTP token.
func ValidateHeader(name, value string) error {
	if strings.ContainsAny(name, "\r\n") || strings.ContainsAny(value, "\r\n") {
		return fmt.Errorf("header %q: name and value must not contain CR or LF", name)
	}
	canon := http.CanonicalHeaderKey(name)
	for _, f := range forbiddenHeaders {
		if canon == f {
			return fmt.Errorf("header %q is set by the transport and may not be sent by a client", name)
		}
	}
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return fmt.Errorf("header %q: the name must be an HTTP token", name)
	}
	return nil
}

func isTokenChar(r rune) bool {
	return r < 0x7f && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}
