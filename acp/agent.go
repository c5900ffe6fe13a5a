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
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/defaults"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
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
}

// Agent is the ACP agent: the one connection (conn.go) and its dispatch
// table, over the session core. Create it with New and run it with Serve;
// its handlers run concurrently, one goroutine per request.
type Agent struct {
	opts Options
	core *session.Core // the sessions, their servers, store and gateway
	log  *slog.Logger

	ready  chan struct{} // closed once rpc, out and frames are set
	rpc    *acpsdk.Connection
	out    *frameOut
	frames *framing
	table  map[string]method // the dispatch table (conn.go)
	calls  *calls            // calls read and not answered yet
	// prompts are the running prompts' cancels, for session/cancel.
	prompts promptCancels
	// titles holds, by sessionId, the title last sent to the client in a
	// session_info_update or session/set_title response (lifecycle.go).
	titles sync.Map
	// sessions holds the sessions this Agent opened (or reopened), by
	// sessionId: it drives only those, and ends them when it ends. An
	// entry stays until session/close or delete (forget); one that another
	// connection reopened since is not this Agent's any more (own).
	sessions sync.Map
	// announced holds, by sessionId, the channel closed once the client
	// knows the session: its session/new response and the notifications
	// after it are written (open). A prompt waits for it. An entry stays
	// until session/close: a closed channel costs a few bytes.
	announced sync.Map

	mcpACP *mcpOverACP // MCP servers the client hosts (mcpacp.go)

	tasks sync.WaitGroup // notification senders started by newSession
	pace  *rate.Limiter  // the pacing of replayed session/updates (pace.go)

	// caps are the client's fs, terminal and elicitation capabilities from
	// initialize.
	caps atomic.Pointer[editor.Capabilities]
	// answering holds back a model's title while a prompt of its session
	// is answered (lifecycle.go).
	answering answering
	// authOffer is how initialize offered the sign-in method (auth.go).
	authOffer atomic.Int32
	// notices, booleanOptions and compaction are the client's
	// session.notices, session.configOptions.boolean and session.compaction
	// capabilities (notices.go, models.go, compaction.go).
	notices, booleanOptions, compaction atomic.Bool
	// subagents: the client advertised clientCapabilities.subagents
	// (subagents.go).
	subagents atomic.Bool

	// beforeAnnounce, if set (by tests), runs in afterNewSession before the
	// notifications are sent.
	beforeAnnounce func()
}

// New returns an Agent serving core: its sessions, their servers, the
// store and the gateway (session.NewCore), as mcpserver.New does. opts may
// be nil (every default); it is copied. The Agent ends every session of
// core when Serve returns (Shutdown). It panics if core is nil.
func New(core *session.Core, opts *Options) *Agent {
	if core == nil {
		panic("acp.New: core is nil")
	}
	a := &Agent{core: core, ready: make(chan struct{}), pace: newNotifyPacer(), calls: newCalls()}
	if opts != nil {
		a.opts = *opts
	}
	defaults.Implementation(&a.opts.Name, &a.opts.Version, &a.opts.Logger)
	a.log = a.opts.Logger
	a.mcpACP = &mcpOverACP{router: mcpacp.NewRouter(a.log.With("component", "mcp-over-acp")), ready: a.ready, log: a.log}
	a.table = a.methods()
	return a
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
	a.out = &frameOut{s: s}
	a.frames = newFraming(s, a.ready, a.out, a.log.With("component", "acp-framing"), a.core.Limits().MaxMedia)
	a.frames.calls = a.calls
	a.frames.holdEnd = true
	a.frames.requireInit = true
	a.rpc = acpsdk.NewConnection(a.dispatch, a.out, a.frames)
	a.rpc.SetLogger(a.log.With("component", "acp-conn"))
	a.mcpACP.router.SetConn(a.rpc)
	close(a.ready) // the engine reads only from here on
	select {
	case <-a.frames.inputEnded():
		a.log.Info("client disconnected")
		a.calls.cancel() // the requests under way end, cancelled
		a.writeAnswers(ctx, eofAnswerWait)
		a.frames.endInput() // the engine closes: what is left fails at once
	case <-a.rpc.Done(): // the engine gave up on its own (framing keeps that from happening)
		a.log.Warn("the ACP connection closed")
	case <-ctx.Done():
		a.log.Info("stopping", "cause", context.Cause(ctx))
	}
	a.Shutdown()
	a.writeAnswers(ctx, shutdownAnswerWait)
	a.mcpACP.disconnects.Wait() // the sessions' mcp/disconnect, bounded
	a.frames.close()
	return nil
}

