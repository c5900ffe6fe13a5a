package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/defaults"
	"github.com/seed02d3eb6b/acp-agent/internal/warmstack"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// Options configure an Agent; the zero value is valid.
type Options struct {
	// Name and Version are the agentInfo of initialize. Empty means
	// "acp-agent" and "dev".
	Name, Version string
	// Logger receives the agent's logs. Nil discards them.
	Logger *slog.Logger
	// SignIn, if set, is the model API key sign-in the agent advertises
	// (auth.go). Nil advertises no auth methods; logout is then
	// method_not_found.
	SignIn *SignIn
	// Handlers are the goroutines the ACP methods' handlers run on,
	// kept between requests so that a turn finds a grown stack
	// (internal/warmstack). Nil: a pool of the Agent's own, at most two
	// idle goroutines per CPU, each for a minute, closed by Shutdown. A
	// process serving many connections (the gateway) gives all its Agents
	// one, and closes it.
	Handlers *warmstack.Pool
}

// Agent is the ACP agent: the session lifecycle of one client over the
// session core, composing the client's one connection (conn, conn.go: the
// wire) and, per session, what the client is told outside the responses to
// its requests (announcer, announce.go). Create it with New and run it with
// Serve; its handlers run concurrently, each request on a goroutine of
// Options.Handlers.
type Agent struct {
	opts Options
	core *session.Core // the sessions, their servers, store and gateway
	log  *slog.Logger
	conn *conn // the connection: reader, writer, engine, dispatch (conn.go)
	// ownHandlers is set when New made opts.Handlers: Shutdown closes it.
	ownHandlers bool

	// sessions holds the sessions this Agent opened (or reopened), by
	// sessionId: it drives only those, and ends them when it ends. An
	// entry stays until session/close or delete (forget); one that another
	// connection reopened since is not this Agent's any more (own).
	sessions sync.Map
	// announcers holds, by sessionId, each session's *announcer: what its
	// client is told outside the responses, in which order (announce.go).
	// An entry is made on first use (open, session/set_title) and stays
	// until session/close or delete (forget).
	announcers sync.Map
	// client is what the client said of itself at initialize.
	client clientCaps

	// beforeAnnounce, if set (by tests), runs in afterNewSession before the
	// notifications are sent.
	beforeAnnounce func()
}

// clientCaps is what the client advertised at initialize, read by the
// handlers that follow it; each field is set once by initialize.
type clientCaps struct {
	// editor are its fs, terminal and elicitation capabilities.
	editor atomic.Pointer[editor.Capabilities]
	// authOffer is how initialize offered the sign-in method (auth.go).
	authOffer atomic.Int32
	// notices, booleanOptions and compaction are its session.notices,
	// session.configOptions.boolean and session.compaction capabilities
	// (notices.go, models.go, compaction.go).
	notices, booleanOptions, compaction atomic.Bool
	// subagents: it advertised clientCapabilities.subagents (subagents.go).
	subagents atomic.Bool
}

// New returns an Agent serving core: its sessions, their servers, the
// store and the gateway (session.NewCore), as mcpserver.New does. opts may
// be nil (every default); it is copied. The Agent ends the sessions of
// core it opened when Serve returns (Shutdown). It panics if core is nil.
func New(core *session.Core, opts *Options) *Agent {
	if core == nil {
		panic("acp.New: core is nil")
	}
	a := &Agent{core: core}
	if opts != nil {
		a.opts = *opts
	}
	defaults.Implementation(&a.opts.Name, &a.opts.Version, &a.opts.Logger)
	a.log = a.opts.Logger
	if a.opts.Handlers == nil {
		a.opts.Handlers, a.ownHandlers = NewHandlers(), true
	}
	a.conn = newConn(a.methods(), a.log, a.core.Limits().MaxMedia, a.opts.Handlers)
	return a
}

// NewHandlers returns a pool for Options.Handlers: at most two idle
// goroutines per CPU (GOMAXPROCS), each for a minute.
func NewHandlers() *warmstack.Pool {
	return warmstack.NewPerCPU()
}

// Serve speaks ACP over in (the client's requests, normally stdin) and out
// (normally stdout), one message a line ([NewLineStream]); see
// [Agent.ServeStream].
func (a *Agent) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	return a.ServeStream(ctx, NewLineStream(in, out))
}

