package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
	"github.com/seed02d3eb6b/acp-agent/sandbox/process"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// ProtocolVersion is the MCP protocol version the bridge asks for: 2026-07-28,
// go-sdk's latest. The handshake opens with the server/discover probe
// (SEP-2575); a server that does not speak 2026-07-28 (TypeScript SDK servers
// as of this writing, stateful go-sdk Streamable HTTP servers, older SDKs)
// answers it with an error and the bridge falls back, on the same
// connection, to initialize at 2025-11-25 and negotiates down from there as
// usual. That costs one round trip per connect (about 3 ms against
// server-everything on loopback; a stateful go-sdk HTTP server also opens
// and drops a session for it) and is not remembered across connects.
//
// On a 2026-07-28 session the server's requests to the client (elicitation,
// sampling, roots) arrive as input requests of a tools/call result (SEP-2322)
// and reach the same handlers (a go-sdk server that still sends them as
// requests gets an error from its own SDK there, and its tool fails);
// list-changed notifications come over
// subscriptions/listen; the log level travels in each request's _meta
// (mcplog.go) instead of logging/setLevel. Every request carries the
// per-request _meta envelope (SEP-2575), and Streamable HTTP requests the
// Mcp-Method and Mcp-Name headers (SEP-2243).
const ProtocolVersion = "2026-07-28"

// Defaults of Options.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultListTimeout    = 30 * time.Second
	DefaultCallTimeout    = 120 * time.Second
)

