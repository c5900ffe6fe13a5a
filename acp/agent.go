package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"golang.org/x/time/rate"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// Options configure an Agent. The zero value is valid.
type Options struct {
	// Name and Version are the agentInfo of initialize and the MCP clientInfo
	// sent to servers. Empty means "acp-agent" and "dev".
	Name, Version string
	// Gateway runs the turns. Nil means an in-process gateway with the direct
	// provider (runner.NewLocal(nil)).
	Gateway gateway.Gateway
	// Bridge is the template of each session's bridge.Manager options; Cwd,
	// ClientInfo and Logger are set per session. Bridge.Limits also holds the
	// servers-per-session quota.
	Bridge bridge.Options
	// DefaultServers are connected in every session (config mcpServers),
	// merged with the session's own list: a session entry with the same name
	// replaces the default one.
	DefaultServers []bridge.ServerSpec
	// ServerSettings are per-server settings from the config, by server name;
	// an entry's own _meta timeouts win over them.
	ServerSettings map[string]ServerSettings
	// InProcess are MCP servers of this process connected in every session
	// before the others, over in-memory transports, and bridged like them
	// (tools "mcp__<name>__<tool>"); see session.CoreOptions.InProcess. The
	// agent's built-in tools are one: {Name: builtin.Name, New: builtin.New}
	// (package bridge/builtin, name "acp").
	InProcess []InProcessServer
	// Store keeps sessions across restarts. Nil means memory.New().
	Store store.Store
	// History is the gateway's conversation history over Store; the agent
	// attaches each session to it. Nil means a new session.History over
	// Store, which is then also the History of the default Gateway.
	History *session.History
	// Logger receives the agent's logs. Nil discards them.
	Logger *slog.Logger
	// SignIn, if set, is the model API key sign-in the agent advertises
	// (auth.go). Nil advertises no auth methods; logout is then
	// method_not_found.
	SignIn *SignIn
}

// ServerSettings are the config's settings for the server of one name
// (config "servers"); see session.ServerSettings.
type ServerSettings = session.ServerSettings

// InProcessServer is an in-process MCP server built per session; see
// session.InProcessServer.
type InProcessServer = session.InProcessServer

// postSessionTimeout bounds how long the agent waits for a session/new
// response to be written before it sends the notifications that follow it.
const postSessionTimeout = 10 * time.Second

// Agent implements acpsdk.Agent. Create it with New and run it with Serve.
// Its methods are called by acp-go-sdk, concurrently.
type Agent struct {
	opts  Options
	gw    gateway.Gateway
	store store.Store
	core  *session.Core // the live sessions
	log   *slog.Logger

	ready chan struct{} // closed once conn and out are set
	conn  *acpsdk.AgentSideConnection
	out   *outWatcher

	mcpACP *mcpOverACP // MCP servers the client hosts (mcpacp.go)

	tasks sync.WaitGroup // notification senders started by NewSession
	pace  *rate.Limiter  // the pacing of replayed session/updates (pace.go)

	// caps are the client's fs, terminal and elicitation capabilities from
	// initialize.
	caps atomic.Pointer[editor.Capabilities]

	// beforeAnnounce, if set (by tests), runs in afterNewSession before the
	// notifications are sent.
	beforeAnnounce func()
}

var _ acpsdk.Agent = (*Agent)(nil)

