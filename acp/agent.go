package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session"
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
	// Store keeps sessions across restarts. Nil means session.NewMemory().
	Store session.Store
	// History is the gateway's conversation history over Store; the agent
	// attaches each session to it. Nil means a new session.History over
	// Store, which is then also the History of the default Gateway.
	History *session.History
	// Logger receives the agent's logs. Nil discards them.
	Logger *slog.Logger
}

// ServerSettings are the config's settings for the server of one name
// (config "servers").
type ServerSettings struct {
	// Timeouts override the global timeouts; zero fields inherit.
	Timeouts bridge.Timeouts
	// CallsPerMinute overrides the global rate limit; zero inherits,
	// negative means no limit.
	CallsPerMinute int
}

// postSessionTimeout bounds how long the agent waits for a session/new
// response to be written before it sends the notifications that follow it.
const postSessionTimeout = 10 * time.Second

// Agent implements acpsdk.Agent. Create it with New and run it with Serve.
// Its methods are called by acp-go-sdk, concurrently.
type Agent struct {
	opts    Options
	gw      gateway.Gateway
	store   session.Store
	history *session.History
	log     *slog.Logger

	ready chan struct{} // closed once conn and out are set
	conn  *acpsdk.AgentSideConnection
	out   *outWatcher

	mu       sync.Mutex
	sessions map[string]*liveSession // live sessions by sessionId
	keys     map[string]bool         // gateway session keys in use
	closing  bool                    // Shutdown has begun

	tasks sync.WaitGroup // notification senders started by NewSession

	// beforeAnnounce, if set (by tests), runs in afterNewSession before the
	// notifications are sent.
	beforeAnnounce func()
}

var _ acpsdk.Agent = (*Agent)(nil)

// New returns an Agent. opts may be nil.
func New(opts *Options) *Agent {
	a := &Agent{ready: make(chan struct{}), sessions: make(map[string]*liveSession), keys: make(map[string]bool)}
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
		a.store = session.NewMemory()
	}
	a.history = a.opts.History
	if a.history == nil {
		a.history = session.NewHistory(a.store, a.log)
	}
	a.gw = a.opts.Gateway
	if a.gw == nil {
		a.gw = runner.NewLocal(&runner.Options{History: a.history, Logger: a.log})
	}
	return a
}

// Serve speaks ACP over in (the client's requests, normally stdin) and out
// (normally stdout) until the client disconnects or ctx is done, then ends
// every session (Shutdown). Input passes through the framing layer first
// (framing.go): what is not valid JSON-RPC 2.0, or is longer than
// MaxFrameBytes, is answered there and never ends the agent. It may be
// called once.
func (a *Agent) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	a.out = newOutWatcher(out)
	frames := newFraming(in, a.ready, a.out, a.log.With("component", "acp-framing"), a.opts.Bridge.Limits.MaxMedia)
	a.conn = acpsdk.NewAgentSideConnection(framedAgent{a, frames}, a.out, frames)
	a.conn.SetLogger(a.log.With("component", "acp-conn"))
	close(a.ready) // the SDK reads only from here on
	select {
	case <-a.conn.Done():
		a.log.Info("client disconnected")
	case <-ctx.Done():
		a.log.Info("stopping", "cause", context.Cause(ctx))
	}
	a.Shutdown()
	frames.close()
	return nil
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
	a.mu.Lock()
	a.closing = true
	sessions := make([]*liveSession, 0, len(a.sessions))
	for _, s := range a.sessions {
		sessions = append(sessions, s)
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() { a.endSession(s) })
	}
	wg.Wait()
	a.tasks.Wait()
}

// Initialize implements acpsdk.Agent
// (https://agentclientprotocol.com/protocol/initialization).
func (a *Agent) Initialize(_ context.Context, p acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	a.log.Info("initialize", "clientProtocol", p.ProtocolVersion, "client", clientName(p.ClientInfo))
	return acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		AgentInfo:       &acpsdk.Implementation{Name: a.opts.Name, Version: a.opts.Version},
		AgentCapabilities: acpsdk.AgentCapabilities{
			// session/load replays a stored session; clients such as Zed
			// offer to reopen a conversation only when this is set.
			LoadSession:        true,
			PromptCapabilities: acpsdk.PromptCapabilities{EmbeddedContext: true, Image: true},
			McpCapabilities:    acpsdk.McpCapabilities{Http: true, Sse: true},
			SessionCapabilities: acpsdk.SessionCapabilities{
				Close:  &acpsdk.SessionCloseCapabilities{},
				List:   &acpsdk.SessionListCapabilities{},
				Resume: &acpsdk.SessionResumeCapabilities{},
			},
		},
		AuthMethods: []acpsdk.AuthMethod{},
	}, nil
}

func clientName(info *acpsdk.Implementation) string {
	if info == nil {
		return ""
	}
	return info.Name + " " + info.Version
}