// eofAnswerWait bounds the wait, at the end of input, for the requests
// under way to answer (their context is cancelled); shutdownAnswerWait
// bounds the wait for those Shutdown ends.
const (
	eofAnswerWait      = 10 * time.Second
	shutdownAnswerWait = 2 * time.Second
)

// writeAnswers waits up to d for every request handed to the SDK to be
// answered.
func (a *Agent) writeAnswers(ctx context.Context, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	if left, err := a.calls.wait(ctx); err != nil {
		a.log.Warn("requests left unanswered", "count", left, "waited", d)
	}
}

// clientEditor returns the editor of session sid: the client's fs/* and
// terminal/* methods it advertised at initialize (none before initialize),
// its elicitations held until announced is closed (nil: not held).
func (a *Agent) clientEditor(sid string, announced <-chan struct{}) *clientEditor {
	e := &clientEditor{rpc: a.connection(), sid: acpsdk.SessionId(sid), announced: announced}
	if caps := a.caps.Load(); caps != nil {
		e.caps = *caps
	}
	return e
}

// connection returns the ACP connection once Serve has set it up.
func (a *Agent) connection() *acpsdk.Connection {
	<-a.ready
	return a.rpc
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
	a.tasks.Wait()
}

// initialize serves initialize
// (https://agentclientprotocol.com/protocol/initialization).
func (a *Agent) initialize(_ context.Context, r initializeRequest) (initializeResponse, error) {
	p := r.InitializeRequest
	a.log.Info("initialize", "clientProtocol", p.ProtocolVersion, "client", clientName(p.ClientInfo), "notices", r.Notices, "booleanOptions", r.BooleanOptions, "compaction", r.Compaction)
	a.notices.Store(r.Notices)
	a.booleanOptions.Store(r.BooleanOptions)
	a.compaction.Store(r.Compaction)
	a.subagents.Store(r.Subagents)
	a.caps.Store(&editor.Capabilities{
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
	a.announced.Store(s.ID(), (<-chan struct{})(announced))
	if known {
		a.afterNewSession(ctx, s, announced)
		return s, nil
	}
	a.tasks.Go(func() {
		select {
		case <-ctx.Done(): // the response is written
		case <-a.rpc.Done():
		}
		a.afterNewSession(context.WithoutCancel(ctx), s, announced)
	})
	return s, nil
}

// waitAnnounced waits until the client knows session sid (open), at most
// announceWait, or until ctx ends (the turn that follows then ends at once,
// cancelled).
func (a *Agent) waitAnnounced(ctx context.Context, sid string) {
	v, ok := a.announced.Load(sid)
	if !ok {
		return
	}
	timer := time.NewTimer(announceWait)
	defer timer.Stop()
	select {
	case <-v.(<-chan struct{}):
	case <-ctx.Done():
	case <-timer.C:
		a.log.Warn("turn: the session's opening notifications are still not sent; going on", "session", sid)
	}
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
	case <-a.rpc.Done():
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
			a.sendNotice(ctx, s.ID(), n)
		}
		if enforced != "" {
			a.sendNotice(ctx, s.ID(), notice{Severity: "warning", Title: "The session's mode is not enforced in full", Description: enforced})
		}
		for _, n := range s.OpeningNotes() {
			a.sendNotice(ctx, s.ID(), notice{Severity: "info", Title: "MCP servers", Description: n})
		}
		a.notify(ctx, s.ID(), availableCommands(s.Commands()))
		return
	}
	if n := a.signInNotice(); n != "" {
		a.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(n+"\n"))
	}
	if enforced != "" {
		a.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(enforced+"\n"))
	}
	for _, n := range s.OpeningNotes() {
		a.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(n+"\n"))
	}
	for _, st := range s.Servers() {
		if st.State == bridge.StateFailed {
			msg := fmt.Sprintf("MCP server %q failed: %s\n", st.Name, bridge.ErrorText(st.Err))
			a.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(msg))
		}
		if len(st.LeftOut) > 0 {
			a.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(session.LeftOutText(st, s.Manager().ToolLimit())+"\n"))
		}
	}
	a.notify(ctx, s.ID(), availableCommands(s.Commands()))
}