// New returns an Agent. opts may be nil.
func New(opts *Options) *Agent {
	a := &Agent{ready: make(chan struct{}), pace: newNotifyPacer()}
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.Name == "" {
		a.opts.Name = "acp-agent"
	}
	if a.opts.Version == "" {
		a.opts.Version = "dev"
	}
	a.log = a.opts.Logger
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.store = a.opts.Store
	if a.store == nil {
		a.store = memory.New()
	}
	history := a.opts.History
	if history == nil {
		history = session.NewHistory(a.store, a.log)
	}
	a.gw = a.opts.Gateway
	if a.gw == nil {
		a.gw = runner.NewLocal(&runner.Options{History: history, Logger: a.log})
	}
	a.mcpACP = &mcpOverACP{router: mcpacp.NewRouter(a.log.With("component", "mcp-over-acp")), ready: a.ready, log: a.log}
	bridgeOpts := a.opts.Bridge
	bridgeOpts.Dial = a.mcpACP.dial(bridgeOpts.Dial)
	a.core = session.NewCore(session.CoreOptions{
		Name: a.opts.Name, Version: a.opts.Version, Gateway: a.gw, Bridge: bridgeOpts,
		DefaultServers: a.opts.DefaultServers, ServerSettings: a.opts.ServerSettings,
		InProcess: a.opts.InProcess, Store: a.store, History: history, Logger: a.log, ReadyWait: announceWait,
	})
	return a
}

// Serve speaks ACP over in (the client's requests, normally stdin) and out
// (normally stdout) until the client disconnects or ctx is done, then ends
// every session (Shutdown). Input passes through the framing layer first
// (framing.go): what is not valid JSON-RPC 2.0, or is longer than
// MaxFrameBytes, is answered there and never ends the agent. It may be
// called once.
//
// Every request read is answered before Serve returns: at the end of in,
// reading stops, the requests under way see their context cancelled (a
// prompt answers stopReason "cancelled"), and Serve waits for their
// responses (at most eofAnswerWait), then for those Shutdown releases.
func (a *Agent) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	a.out = newOutWatcher(out)
	answers := newUnanswered()
	a.out.answers = answers
	frames := newFraming(in, a.ready, a.out, a.log.With("component", "acp-framing"), a.opts.Bridge.Limits.MaxMedia)
	frames.answers = answers
	// mcp/message, which acp-go-sdk does not dispatch, goes to a connection
	// of its own on the same stream (internal/mcpacp).
	frames.mux = mcpacp.NewMux(a.mcpACP.router.Handle, []string{mcpacp.MethodMessage}, a.out.writeFrame, a.log.With("component", "acp-conn-mcp"))
	a.mcpACP.router.SetMux(frames.mux)
	a.conn = acpsdk.NewAgentSideConnection(framedAgent{a, frames}, a.out, frames)
	a.conn.SetLogger(a.log.With("component", "acp-conn"))
	close(a.ready) // the SDK reads only from here on
	select {
	case <-a.conn.Done():
		a.log.Info("client disconnected")
		a.writeAnswers(answers, eofAnswerWait)
		frames.mux.Close() // no mcp/disconnect can reach the client now
	case <-ctx.Done():
		a.log.Info("stopping", "cause", context.Cause(ctx))
	}
	a.Shutdown()
	a.writeAnswers(answers, shutdownAnswerWait)
	a.mcpACP.disconnects.Wait() // the sessions' mcp/disconnect, bounded
	frames.mux.Close()
	frames.close()
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
func (a *Agent) writeAnswers(answers *unanswered, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if left, err := answers.wait(ctx); err != nil {
		a.log.Warn("requests left unanswered", "count", left, "waited", d)
	}
}

// editor returns the editor of session sid: the client's fs/* and
// terminal/* methods it advertised at initialize (none before initialize).
func (a *Agent) editor(sid string) editor.Editor {
	e := &clientEditor{conn: a.connection(), sid: acpsdk.SessionId(sid)}
	if caps := a.caps.Load(); caps != nil {
		e.caps = *caps
	}
	return e
}

// connection returns the ACP connection once Serve has set it up.
func (a *Agent) connection() *acpsdk.AgentSideConnection {
	<-a.ready
	return a.conn
}

// Shutdown ends every live session in parallel: running prompts are
// cancelled, every MCP connection closes and every child process group is
// stopped. It is idempotent and bounded by the bridge's grace period plus a
// few seconds.
func (a *Agent) Shutdown() {
	a.core.Shutdown()
	a.tasks.Wait()
}