// Options configure a Manager. The zero value is valid.
type Options struct {
	// Cwd is the session working directory: the working directory of stdio
	// children (unless StdioDir is set) and the one MCP root the bridge
	// advertises. Empty means the agent's own working directory and no
	// roots.
	Cwd string
	// StdioDir, if set, is the working directory of stdio children instead
	// of Cwd, which then only names the root: for a session whose cwd is
	// on its client's machine, not this one (a network gateway's).
	StdioDir string
	// ClientInfo is the MCP clientInfo sent in initialize. Nil means
	// {name: "acp-agent", version: "dev"}.
	ClientInfo *mcp.Implementation
	// Timeouts are the defaults of every server; a ServerSpec may override
	// them. Zero fields mean DefaultConnectTimeout, DefaultListTimeout and
	// DefaultCallTimeout.
	Timeouts Timeouts
	// Grace is how long a stdio child gets to exit after its stdin is closed,
	// before SIGTERM. Zero or negative means process.DefaultGrace (5s).
	Grace time.Duration
	// Env builds stdio children's environments. Nil means the default policy.
	Env *environ.Policy
	// StdioPolicy, if non-nil, decides whether a stdio server may start on
	// this host: it is called with the server's spec before its process
	// would start (before Options.Dial too, so what would supply the
	// transport does not change the decision), once per connect, from the
	// goroutine connecting that server (servers connect in parallel, so it
	// may be called concurrently). A non-nil error fails the server at once
	// (StateFailed, the error its ServerStatus.Err as it is, shown with
	// gateway.ErrorText like any failure) and no process is started; nil
	// lets it start. acp-agent gateway refuses the editor's stdio servers, which
	// would run on the gateway host, with a *StdioRefusedError unless its
	// operator allows the command. Nil allows every stdio server.
	StdioPolicy func(spec ServerSpec) error
	// Admit, if non-nil, decides whether a server may be used at all (the
	// managed policy of acp-agent's --managed-config): it is called with
	// the spec of every server but a TransportInProcess one before any
	// process starts or connection opens (before StdioPolicy and
	// Options.Dial), once per connect, from the goroutine connecting that
	// server (servers connect in parallel, so it may be called
	// concurrently). A non-nil error fails the server at once (StateFailed,
	// the error its ServerStatus.Err as it is, shown with
	// gateway.ErrorText like any failure) and nothing of it starts; nil
	// admits it. Nil admits every server.
	Admit func(spec ServerSpec) error
	// Confine confines the stdio servers by the session's mode. Nil
	// confines nothing.
	Confine *Confine
	// URLs decides which http and sse servers may be reached, on every
	// connection. Nil means the default policy.
	URLs *urlpolicy.Policy
	// Limits are the session's quotas (tools per session, result sizes).
	// Zero fields mean the sandbox defaults.
	Limits quota.Limits
	// CallsPerMinute is the default rate limit of each server's tool calls;
	// a ServerSpec may override it. Zero means quota.DefaultCallsPerMinute,
	// negative means no limit.
	CallsPerMinute int
	// Clock is the rate limiters' clock. Nil means time.Now.
	Clock func() time.Time
	// Logger receives the bridge's logs, with the query values of URLs
	// redacted (urlpolicy.RedactingHandler). Nil discards them.
	Logger *slog.Logger
	// OnToolsChanged, if non-nil, is called with the session's new tool set
	// after a server's notifications/tools/list_changed changed it (from a
	// goroutine of the Manager, never after Close returns). Names stay
	// stable: the same tools keep their names.
	OnToolsChanged func(tools []*gateway.Tool)
	// Dial, if non-nil, supplies the transport of a server instead of the
	// built-in ones: tests use in-memory transports, and transports that live
	// outside the bridge plug in here. A nil transport with a nil error falls
	// back to the built-in transport of spec.Transport.
	Dial func(ctx context.Context, spec ServerSpec) (mcp.Transport, error)
	// Elicitor, if non-nil with a mode and Elicit set, lets the servers ask
	// the session's user for input (MCP elicitation) in its modes. Nil
	// means no elicitation is advertised.
	Elicitor *Elicitor
	// OAuth, if non-nil with a Store, lets http and sse servers ask the
	// user to sign in (see OAuth). Nil means a server that answers 401
	// fails to connect.
	OAuth *OAuth
	// OnStateChanged, if non-nil, is called with a server's status when a
	// connect that went on after Connect returned (a sign-in) ends, in
	// StateConnected or StateFailed, after the tools were bridged again and
	// OnToolsChanged was called; also after Login's connect. It is called
	// from a goroutine of the Manager, never after Close returns, and must
	// not block for long.
	OnStateChanged func(ServerStatus)
	// OnLinkChanged, if non-nil, is called with a server's status when its
	// connection ends on its own after it connected (StateLost: an http or
	// sse server the next call dials again; StateFailed: a stdio server),
	// and when a lost server is connected again (StateConnected). Its
	// tools stay bridged throughout. It is called from a goroutine of the
	// Manager or of a tool call, never after Close returns, and must not
	// block for long.
	OnLinkChanged func(ServerStatus)
	// OnPromptsChanged, if non-nil, is called when the session's prompt
	// commands (Prompts) may have changed: after a server's
	// notifications/prompts/list_changed was listed again, and after a
	// server connected late (a sign-in, Login). It is called from a
	// goroutine of the Manager, never after Close returns, and must not
	// block for long.
	OnPromptsChanged func()
	// Sampler, if non-nil with Sample set, serves the servers'
	// sampling/createMessage (MCP sampling) and makes the bridge advertise
	// it. Nil means no sampling is advertised and a server that asks gets
	// a clear error.
	Sampler *Sampler
	// ToolLists, if non-nil, holds the tool lists of lazy in-process
	// servers (ServerSpec.ToolsKey) and is meant to be shared by every
	// Manager of the process: a key is listed once. Nil means each Manager
	// lists its lazy servers itself, through a connection closed right
	// after.
	ToolLists *ToolLists
}

// ServerStatus is a snapshot of one server of a session, for /servers and the
// session-start report.
type ServerStatus struct {
	Name      string
	Transport Transport
	State     State
	// Err is why the server failed or was lost (State is StateFailed or
	// StateLost), else nil.
	Err error
	// RetryAt is, for a StateLost server, the earliest time the next call
	// dials it again; zero means the next call does, at once.
	RetryAt time.Time
	// Tools is the number of tools bridged from the server.
	Tools int
	// LeftOutCount is the number of the server's tools that were not bridged
	// because the session reached Limits.ToolsPerSession. The limit is shared
	// fairly: every connected server gets an equal share (or all its tools,
	// if fewer) before any server gets more.
	LeftOutCount int
	// LeftOut names the first few (at most 3) of those tools, in the
	// server's order, as examples; nil when none was left out.
	LeftOut []string
	// ServerName and ServerVersion come from the server's initialize result.
	ServerName, ServerVersion string
	// SignInURL is, while the server waits for the user to sign in (State
	// is StateSignIn, or a connected server signs in again), the URL where
	// the user does; else empty.
	SignInURL string
	// Mode is the session mode a stdio server's process started under
	// (the current one keeps it until the server is started again); ""
	// for other transports and before a start.
	Mode confine.Mode
	// Idle says that a lazy in-process server (ServerSpec.ToolsKey, State
	// StateConnected) holds no connection now: the next call of one of its
	// tools connects it.
	Idle bool
	// Disabled says that the server's tools and prompts are out of the
	// session (Manager.SetEnabled) while it keeps running; Tools is then 0.
	Disabled bool
}