// Authenticate implements acpsdk.Agent. No auth methods are advertised, so
// there is nothing to do.
func (a *Agent) Authenticate(context.Context, acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	return acpsdk.AuthenticateResponse{}, nil
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
	specs, err := a.sessionSpecs(p.Meta, p.Cwd)
	if err != nil {
		return acpsdk.NewSessionResponse{}, toRequestError(err)
	}
	id := session.NewID()
	now := time.Now()
	rec := session.Record{ID: id, Key: session.Key(id, p.Meta), Cwd: p.Cwd, Created: now, Updated: now, Servers: serverRefs(specs), Model: a.defaultModel()}
	if err := a.store.Create(ctx, rec); err != nil {
		return acpsdk.NewSessionResponse{}, toRequestError(fmt.Errorf("storing the session: %w", err))
	}
	a.log.Info("session/new", "session", id, "cwd", p.Cwd, "mcpServers", len(specs))
	s, err := a.open(ctx, rec, p.Cwd, specs, false, nil)
	if err != nil {
		return acpsdk.NewSessionResponse{}, toRequestError(err)
	}
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(id), ConfigOptions: a.configOptions(s.currentModel())}, nil
}

// sessionSpecs validates the request's mcpServers (raw, see
// moveMCPServers in framing.go) and cwd, merges the config's default servers and
// applies the servers-per-session quota.
func (a *Agent) sessionSpecs(meta map[string]any, cwd string) ([]bridge.ServerSpec, error) {
	raw, err := rawMCPServers(meta)
	if err != nil {
		return nil, fmt.Errorf("%w: mcpServers: %v", ErrInvalidParams, err)
	}
	own, err := ParseMCPServers(raw)
	if err != nil {
		return nil, err
	}
	specs := a.sessionServers(own)
	if limit := a.opts.Bridge.Limits.WithDefaults().ServersPerSession; len(specs) > limit {
		return nil, fmt.Errorf("%w: mcpServers: %d servers (%d from the request, %d default servers from the config) exceed the limit of %d servers per session (config limits.serversPerSession)",
			ErrInvalidParams, len(specs), len(own), len(specs)-len(own), limit)
	}
	if err := checkCwd(cwd); err != nil {
		return nil, err
	}
	return specs, nil
}

// checkCwd checks a session's cwd: an absolute path to an existing
// directory, since the session's stdio servers start there.
func checkCwd(cwd string) error {
	if !filepath.IsAbs(cwd) {
		return fmt.Errorf("%w: cwd %q must be an absolute path", ErrInvalidParams, cwd)
	}
	fi, err := os.Stat(cwd)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: cwd %q does not exist", ErrInvalidParams, cwd)
	case err != nil:
		return fmt.Errorf("%w: cwd %q cannot be used: %v", ErrInvalidParams, cwd, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: cwd %q is not a directory", ErrInvalidParams, cwd)
	}
	return nil
}

// serverRefs are the names and transports of specs: what the store keeps.
func serverRefs(specs []bridge.ServerSpec) []session.Server {
	out := make([]session.Server, len(specs))
	for i, s := range specs {
		out[i] = session.Server{Name: s.Name, Transport: string(s.Transport)}
	}
	return out
}

// open makes the stored session rec live in cwd: it attaches its history
// (calling replay with the stored turns, if non-nil, before anything else),
// connects specs and registers the tools, then sends the notifications that
// follow: after the response for a new session, at once for a session the
// client already knows (known, or replayed). A session of the same id still
// live in this process is ended first.
func (a *Agent) open(ctx context.Context, rec session.Record, cwd string, specs []bridge.ServerSpec, known bool, replay func([]session.Turn)) (*liveSession, error) {
	if old, err := a.lookup(acpsdk.SessionId(rec.ID)); err == nil {
		a.log.Info("session reopened: ending its live instance first", "session", rec.ID)
		a.endSession(old)
	}
	s := &liveSession{id: rec.ID, key: rec.Key, cwd: cwd, model: a.restoredModel(rec), announced: make(chan struct{}), manager: bridge.NewManager(a.bridgeOptions(rec.ID, rec.Key, cwd))}
	if err := a.addSession(s); err != nil {
		return nil, err
	}
	turns, err := a.history.Attach(ctx, rec.Key, rec.ID)
	if err != nil {
		a.abandon(s)
		return nil, fmt.Errorf("loading the session's history: %w", err)
	}
	if replay != nil {
		replay(turns)
	}
	start := time.Now()
	_ = s.manager.Connect(ctx, specs)
	if err := a.gw.SetExtraTools(ctx, s.key, s.manager.Tools()); err != nil {
		a.abandon(s)
		return nil, fmt.Errorf("registering tools: %w", err)
	}
	if ctx.Err() != nil { // the client gave up, or the connection is gone
		a.abandon(s)
		return nil, context.Cause(ctx)
	}
	if err := a.store.SetServers(ctx, rec.ID, serverRefs(specs)); err != nil {
		a.log.Warn("recording the session's servers failed", "session", rec.ID, "err", err)
	}
	a.log.Info("session ready", "session", rec.ID, "tools", len(s.manager.Tools()), "elapsed", time.Since(start))
	<-a.ready
	if replay != nil || known {
		// session/load and session/resume: the client knows the sessionId
		// already, so the notifications may precede the response.
		now := make(chan struct{})
		close(now)
		a.afterNewSession(s, now)
		return s, nil
	}
	after := a.out.afterResponse(rec.ID)
	a.tasks.Go(func() { a.afterNewSession(s, after) })
	return s, nil
}