// Initialize implements acpsdk.Agent
// (https://agentclientprotocol.com/protocol/initialization).
func (a *Agent) Initialize(_ context.Context, p acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	a.log.Info("initialize", "clientProtocol", p.ProtocolVersion, "client", clientName(p.ClientInfo))
	a.caps.Store(&editor.Capabilities{
		ReadTextFile:  p.ClientCapabilities.Fs.ReadTextFile,
		WriteTextFile: p.ClientCapabilities.Fs.WriteTextFile,
		Terminal:      p.ClientCapabilities.Terminal,
		ElicitForm:    p.ClientCapabilities.Elicitation != nil && p.ClientCapabilities.Elicitation.Form != nil,
		ElicitURL:     p.ClientCapabilities.Elicitation != nil && p.ClientCapabilities.Elicitation.Url != nil,
	})
	return acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		AgentInfo:       &acpsdk.Implementation{Name: a.opts.Name, Version: a.opts.Version},
		AgentCapabilities: acpsdk.AgentCapabilities{
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
			},
			Auth: a.authCapabilities(),
		},
		AuthMethods: a.authMethods(p.ClientCapabilities),
	}, nil
}

func clientName(info *acpsdk.Implementation) string {
	if info == nil {
		return ""
	}
	return info.Name + " " + info.Version
}

// NewSession implements acpsdk.Agent
// (https://agentclientprotocol.com/protocol/session-setup#creating-a-session).
// It validates mcpServers from the client's raw JSON (a broken list is
// invalid_params) and the cwd (an absolute path to an existing directory,
// else invalid_params naming it; session/load and session/resume check it
// alike), connects every server in parallel and registers their
// tools, and answers only when every server has connected or failed. Server
// failures do not fail the session; they are reported to the client as an
// agent message right after the response.
func (a *Agent) NewSession(ctx context.Context, p acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	own, err := ownServers(p.Meta)
	if err != nil {
		return acpsdk.NewSessionResponse{}, toRequestError(err)
	}
	key, _ := p.Meta[session.MetaKey].(string)
	s, err := a.open(ctx, session.OpenRequest{Key: key, Cwd: p.Cwd, AdditionalDirectories: p.AdditionalDirectories, Servers: own}, false)
	if err != nil {
		return acpsdk.NewSessionResponse{}, toRequestError(err)
	}
	a.log.Info("session/new", "session", s.ID(), "cwd", p.Cwd, "mcpServers", len(s.Servers()))
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(s.ID()), ConfigOptions: a.configOptions(s.Model())}, nil
}

// ownServers validates the request's mcpServers (raw, see moveMCPServers in
// framing.go); the session core merges the config's default servers, applies
// the servers-per-session quota and checks the cwd.
func ownServers(meta map[string]any) ([]bridge.ServerSpec, error) {
	raw, err := rawMCPServers(meta)
	if err != nil {
		return nil, session.Invalidf("mcpServers: %v", err)
	}
	return ParseMCPServers(raw)
}

// open opens a session in the core (req.Ready is set here), then sends the
// notifications that follow: after the response for a new session, at once
// for a session the client already knows (known: session/load and
// session/resume).
func (a *Agent) open(ctx context.Context, req session.OpenRequest, known bool) (*session.Session, error) {
	announced := make(chan struct{})
	req.Ready = announced
	req.Editor = a.editor
	req.Ask = a.askFunc
	req.Tell = a.tell
	req.CommandsChanged = a.commandsChanged // prompts.go
	s, err := a.core.Open(ctx, req)
	if err != nil {
		close(announced) // a prompt that found the session while it opened goes on
		if ke := (*session.KeyInUseError)(nil); errors.As(err, &ke) {
			return nil, session.Invalidf("_meta.sessionKey %q is already used by a live session", ke.Key)
		}
		return nil, err
	}
	<-a.ready
	if known {
		// session/load and session/resume: the client knows the sessionId
		// already, so the notifications may precede the response.
		now := make(chan struct{})
		close(now)
		a.afterNewSession(s, announced, now)
		return s, nil
	}
	after := a.out.afterResponse(s.ID())
	a.tasks.Go(func() { a.afterNewSession(s, announced, after) })
	return s, nil
}