// Manager owns the MCP connections of one ACP session. Connect it once; read
// Tools and Servers at any time; Close it when the session ends. All methods
// are safe for concurrent use.
type Manager struct {
	opts Options

	mu      sync.Mutex
	servers []*client          // in spec order
	tools   []*gateway.Tool    // bridged tools in server order, then tool order
	counts  map[string]int     // server name → bridged tools
	leftOut map[string]leftOut // server name → its tools over the session's limit
	// disabled are the servers whose tools and prompts are out of the
	// session (SetEnabled), by name.
	disabled  map[string]bool
	connected bool // Connect was called
	closed    bool
	bg        sync.WaitGroup // connects, which may outlive Connect (a sign-in), and OnLinkChanged calls
}

// NewManager returns a Manager with no servers. opts may be nil.
func NewManager(opts *Options) *Manager {
	m := &Manager{}
	if opts != nil {
		m.opts = *opts
	}
	o := &m.opts
	if o.ClientInfo == nil {
		o.ClientInfo = &mcp.Implementation{Name: "acp-agent", Version: "dev"}
	}
	o.Timeouts = o.Timeouts.Or(Timeouts{Connect: DefaultConnectTimeout, ToolsList: DefaultListTimeout, ToolCall: DefaultCallTimeout})
	o.Limits = o.Limits.WithDefaults()
	if o.Env == nil {
		o.Env = &environ.Policy{}
	}
	if o.URLs == nil {
		o.URLs = &urlpolicy.Policy{}
	}
	if o.Grace <= 0 {
		o.Grace = process.DefaultGrace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// Server URLs may carry secrets in their query (?token=...): nothing the
	// bridge or go-sdk logs shows them.
	o.Logger = slog.New(urlpolicy.RedactingHandler(o.Logger.Handler()))
	return m
}

// Connect connects every server of specs in parallel (start, initialize,
// tools/list with pagination) and returns when each has connected, failed,
// or is waiting for the user to sign in (StateSignIn: its connect goes on in
// the background, and Options.OnStateChanged hears how it ends). A failing
// server never fails the others: its reason is in Servers. Specs must have
// unique names. Connect may be called once; later calls, and calls after
// Close, return an error.
func (m *Manager) Connect(ctx context.Context, specs []ServerSpec) error {
	servers := make([]*client, len(specs))
	for i, spec := range specs {
		servers[i] = m.newServer(spec)
	}
	m.mu.Lock()
	if m.closed || m.connected {
		m.mu.Unlock()
		return fmt.Errorf("bridge: Manager.Connect called twice or after Close")
	}
	m.servers, m.connected = servers, true
	for _, s := range servers {
		m.bg.Go(func() { s.connect(ctx, true) })
	}
	m.mu.Unlock()
	for _, s := range servers {
		<-s.conn.settled
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	m.tools, m.counts, m.leftOut = bridgeTools(m.enabled(), m.opts.Limits.ToolsPerSession)
	return nil
}

// leftOutExamples is how many names of a server's left-out tools are kept
// for ServerStatus.LeftOut.
const leftOutExamples = 3

// leftOut is what a server lost to Limits.ToolsPerSession.
type leftOut struct {
	count    int      // tools not bridged
	examples []string // the first leftOutExamples of their names
}

// bridgeTools wraps the tools of every connected server as gateway Tools with
// session-unique names, in server order, then tool order. At most limit tools
// are bridged, shared fairly (fairShares); what each server lost is returned
// by server name in left.
func bridgeTools(servers []*client, limit int) (tools []*gateway.Tool, counts map[string]int, left map[string]leftOut) {
	type owned struct {
		srv  *client
		tool *mcp.Tool
	}
	var all []owned
	var refs []ToolRef
	have := make([]int, len(servers))
	for i, s := range servers {
		own := s.tools.get()
		// The resource tools (resources.go) come after the server's own.
		srvTools := append(own[:len(own):len(own)], s.resourceTools(own)...)
		for _, t := range srvTools {
			all = append(all, owned{s, t})
			refs = append(refs, ToolRef{Server: s.spec.Name, Tool: t.Name})
		}
		have[i] = len(srvTools)
	}
	names := BridgedNames(refs)
	shares := fairShares(have, limit)
	counts, left = make(map[string]int), make(map[string]leftOut)
	first := 0 // index in all of server i's first tool
	for i, s := range servers {
		for j := range have[i] {
			o := all[first+j]
			if j < shares[i] {
				t := newResourceTool(names[first+j], s, o.tool)
				if t == nil {
					t = newBridgedTool(names[first+j], s, o.tool)
				}
				tools = append(tools, t)
				counts[s.spec.Name]++
				continue
			}
			lo := left[s.spec.Name]
			lo.count++
			if len(lo.examples) < leftOutExamples {
				lo.examples = append(lo.examples, o.tool.Name)
			}
			left[s.spec.Name] = lo
		}
		first += have[i]
	}
	return tools, counts, left
}

// fairShares divides limit tool slots between servers offering have[i]
// tools, by rounds: each round gives every server that still has tools one
// slot, so every server gets its share (limit / servers, or all its tools if
// it has fewer) before any server gets more, and slots a small server does
// not need go to the others. Remainders go to the earlier servers.
func fairShares(have []int, limit int) []int {
	shares := make([]int, len(have))
	for limit > 0 {
		// Every server still wanting tools gets an equal part of what is left
		// (at least one slot each, in order, when fewer slots than servers).
		wanting := 0
		for i, h := range have {
			if shares[i] < h {
				wanting++
			}
		}
		if wanting == 0 {
			break
		}
		part := max(limit/wanting, 1)
		for i, h := range have {
			if limit == 0 {
				break
			}
			if n := min(part, h-shares[i], limit); n > 0 {
				shares[i] += n
				limit -= n
			}
		}
	}
	return shares
}

// rebridge recomputes the session's tools after a refresh and tells
// Options.OnToolsChanged.
func (m *Manager) rebridge() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.tools, m.counts, m.leftOut = bridgeTools(m.enabled(), m.opts.Limits.ToolsPerSession)
	tools := m.tools
	m.mu.Unlock()
	if m.opts.OnToolsChanged != nil {
		m.opts.OnToolsChanged(tools)
	}
}

// stateChanged bridges the tools again after a connect that ended in the
// background, and tells Options.OnStateChanged.
func (m *Manager) stateChanged(s *client) {
	m.rebridge()
	m.promptsChanged()
	if m.opts.OnStateChanged == nil {
		return
	}
	m.mu.Lock()
	closed, count, lo := m.closed, m.counts[s.spec.Name], m.leftOut[s.spec.Name]
	m.mu.Unlock()
	if closed {
		return
	}
	st := s.status(count)
	st.LeftOutCount, st.LeftOut = lo.count, lo.examples
	m.opts.OnStateChanged(st)
}

// linkChanged tells Options.OnLinkChanged that s's connection was lost or
// is back.
// It runs counted in m.bg, so Close waits for it: it is never called after
// Close returns.
func (m *Manager) linkChanged(s *client) {
	if m.opts.OnLinkChanged == nil {
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	count := m.counts[s.spec.Name]
	m.bg.Add(1) // under mu, before Close can wait
	m.mu.Unlock()
	defer m.bg.Done()
	m.opts.OnLinkChanged(s.status(count))
}

// ToolLimit returns the most tools the session bridges (Limits.ToolsPerSession).
func (m *Manager) ToolLimit() int { return m.opts.Limits.ToolsPerSession }

// Tools returns the session's bridged tools. The slice must not be modified.
func (m *Manager) Tools() []*gateway.Tool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tools
}

// Servers returns the status of every server, in the order of the specs.
func (m *Manager) Servers() []ServerStatus {
	m.mu.Lock()
	servers, counts, leftOut := m.servers, m.counts, m.leftOut
	m.mu.Unlock()
	out := make([]ServerStatus, len(servers))
	for i, s := range servers {
		out[i] = s.status(counts[s.spec.Name])
		out[i].Disabled = m.isDisabled(s.spec.Name)
		lo := leftOut[s.spec.Name]
		out[i].LeftOutCount, out[i].LeftOut = lo.count, lo.examples
	}
	return out
}

// Close ends every connection and child process of the session, in parallel.
// It is idempotent, safe to call concurrently with Connect (servers still
// connecting are stopped), and returns within about the grace period plus a
// few seconds. ctx is accepted for symmetry; teardown is never skipped.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	servers := m.servers
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.close)
	}
	wg.Wait()
	m.bg.Wait()
	return nil
}