// ServeStream speaks ACP over s until the client's input ends or ctx is
// done, then ends the sessions it opened (Shutdown). Input passes through
// the framing layer first (framing.go): what is not valid JSON-RPC 2.0, or
// is longer than MaxFrameBytes, is answered there and never ends the
// agent. It may be called once.
//
// Every request read is answered before ServeStream returns: at the end of
// the input, reading stops, the requests under way see their context
// cancelled (a prompt answers stopReason "cancelled"), and ServeStream waits
// for their responses (at most eofAnswerWait) on the connection still
// open; only then does the engine see the end of input. Then it waits for
// those Shutdown releases.
func (a *Agent) ServeStream(ctx context.Context, s Stream) error {
	a.conn.start(s)
	a.conn.run(ctx)
	a.Shutdown()
	a.conn.finish(ctx)
	return nil
}

// clientEditor returns the editor of session sid: the client's fs/* and
// terminal/* methods it advertised at initialize (none before initialize),
// its elicitations held until announced is closed (nil: not held).
func (a *Agent) clientEditor(sid string, announced <-chan struct{}) *clientEditor {
	e := &clientEditor{rpc: a.conn.connection(), sid: acpsdk.SessionId(sid), announced: announced}
	if caps := a.client.editor.Load(); caps != nil {
		e.caps = *caps
	}
	return e
}

// Shutdown ends the live sessions this Agent opened, in parallel: running
// prompts are cancelled, every MCP connection closes and every child
// process group is stopped. The core's other sessions (other connections')
// go on: its owner ends them (session.Core.Shutdown). It is idempotent and
// bounded by the bridge's grace period plus a few seconds.
func (a *Agent) Shutdown() {
	var wg sync.WaitGroup
	a.sessions.Range(func(_, v any) bool {
		wg.Go(v.(*session.Session).End)
		return true
	})
	wg.Wait()
	a.conn.tasks.Wait()
	if a.ownHandlers {
		a.opts.Handlers.Close()
	}
}

// initialize serves initialize
// (https://agentclientprotocol.com/protocol/initialization).
func (a *Agent) initialize(_ context.Context, r initializeRequest) (initializeResponse, error) {
	p := r.InitializeRequest
	a.log.Info("initialize", "clientProtocol", p.ProtocolVersion, "client", clientName(p.ClientInfo), "notices", r.Notices, "booleanOptions", r.BooleanOptions, "compaction", r.Compaction)
	a.client.notices.Store(r.Notices)
	a.client.booleanOptions.Store(r.BooleanOptions)
	a.client.compaction.Store(r.Compaction)
	a.client.subagents.Store(r.Subagents)
	a.client.editor.Store(&editor.Capabilities{
		ReadTextFile:  p.ClientCapabilities.Fs.ReadTextFile,
		WriteTextFile: p.ClientCapabilities.Fs.WriteTextFile,
		Terminal:      p.ClientCapabilities.Terminal,
		ElicitForm:    p.ClientCapabilities.Elicitation != nil && p.ClientCapabilities.Elicitation.Form != nil,
		ElicitURL:     p.ClientCapabilities.Elicitation != nil && p.ClientCapabilities.Elicitation.Url != nil,
	})
	return initializeResponse{Title: true, InitializeResponse: acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		AgentInfo:       &acpsdk.Implementation{Name: a.opts.Name, Version: a.opts.Version},
		AgentCapabilities: acpsdk.AgentCapabilities{
			// The extension methods served (ACP extensibility: advertised
			// in _meta): a running session's servers replaced (servers.go).
			Meta: map[string]any{MetaExtensions: []string{methodSetMCPServers}},
			// session/load replays a stored session; clients such as Zed
			// offer to reopen a conversation only when this is set.
			LoadSession:        true,
			PromptCapabilities: acpsdk.PromptCapabilities{EmbeddedContext: true, Image: true},
			// Acp: servers the client hosts (MCP-over-ACP, unstable; mcpacp.go).
			McpCapabilities: acpsdk.McpCapabilities{Http: true, Sse: true, Acp: true},
			SessionCapabilities: acpsdk.SessionCapabilities{
				// The built-in tools work in the additional directories too.
				AdditionalDirectories: &acpsdk.SessionAdditionalDirectoriesCapabilities{},
				Close:                 &acpsdk.SessionCloseCapabilities{},
				List:                  &acpsdk.SessionListCapabilities{},
				Resume:                &acpsdk.SessionResumeCapabilities{},
				// lifecycle.go; and title (session/set_title) through
				// initializeResponse.
				Delete: &acpsdk.SessionDeleteCapabilities{},
				Fork:   &acpsdk.SessionForkCapabilities{},
			},
			Auth: a.authCapabilities(),
		},
		AuthMethods: a.authMethods(p.ClientCapabilities),
	}}, nil
}

