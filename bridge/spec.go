package bridge

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
	"github.com/seed02d3eb6b/acp-agent/signin"
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
	// TransportInProcess connects ServerSpec.Server, an *mcp.Server of this
	// process, over the go-sdk's in-memory transports: no child, no pipe.
	// Only Go code sets it (no front end's JSON maps onto it).
	TransportInProcess Transport = "inprocess"
	// TransportACP is a server the ACP client hosts and carries on the ACP
	// connection itself (MCP-over-ACP, ACP's unstable mcp/connect,
	// mcp/message and mcp/disconnect; a draft proposal). The bridge has no
	// transport of its own for it: the front end that owns the ACP
	// connection supplies it through Options.Dial.
	TransportACP Transport = "acp"
)

// ReservedServerName is the name of the agent's built-in tool server (tools
// "mcp__acp__<tool>"). [ServerSpec.Validate] refuses it for any server but
// an in-process one, so no client or config entry can take its tools' names.
const ReservedServerName = "acp"

// ServerSpec describes one MCP server of a session, as validated from the
// client's mcpServers entry or the config file.
type ServerSpec struct {
	// Name is the server's name, unique within the session and never empty.
	Name string
	// Transport selects the connection kind.
	Transport Transport
	// Command, Args and Env start a stdio server. Env holds exactly the
	// variables the client listed, in order; the child gets them on top of
	// the sandbox baseline (see environ.Policy).
	Command string
	Args    []string
	Env     []environ.Var
	// Sandbox is a stdio server's own confinement rules (config
	// servers.<name>.sandbox), applied within the session's mode.
	Sandbox confine.Server
	// URL and Headers reach an http or sse server; the headers are sent on
	// every request.
	URL     string
	Headers []Header
	// Timeouts override Options.Timeouts for this server; zero fields inherit.
	Timeouts Timeouts
	// CallsPerMinute overrides Options.CallsPerMinute for this server; zero
	// inherits, negative means no limit.
	CallsPerMinute int
	// OAuth is the pre-registered OAuth client of an http or sse server
	// (config servers.<name>.oauth), used when the server asks the user to
	// sign in (Options.OAuth); the zero value means none: the agent
	// registers itself (Client ID Metadata Document, else dynamic
	// registration).
	OAuth signin.Client
	// Server is the server of a TransportInProcess spec; each connection
	// (the first and any redial) is a new session of it (mcp.Server.Connect),
	// closed with the Manager. The Server may serve other sessions too.
	Server *mcp.Server
	// NewServer, for a TransportInProcess spec without Server, builds the
	// server when the Manager first connects it (a lazy one, ToolsKey: on
	// the first call of one of its tools, and to list its tools when its
	// key is new); the server it returns serves every later connection of
	// the Manager. It must not return nil (the connect fails, naming the
	// server). So an idle session does not even hold the server.
	NewServer func() *mcp.Server
	// ToolsKey, when non-empty, makes a TransportInProcess server lazy: the
	// Manager takes its tools (and serverInfo) from Options.ToolLists under
	// this key, listing them through a short-lived connection only when
	// the key is new, and connects the server for the calls of its tools
	// (calls under way share one connection, closed when the last one
	// ends), so that an idle session holds no connection. Every server given
	// the same key must list the same tools, and they must not change (no
	// tools/list_changed); its resources and prompts are not bridged. A
	// failed first connect is the call's error; the next call tries again.
	// Empty means the server is connected at once, as any other. Ignored
	// for other transports.
	ToolsKey string
	// ServerID is the id of a TransportACP server, opaque, chosen by the
	// client that hosts it (the entry's "id", as the acp-go-sdk v0.13
	// draft names it, or "serverId", as the published schema does).
	ServerID string
	// ServerIDKey is the key the client's entry gave ServerID under: "id"
	// (also when an equal "serverId" is given beside it; empty means "id")
	// or "serverId" (alone). The front end's transport picks the binding
	// of MCP-over-ACP by it: the acp-go-sdk v0.13 draft for "id", the
	// published binding for "serverId".
	ServerIDKey string
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

// SpecError is a ServerSpec that breaks one of the rules of
// [ServerSpec.Validate]. Front ends wrap it in their own error, which names
// the entry (its index in ACP mcpServers, or its config key).
type SpecError struct {
	// Server is the spec's Name (possibly the invalid name itself).
	Server string
	// Field is the entry's JSON field at fault: "name", "type", "command", "id",
	// "env", "url", "headers" or "timeouts".
	Field string
	// Rule says what was wrong, quoting the offending value.
	Rule string
	// Err is the cause when it is a sentinel, such as ErrUnsupportedTransport.
	Err error
}

// Error names the server (quoted, so that nothing invisible reaches a
// terminal), the field and the rule: `server "fs" command: must be a
// non-empty string`, or `server name: ...` when the name is at fault.
func (e *SpecError) Error() string {
	if e.Field == "name" {
		return "server name: " + e.Rule
	}
	return fmt.Sprintf("server %q %s: %s", e.Server, e.Field, e.Rule)
}

// Unwrap returns e.Err.
func (e *SpecError) Unwrap() error { return e.Err }

// Validate checks s against the rules every front end shares (ACP
// mcpServers entries and the config file's mcpServers) and returns nil or a
// *SpecError for the first rule broken, in this order:
//
//   - Name: [ValidateServerName] (visible text, not empty), and not
//     [ReservedServerName] unless it is an inprocess spec with a Server;
//   - Transport: stdio, http, sse, acp or inprocess; any other value is a *SpecError with
//     Field "type" wrapping [ErrUnsupportedTransport];
//   - stdio: Command is not empty or white space; every Env name is
//     non-empty with no '=' or NUL ([environ.ValidName]) and no Env value
//     holds NUL;
//   - http and sse: URL is not empty or white space; every header passes
//     [ValidateHeader];
//   - inprocess: Server is not nil;
//   - acp: ServerID is not empty or white space;
//   - Timeouts: no field is negative.
//
// Validate does not check the URL against a [urlpolicy.Policy] (the Manager
// does, when it connects) nor that names are unique within a session (the
// front end does, naming both entries).
func (s ServerSpec) Validate() error {
	if err := ValidateServerName(s.Name); err != nil {
		return &SpecError{Server: s.Name, Field: "name", Rule: err.Error()}
	}
	if s.Name == ReservedServerName && (s.Transport != TransportInProcess || s.Server == nil && s.NewServer == nil) {
		return &SpecError{Server: s.Name, Field: "name", Rule: fmt.Sprintf("%q is reserved for the agent's built-in tools (mcp__%s__*); choose another name", s.Name, s.Name)}
	}
	switch s.Transport {
	case TransportStdio:
		if strings.TrimSpace(s.Command) == "" {
			return &SpecError{Server: s.Name, Field: "command", Rule: "must be a non-empty string"}
		}
		for _, e := range s.Env {
			if !environ.ValidName(e.Name) {
				return &SpecError{Server: s.Name, Field: "env", Rule: fmt.Sprintf("variable name %q must be non-empty and contain no '=' or NUL", e.Name)}
			}
			if strings.ContainsRune(e.Value, 0) {
				return &SpecError{Server: s.Name, Field: "env", Rule: fmt.Sprintf("value of %s contains NUL", e.Name)}
			}
		}
	case TransportHTTP, TransportSSE:
		if strings.TrimSpace(s.URL) == "" {
			return &SpecError{Server: s.Name, Field: "url", Rule: "must be a non-empty string"}
		}
		for _, h := range s.Headers {
			if err := ValidateHeader(h.Name, h.Value); err != nil {
				return &SpecError{Server: s.Name, Field: "headers", Rule: err.Error()}
			}
		}
	case TransportInProcess:
		if s.Server == nil && s.NewServer == nil {
			return &SpecError{Server: s.Name, Field: "type", Rule: `"inprocess" is only for servers of the agent's own process, given as a non-nil *mcp.Server (or NewServer) from Go`}
		}
	case TransportACP:
		if strings.TrimSpace(s.ServerID) == "" {
			key := s.ServerIDKey
			if key == "" {
				key = "id"
			}
			return &SpecError{Server: s.Name, Field: key, Rule: "must be a non-empty string (the id the client gave the server it hosts)"}
		}
	default:
		return &SpecError{Server: s.Name, Field: "type", Rule: fmt.Sprintf("%q is not a transport (want stdio, http, sse or acp)", s.Transport), Err: ErrUnsupportedTransport}
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{{"connect", s.Timeouts.Connect}, {"toolsList", s.Timeouts.ToolsList}, {"toolCall", s.Timeouts.ToolCall}} {
		if t.d < 0 {
			return &SpecError{Server: s.Name, Field: "timeouts", Rule: fmt.Sprintf("%s: %v is negative", t.key, t.d)}
		}
	}
	return nil
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

// ValidateServerName checks the name of an MCP server entry (ACP mcpServers
// or the config file's mcpServers) and returns nil, or an error stating the
// rule broken, with the name quoted so that nothing invisible reaches a
// terminal. A name must be valid UTF-8, not empty or only white space, and
// hold no control characters (C0, DEL, C1), no invisible formatting
// characters (Unicode Cf: zero-width and bidirectional controls such as
// U+202E) and no line or paragraph separators (U+2028, U+2029): the name is
// shown in /servers, in logs and in tool labels, where such characters hide
// or reorder text.
func ValidateServerName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("must be a non-empty string")
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("name %q is not valid UTF-8", name)
	}
	for i, r := range name {
		if textsafe.Hidden(r) {
			return fmt.Errorf("name %q has the control or invisible formatting character %U at byte %d; a server name must be visible text", name, r, i)
		}
	}
	return nil
}