// sessionServers merges the config's default servers with the session's own
// (a session entry replaces the default of the same name) and applies the
// config's per-server settings.
func (a *Agent) sessionServers(own []bridge.ServerSpec) []bridge.ServerSpec {
	names := make(map[string]bool, len(own))
	for _, s := range own {
		names[s.Name] = true
	}
	specs := make([]bridge.ServerSpec, 0, len(a.opts.DefaultServers)+len(own))
	for _, d := range a.opts.DefaultServers {
		if !names[d.Name] {
			specs = append(specs, d)
		}
	}
	specs = append(specs, own...)
	for i := range specs {
		if set, ok := a.opts.ServerSettings[specs[i].Name]; ok {
			specs[i].Timeouts = specs[i].Timeouts.Or(set.Timeouts)
			if specs[i].CallsPerMinute == 0 {
				specs[i].CallsPerMinute = set.CallsPerMinute
			}
		}
	}
	return specs
}

// bridgeOptions returns the bridge.Manager options of a session: a server's
// tools/list_changed re-registers the session's tools, seen on the next turn.
func (a *Agent) bridgeOptions(id, key, cwd string) *bridge.Options {
	o := a.opts.Bridge
	o.Cwd = cwd
	o.ClientInfo = &mcp.Implementation{Name: a.opts.Name, Version: a.opts.Version}
	o.Logger = a.log.With("session", id)
	o.OnToolsChanged = func(tools []*gateway.Tool) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.gw.SetExtraTools(ctx, key, tools); err != nil {
			a.log.Warn("registering the refreshed tools failed", "session", id, "err", err)
		}
	}
	return &o
}

func (a *Agent) addSession(s *liveSession) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing {
		return ErrShuttingDown
	}
	if a.keys[s.key] {
		return fmt.Errorf("%w: _meta.sessionKey %q is already used by a live session", ErrInvalidParams, s.key)
	}
	a.sessions[s.id] = s
	a.keys[s.key] = true
	return nil
}

// abandon ends a session that failed to open; nothing will be announced.
func (a *Agent) abandon(s *liveSession) {
	close(s.announced)
	a.endSession(s)
}

// afterNewSession sends what follows a session/new response: one agent
// message per failed server, and the available slash commands. It closes
// s.announced when done, whatever happens.
func (a *Agent) afterNewSession(s *liveSession, written <-chan struct{}) {
	defer close(s.announced)
	conn := a.connection()
	select {
	case <-written:
	case <-conn.Done():
		a.out.forget(s.id)
		return
	case <-time.After(postSessionTimeout):
		a.out.forget(s.id)
	}
	if a.beforeAnnounce != nil {
		a.beforeAnnounce()
	}
	ctx := context.Background()
	for _, st := range s.manager.Servers() {
		if st.State == bridge.StateFailed {
			msg := fmt.Sprintf("MCP server %q failed: %v\n", st.Name, st.Err)
			a.notify(ctx, s.id, acpsdk.UpdateAgentMessageText(msg))
		}
		if len(st.LeftOut) > 0 {
			a.notify(ctx, s.id, acpsdk.UpdateAgentMessageText(leftOutText(st, s.manager.ToolLimit())+"\n"))
		}
	}
	a.notify(ctx, s.id, availableCommands())
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
func (a *Agent) lookup(id acpsdk.SessionId) (*liveSession, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[string(id)]
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
	a.endSession(s)
	return acpsdk.CloseSessionResponse{}, nil
}

// endSession removes s, cancels its prompt and tears down its servers.
func (a *Agent) endSession(s *liveSession) {
	a.mu.Lock()
	if a.sessions[s.id] == s {
		delete(a.sessions, s.id)
		delete(a.keys, s.key)
	}
	a.mu.Unlock()
	start := time.Now()
	s.end(func() {
		_ = s.manager.Close(context.Background())
		_ = a.gw.ClearExtraTools(context.Background(), s.key)
		a.history.Forget(context.Background(), s.key)
	})
	a.log.Info("session ended", "session", s.id, "elapsed", time.Since(start))
}

// Logout implements acpsdk.Agent
// (https://agentclientprotocol.com/protocol/initialization#authentication).
// No auth methods are advertised, so there is no sign-in to end: the method
// is answered method_not_found, as for any agent without the capability.
func (a *Agent) Logout(context.Context, acpsdk.LogoutRequest) (acpsdk.LogoutResponse, error) {
	return acpsdk.LogoutResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodLogout)
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