func clientName(info *acpsdk.Implementation) string {
	if info == nil {
		return ""
	}
	return info.Name + " " + info.Version
}

// newSession serves session/new
// (https://agentclientprotocol.com/protocol/session-setup#creating-a-session).
// It validates mcpServers from the client's raw JSON (a broken list is
// invalid_params) and the cwd (an absolute path to an existing directory,
// else invalid_params naming it; session/load and session/resume check it
// alike), connects every server in parallel and registers their
// tools, and answers only when every server has connected or failed. Server
// failures do not fail the session; they are reported to the client as an
// agent message right after the response.
func (a *Agent) newSession(ctx context.Context, p acpsdk.NewSessionRequest, servers json.RawMessage) (acpsdk.NewSessionResponse, error) {
	own, err := ownServers(servers)
	if err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	key, _ := p.Meta[session.MetaKey].(string)
	s, err := a.open(ctx, session.OpenRequest{Key: key, Cwd: p.Cwd, AdditionalDirectories: p.AdditionalDirectories, Servers: own}, false)
	if err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	a.log.Info("session/new", "session", s.ID(), "cwd", p.Cwd, "mcpServers", len(s.Servers()))
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(s.ID()), ConfigOptions: a.configOptions(s), Modes: modeState(s)}, nil
}

// ownServers validates the request's mcpServers, the client's own JSON (nil
// when absent); the session core merges the config's default servers,
// applies the servers-per-session quota and checks the cwd.
func ownServers(raw json.RawMessage) ([]bridge.ServerSpec, error) {
	if raw == nil {
		return nil, nil
	}
	return ParseMCPServers(raw)
}

// open opens a session in the core and sends the notifications that follow
// it: for a new session, once its response is written (ctx, the request's
// context, ends then: conn.go); at once for a session the client already
// knows (known: session/load and session/resume, whose notifications may
// precede the response). Until they are sent, the session's prompts, its
// commands updates, its messages outside a turn and its elicitations wait
// (announced), so the client never hears of a sessionId it does not know.
func (a *Agent) open(ctx context.Context, req session.OpenRequest, known bool) (*session.Session, error) {
	announced := make(chan struct{})
	req.FrontEnd = &frontEnd{a: a, announced: announced}
	s, err := a.core.Open(ctx, req)
	if err == nil {
		a.sessions.Store(s.ID(), s)
	}
	if err != nil {
		close(announced) // what waited for the session goes on
		if ke := (*session.KeyInUseError)(nil); errors.As(err, &ke) {
			return nil, session.Invalidf("_meta.sessionKey %q is already used by a live session", ke.Key)
		}
		return nil, err
	}
	a.announcer(s.ID()).opened(announced)
	if known {
		a.afterNewSession(ctx, s, announced)
		return s, nil
	}
	a.conn.afterResponse(ctx, func(bg context.Context) { a.afterNewSession(bg, s, announced) }, func() { close(announced) })
	return s, nil
}