// afterNewSession sends what follows a session/new response: the sign-in
// notice of a missing API key (SignIn.Notice), one agent message per failed
// server, and the available slash commands. It closes
// announced (the session's OpenRequest.Ready) when done, whatever happens.
func (a *Agent) afterNewSession(s *session.Session, announced chan struct{}, written <-chan struct{}) {
	defer close(announced)
	conn := a.connection()
	select {
	case <-written:
	case <-conn.Done():
		a.out.forget(s.ID())
		return
	case <-time.After(postSessionTimeout):
		a.out.forget(s.ID())
	}
	if a.beforeAnnounce != nil {
		a.beforeAnnounce()
	}
	ctx := context.Background()
	if n := a.signInNotice(); n != "" {
		a.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(n+"\n"))
	}
	for _, st := range s.Servers() {
		if st.State == bridge.StateFailed {
			msg := fmt.Sprintf("MCP server %q failed: %v\n", st.Name, st.Err)
			a.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(msg))
		}
		if len(st.LeftOut) > 0 {
			a.notify(ctx, s.ID(), acpsdk.UpdateAgentMessageText(session.LeftOutText(st, s.Manager().ToolLimit())+"\n"))
		}
	}
	a.notify(ctx, s.ID(), availableCommands(s.Commands()))
}

// tell returns the session.OpenRequest Tell of session sid: an agent
// message outside any turn.
func (a *Agent) tell(sid string) func(ctx context.Context, text string) {
	return func(ctx context.Context, text string) {
		a.notify(ctx, sid, acpsdk.UpdateAgentMessageText(text))
	}
}

// notify sends one session/update, logging (not returning) a failure: a
// client that has gone away cannot be told anything more.
func (a *Agent) notify(ctx context.Context, sessionID string, u acpsdk.SessionUpdate) {
	err := a.connection().SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(sessionID), Update: u})
	if err != nil {
		a.log.Debug("session/update not sent", "session", sessionID, "err", err)
	}
}

// lookup returns the live session with id.
func (a *Agent) lookup(id acpsdk.SessionId) (*session.Session, error) {
	s := a.core.Lookup(string(id))
	if s == nil {
		return nil, unknownSession(id, "no live session has that id (session/load or session/resume reopens a stored one)")
	}
	return s, nil
}

// Cancel implements acpsdk.Agent
// (https://agentclientprotocol.com/protocol/prompt-turn#cancellation).
// acp-go-sdk has already cancelled the context of the session's running
// prompt; the turn then ends with stopReason cancelled.
func (a *Agent) Cancel(_ context.Context, p acpsdk.CancelNotification) error {
	a.log.Info("session/cancel", "session", p.SessionId)
	return nil
}

// CloseSession implements acpsdk.Agent: the running prompt is cancelled and
// every connection and child process of the session is ended before the
// response. The stored session stays, for session/load.
func (a *Agent) CloseSession(_ context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	s, err := a.lookup(p.SessionId)
	if err != nil {
		return acpsdk.CloseSessionResponse{}, toRequestError(err)
	}
	a.log.Info("session/close", "session", p.SessionId)
	s.End()
	return acpsdk.CloseSessionResponse{}, nil
}

// SetSessionMode implements acpsdk.Agent; no modes are offered, so it is
// method_not_found for a live session (and resource-not-found for an unknown
// sessionId, as for every method that takes one).
func (a *Agent) SetSessionMode(_ context.Context, p acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	if _, err := a.lookup(p.SessionId); err != nil {
		return acpsdk.SetSessionModeResponse{}, toRequestError(err)
	}
	return acpsdk.SetSessionModeResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionSetMode)
}