// frontEnd is the session.FrontEnd of one session/new, load or resume:
// what the client offers the session, its messages held back until the
// client knows the session (announced, closed by afterNewSession).
type frontEnd struct {
	a         *Agent
	announced chan struct{}
}

var (
	_ session.ServerEvents = (*frontEnd)(nil) // notices.go
	_ session.TitleWatcher = (*frontEnd)(nil) // lifecycle.go
	_ session.Replayer     = (*frontEnd)(nil) // load.go
)

// Editor implements session.FrontEnd: the client's fs/*, terminal/* and
// elicitation/* (editor.go), its elicitations held back.
func (f *frontEnd) Editor(sid string) editor.Editor { return f.a.clientEditor(sid, f.announced) }

// Ask implements session.FrontEnd: session/request_permission
// (permission.go).
func (f *frontEnd) Ask(sid string) gateway.AskFunc { return f.a.askFunc(sid) }

// Tell implements session.FrontEnd: an agent message outside any turn,
// once the client knows the session, unless ctx ends first.
func (f *frontEnd) Tell(ctx context.Context, sid, text string) {
	if f.waitAnnounced(ctx) {
		f.a.notify(ctx, sid, acpsdk.UpdateAgentMessageText(text))
	}
}

// waitAnnounced waits until the client knows the session; false if ctx
// ended first.
func (f *frontEnd) waitAnnounced(ctx context.Context) bool {
	select {
	case <-f.announced:
		return true
	case <-ctx.Done():
		return false
	}
}

// CommandsChanged implements session.FrontEnd: an
// available_commands_update (prompts.go), once the client knows the
// session (at most announceWait).
func (f *frontEnd) CommandsChanged(ctx context.Context, sid string, cmds []runner.Command) {
	f.a.commandsChanged(ctx, sid, cmds, f.announced)
}

// Dial implements session.FrontEnd: a server the client hosts, over
// MCP-over-ACP (mcpacp.go).
func (f *frontEnd) Dial(_ context.Context, _ string, spec bridge.ServerSpec) (mcp.Transport, error) {
	return f.a.mcpACP.transport(spec), nil
}

// notify sends one session/update, logging (not returning) a failure: a
// client that has gone away cannot be told anything more.
func (a *Agent) notify(ctx context.Context, sessionID string, u acpsdk.SessionUpdate) {
	a.send(ctx, sessionID, sdkUpdate(u))
}

// send is notify of an update that may carry what acp-go-sdk lacks
// (wire.go).
func (a *Agent) send(ctx context.Context, sessionID string, u update) {
	if u.Session != "" { // a child's update (subagents.go)
		sessionID = u.Session
	}
	err := a.connection().SendNotification(ctx, acpsdk.ClientMethodSessionUpdate, sessionNotification{SessionID: acpsdk.SessionId(sessionID), Update: u})
	if err != nil {
		a.log.Debug("session/update not sent", "session", sessionID, "err", err)
	}
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
// tells the framing layer that this queued cancel is handled.
func (a *Agent) cancel(_ context.Context, p acpsdk.CancelNotification) (any, error) {
	a.log.Info("session/cancel", "session", p.SessionId)
	a.prompts.cancel(string(p.SessionId), a.frames.cancelHandled(string(p.SessionId)))
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