// afterNewSession sends what follows a session/new response: the sign-in
// notice of a missing API key (SignIn.Notice), what the kernel does not
// enforce of the session's mode (session.Session.Enforcement), one agent
// message per failed
// server and per server with tools left out, or the same as notices to a
// client that takes them (notices.go), and the available slash commands. It closes announced when done,
// whatever happens.
func (a *Agent) afterNewSession(ctx context.Context, s *session.Session, announced chan struct{}) {
	defer close(announced)
	select {
	case <-a.conn.done():
		return
	default:
	}
	if a.beforeAnnounce != nil {
		a.beforeAnnounce()
	}
	enforced, full := s.Enforcement()
	if full {
		enforced = ""
	}
	if a.noticesOn() {
		for _, n := range openingNotices(a.signInNotice(), s.Servers(), s.Manager().ToolLimit()) {
			a.conn.sendNotice(ctx, s.ID(), n)
		}
		if enforced != "" {
			a.conn.sendNotice(ctx, s.ID(), notice{Severity: "warning", Title: "The session's mode is not enforced in full", Description: enforced})
		}
		for _, n := range s.OpeningNotes() {
			a.conn.sendNotice(ctx, s.ID(), notice{Severity: "info", Title: "MCP servers", Description: n})
		}
		a.conn.notify(ctx, s.ID(), availableCommands(s.Commands()))
		return
	}
	if n := a.signInNotice(); n != "" {
		a.conn.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(n+"\n"))
	}
	if enforced != "" {
		a.conn.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(enforced+"\n"))
	}
	for _, n := range s.OpeningNotes() {
		a.conn.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(n+"\n"))
	}
	for _, st := range s.Servers() {
		if st.State == bridge.StateFailed {
			msg := fmt.Sprintf("MCP server %q failed: %s\n", st.Name, gateway.ErrorText(st.Err))
			a.conn.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(msg))
		}
		if len(st.LeftOut) > 0 {
			a.conn.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(session.LeftOutText(st, s.Manager().ToolLimit())+"\n"))
		}
	}
	a.conn.notify(ctx, s.ID(), availableCommands(s.Commands()))
}

// lookup returns the live session with id that this Agent opened: a
// session another connection opened, or reopened since, is not this
// client's to drive.
func (a *Agent) lookup(id acpsdk.SessionId) (*session.Session, error) {
	s := a.own(string(id))
	if s == nil {
		return nil, unknownSession(id, "no live session has that id (session/load or session/resume reopens a stored one)")
	}
	return s, nil
}

// own returns the live session id if this Agent opened it and it is still
// the core's live instance, else nil.
func (a *Agent) own(id string) *session.Session {
	v, ok := a.sessions.Load(id)
	if !ok {
		return nil
	}
	s := v.(*session.Session)
	if a.core.Lookup(id) != s {
		return nil
	}
	return s
}

// HasSession reports whether session id is live on this connection: opened
// (or reopened) by this Agent and not ended. A transport uses it to route
// a session's requests (package acp/remote). Safe for concurrent use.
func (a *Agent) HasSession(id string) bool { return a.own(id) != nil }

// cancel serves session/cancel
// (https://agentclientprotocol.com/protocol/prompt-turn#cancellation): it
// cancels the context of the session's prompt read before it (running, or
// not started yet), whose turn then ends with stopReason cancelled, and
// records this queued cancel as handled (conn.cancelPrompts).
func (a *Agent) cancel(_ context.Context, p acpsdk.CancelNotification) (any, error) {
	a.log.Info("session/cancel", "session", p.SessionId)
	a.conn.cancelPrompts(string(p.SessionId))
	return nil, nil
}

// closeSession serves session/close: the running prompt is cancelled and
// every connection and child process of the session is ended before the
// response. The stored session stays, for session/load.
func (a *Agent) closeSession(_ context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	s, err := a.lookup(p.SessionId)
	if err != nil {
		return acpsdk.CloseSessionResponse{}, err
	}
	a.log.Info("session/close", "session", p.SessionId)
	s.End()
	a.forget(s.ID())
	return acpsdk.CloseSessionResponse{}, nil
}

// setSessionMode serves session/set_mode
// (https://agentclientprotocol.com/protocol/session-modes): the session's
// mode, as the config option "mode" sets it (setMode); an unknown modeId is
// invalid_params naming the modes.
func (a *Agent) setSessionMode(ctx context.Context, p acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	s, err := a.lookup(p.SessionId)
	if err != nil {
		return acpsdk.SetSessionModeResponse{}, toRequestError(err)
	}
	if err := a.setMode(ctx, s, string(p.ModeId), false); err != nil {
		return acpsdk.SetSessionModeResponse{}, toRequestError(err)
	}
	return acpsdk.SetSessionModeResponse{}, nil
}
