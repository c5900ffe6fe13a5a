package remote

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/telemetry"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// ServerOptions configure a gateway Server. The zero value is valid: no
// token (the caller must then listen on loopback only), no browser origins.
type ServerOptions struct {
	// Token is the shared secret translators send in connect; compared in
	// constant time. Its tenant is "" (the default). Empty, with no
	// Tokens, means no authentication.
	Token string
	// Tokens maps more tokens to their tenants (token → tenant name), for
	// a gateway shared by several tenants: a connection's tenant owns the
	// sessions it creates, and no other tenant can list, read, load or
	// prompt them. Compared in constant time, like Token.
	Tokens map[string]string
	// Store, when set, keeps the translators' sessions: the sessions
	// extension (sessions.create ... sessions.turns), always scoped by the
	// connection's tenant. Nil: the gateway keeps no sessions and offers no
	// sessions extension. The Server does not close it.
	Store store.Store
	// Leases are the leases the turns of stored sessions (chat.send with a
	// sessionId) run under: one turn of a session at a time, fleet-wide
	// when the Leases are a shared database's. Nil means the Store's own
	// when it implements store.Leases, else a process-local
	// store.LocalLeases. Turns of sessions the translator stores run
	// under process-local leases of their session key.
	Leases store.Leases
	// Replica names this gateway in lease errors ("running a turn on
	// <Replica>"); "" means "this gateway".
	Replica string
	// AllowedOrigins are the Origin header values accepted, such as
	// "https://ide.example". A request without Origin (not from a browser)
	// is accepted; any other Origin is refused.
	AllowedOrigins []string
	// Info is the server's name and version, sent in hello.
	Info PeerInfo
	// Observer, if set, hears of the leases of turns (metrics); it must
	// not block.
	Observer Observer
	// Logger receives the server's logs. Nil discards them.
	Logger *slog.Logger
}

// handshakeTimeout bounds the wait for the connect request.
const handshakeTimeout = 10 * time.Second

// errShuttingDown ends the turns that run when the server shuts down.
var errShuttingDown = errors.New("the gateway is shutting down")

// Server serves the gateway protocol over WebSocket (docs/gateway-protocol.md)
// for many translators at once. Extra tools belong to both a session key and
// the connection that registered them, and go away with the connection. A
// session key is taken by the fleet's rule (see owners.go): any connection
// of the tenant may take it, except while a turn of it runs, when its
// chat.send is busy as through another replica; each turn runs with the
// tools of the connection that sent it. Safe for concurrent use.
type Server struct {
	local    *runner.Local
	opts     ServerOptions
	log      *slog.Logger
	upgrader websocket.Upgrader

	mu    sync.Mutex
	conns map[*serverConn]bool
	// owners maps a scoped session key to the connection whose tools the
	// runner's registry holds for it: the last to register tools for the
	// key or to run a turn of it. Absent: no tools installed.
	owners map[string]*serverConn
	// turning maps a scoped session key to the connection running a turn
	// of it here; while set, owners holds that connection for the key.
	turning map[string]*serverConn
	turns   map[string]*turnState // lease id → the turn running under it here
	// keyLeases are the leases of turns that name no stored session: their
	// session keys are this gateway's (one connection's) only.
	keyLeases store.LocalLeases
	closing   bool
	wg        sync.WaitGroup // connections

	// fences order, per stored session (by a hash of its id), a turn
	// write's check of its lease token against this process's leases and
	// the write itself, with the taking of the session's next lease, for a
	// store that cannot fence in its own transaction (appendTurn).
	fences [64]sync.Mutex
}

// NewServer returns a Server running turns on local. opts may be nil.
func NewServer(local *runner.Local, opts *ServerOptions) *Server {
	s := &Server{local: local, conns: make(map[*serverConn]bool), owners: make(map[string]*serverConn), turning: make(map[string]*serverConn), turns: make(map[string]*turnState)}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Leases == nil {
		if l, ok := s.opts.Store.(store.Leases); ok {
			s.opts.Leases = l
		} else {
			s.opts.Leases = &store.LocalLeases{}
		}
	}
	if s.opts.Replica == "" {
		s.opts.Replica = "this gateway"
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.upgrader = websocket.Upgrader{
		ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10,
		CheckOrigin: func(r *http.Request) bool {
			o := r.Header.Get("Origin")
			return o == "" || slices.Contains(s.opts.AllowedOrigins, o)
		},
	}
	return s
}

// ServeHTTP upgrades a request to the gateway protocol.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		http.Error(w, "the gateway is shutting down", http.StatusServiceUnavailable)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !slices.Contains(s.opts.AllowedOrigins, o) {
		s.log.Warn("refused a connection from a foreign origin", "origin", o, "remote", r.RemoteAddr)
		http.Error(w, fmt.Sprintf("origin %q is not allowed", o), http.StatusForbidden)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	c := &serverConn{s: s, exts: map[string]int{}, tools: make(map[string][]*gateway.Tool), runs: make(map[string]context.CancelCauseFunc), updates: make(map[string]func(gateway.ToolUpdate))}
	c.p = newPeer(r.Context(), ws, s.log.With("remote", r.RemoteAddr))
	c.p.handle = c.handle
	c.p.onEvent = c.onEvent
	c.p.authed = c.isAuthed
	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	s.wg.Go(func() { c.run() })
}

// Shutdown ends the running turns with an error event, closes every
// connection and waits for them, bounded by ctx.
func (s *Server) Shutdown(ctx context.Context) {
	s.mu.Lock()
	s.closing = true
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.abortRuns(errShuttingDown)
	}
	done := make(chan struct{})
	go func() {
		for _, c := range conns {
			c.waitRuns(ctx)
			c.p.close(websocket.CloseGoingAway, "the gateway is shutting down")
		}
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// serverConn is one translator's connection.
type serverConn struct {
	s  *Server
	p  *peer
	id string // client name, for logs

	mu      sync.Mutex
	authed  bool
	tenant  string                             // the tenant of the connect token; set with authed
	exts    map[string]int                     // extensions enabled at connect
	tools   map[string][]*gateway.Tool         // scoped session key → this connection's tools of it (owners.go)
	runs    map[string]context.CancelCauseFunc // running turns by run id
	running sync.WaitGroup
	updates map[string]func(gateway.ToolUpdate) // tool call id → progress sink
}

// isAuthed reports whether the translator's connect request has succeeded.
func (c *serverConn) isAuthed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.authed
}

func (c *serverConn) run() {
	c.p.start()
	timer := time.AfterFunc(handshakeTimeout, func() {
		c.mu.Lock()
		authed := c.authed
		c.mu.Unlock()
		if !authed {
			c.p.close(websocket.ClosePolicyViolation, "no connect request in time")
		}
	})
	<-c.p.Done()
	timer.Stop()
	c.abortRuns(fmt.Errorf("%w", c.p.Err()))
	c.release()
	c.p.wait()
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	c.s.log.Info("translator disconnected", "client", c.id, "cause", c.p.Err())
}

func (c *serverConn) abortRuns(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cancel := range c.runs {
		cancel(cause)
	}
}

func (c *serverConn) waitRuns(ctx context.Context) {
	done := make(chan struct{})
	go func() { c.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// scoped returns the runtime's name of the connection's session key: each
// tenant has its own key space, so that two tenants' keys never meet in the
// runner's registry or in the owners map. The default tenant's keys are
// unchanged (except the rare one that starts with "tenant:").
func (c *serverConn) scoped(key string) string {
	c.mu.Lock()
	t := c.tenant
	c.mu.Unlock()
	if t != "" {
		return "tenant:" + t + "|" + key
	}
	if strings.HasPrefix(key, "tenant:") {
		return "tenant:|" + key
	}
	return key
}

// who returns the connection's tenant and client name, for logs.
func (c *serverConn) who() (tenant, client string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tenant, c.id
}

// handle serves one request of the translator; an error that is not the
// protocol's own reaches it only as an internalError (errors.go).
func (c *serverConn) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	res, err := c.dispatch(ctx, method, params)
	return res, c.shown(method, err)
}

func (c *serverConn) dispatch(ctx context.Context, method string, params json.RawMessage) (any, error) {
	c.mu.Lock()
	authed := c.authed
	c.mu.Unlock()
	if method == "connect" {
		return c.connect(params)
	}
	if !authed {
		return nil, wireError(CodeUnauthorized, "connect first")
	}
	switch method {
	case "chat.send":
		var p ChatSendParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, badRequest("chat.send: %v", err)
		}
		return c.chatSend(telemetry.Extract(ctx, p.Meta), p)
	case "chat.abort":
		var p ChatAbortParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, badRequest("chat.abort: %v", err)
		}
		c.mu.Lock()
		cancel := c.runs[p.RunID]
		c.mu.Unlock()
		if cancel != nil {
			cancel(context.Canceled)
		}
		return struct{}{}, nil
	case "sessions.setExtraTools":
		var p SetExtraToolsParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, badRequest("sessions.setExtraTools: %v", err)
		}
		if p.SessionKey == "" {
			return nil, badRequest("sessionKey is empty")
		}
		tools := make([]*gateway.Tool, len(p.Tools))
		for i, wt := range p.Tools {
			tools[i] = c.proxy(p.SessionKey, wt)
		}
		c.setTools(p.SessionKey, tools)
		return struct{}{}, nil
	case "sessions.clearExtraTools":
		var p SessionKeyParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, badRequest("sessions.clearExtraTools: %v", err)
		}
		if p.SessionKey == "" {
			return nil, badRequest("sessionKey is empty")
		}
		c.dropTools(ctx, p.SessionKey)
		return struct{}{}, nil
	}
	if strings.HasPrefix(method, "sessions.") {
		return c.sessions(ctx, method, params)
	}
	return nil, wireError(CodeMethodNotFound, "unknown method %q", method)
}

func (c *serverConn) connect(params json.RawMessage) (any, error) {
	var p ConnectParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, badRequest("connect: %v", err)
	}
	if p.Protocol != ProtocolVersion {
		err := wireError(CodeBadRequest, "protocol version %d is not supported: this gateway speaks version %d", p.Protocol, ProtocolVersion)
		return nil, &fatalError{err: err, closeCode: websocket.CloseProtocolError}
	}
	tenant, ok := c.s.tenantOf(p.Token)
	if !ok {
		c.s.log.Warn("refused a translator with a wrong token", "client", p.Client.Name)
		return nil, &fatalError{err: wireError(CodeUnauthorized, "wrong or missing token"), closeCode: websocket.ClosePolicyViolation}
	}
	var exts map[string]int
	if v := p.Extensions[ExtSessions]; v == ExtSessionsVersion && c.s.opts.Store != nil {
		exts = map[string]int{ExtSessions: v}
	}
	c.mu.Lock()
	c.authed, c.id, c.tenant = true, p.Client.Name+" "+p.Client.Version, tenant
	maps.Copy(c.exts, exts)
	c.mu.Unlock()
	c.s.log.Info("translator connected", "client", c.id, "tenant", tenant, "extensions", exts)
	var models []WireModel
	for _, m := range c.s.local.Models() {
		models = append(models, WireModel{ID: m.ID, Label: m.Label, Thinking: m.Thinking, ThinkingOn: m.ThinkingOn, ToolSearch: m.ToolSearch})
	}
	return Hello{Protocol: ProtocolVersion, Server: c.s.opts.Info, Models: models,
		Limits: HelloLimits{MaxFrameBytes: MaxFrameBytes, WriteQueueFrames: WriteQueueFrames}, Extensions: exts}, nil
}

// tenantOf returns the tenant of a connect token, comparing it in constant
// time with every configured token; ok is false for a wrong token. With no
// token configured every connection is the default tenant's.
func (s *Server) tenantOf(token string) (tenant string, ok bool) {
	if s.opts.Token == "" && len(s.opts.Tokens) == 0 {
		return "", true
	}
	if s.opts.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.opts.Token)) == 1 {
		ok = true
	}
	for t, name := range s.opts.Tokens {
		// Every token is compared: the time taken does not say which matched.
		if subtle.ConstantTimeCompare([]byte(token), []byte(t)) == 1 && !ok {
			tenant, ok = name, true
		}
	}
	return tenant, ok
}

// chatSend runs one turn for the translator, streaming its events, on the
// view of the session it sends (for a stored session, on the stored one
// when they differ: currentView); the finished turn goes back whole in the
// result. The turn holds its session's lease and its session key
// (claimTurn) while it runs.
func (c *serverConn) chatSend(ctx context.Context, p ChatSendParams) (any, error) {
	if p.SessionKey == "" {
		return nil, badRequest("sessionKey is empty")
	}
	history, err := p.view()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c.mu.Lock()
	if _, dup := c.runs[p.RunID]; dup || p.RunID == "" {
		c.mu.Unlock()
		return nil, badRequest("runId %q is empty or already running", p.RunID)
	}
	c.runs[p.RunID] = cancel
	c.running.Add(1)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.runs, p.RunID)
		c.mu.Unlock()
		c.running.Done()
	}()

	lease, release, err := c.lease(ctx, p)
	if err != nil {
		return nil, err
	}
	defer release()
	unclaim, err := c.claimTurn(p.SessionKey)
	if err != nil {
		return nil, err
	}
	defer unclaim() // before release: the key is free once the lease is
	if lease.Lost != nil {
		turnDone := make(chan struct{})
		var watch sync.WaitGroup
		watch.Go(func() {
			select {
			case <-lease.Lost:
				if c.s.opts.Observer != nil {
					c.s.opts.Observer.LeaseLost()
				}
				cancel(fmt.Errorf("the lease of session %s was lost (this replica, %s, can no longer be sure it alone runs it): the turn was cancelled; prompt again", p.shownID(), c.s.opts.Replica))
			case <-turnDone:
			}
		})
		defer func() { close(turnDone); watch.Wait() }()
	}
	var reloaded bool
	if p.SessionID != "" {
		if history, reloaded, err = c.currentView(ctx, p, lease.Token, history); err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return nil, wireError(CodeUnavailable, "%s", cause.Error())
			}
			return nil, c.storeError("chat.send", err)
		}
	}

	var turn gateway.Turn
	req := gateway.SendRequest{SessionKey: c.scoped(p.SessionKey), RunID: p.RunID, Message: p.Message, Model: p.Model, System: p.System, Toggles: p.Toggles,
		CallerHistory: true, History: history, OnTurn: func(t gateway.Turn) { turn = t },
		Ask: func(ctx context.Context, pr gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
			var res PermissionResult
			if err := c.p.call(ctx, "permission.request", PermissionParams{SessionKey: p.SessionKey, RunID: p.RunID, Call: pr.Call}, &res); err != nil {
				return gateway.PermissionCancelled, err
			}
			for o, name := range permissionOutcomes {
				if name == res.Outcome {
					return o, nil
				}
			}
			return gateway.PermissionReject, fmt.Errorf("unknown permission outcome %q", res.Outcome)
		},
	}
	emit := func(e gateway.Event) {
		_ = c.p.event("chat", chatEvent(p.SessionKey, p.RunID, e))
	}
	stop, err := c.s.local.Send(ctx, req, emit)
	cause := context.Cause(ctx)
	switch {
	case err == nil && stop == gateway.StopCancelled && cause != nil && !errors.Is(cause, context.Canceled):
		// Ended by the server (shutdown) or the connection, not by chat.abort.
		_ = c.p.event("chat.error", &ChatEvent{SessionKey: p.SessionKey, RunID: p.RunID, Kind: "error", Error: cause.Error()})
		return nil, wireError(CodeUnavailable, "%s", cause.Error())
	case err != nil:
		msg := turnErrorText(err)
		_ = c.p.event("chat.error", &ChatEvent{SessionKey: p.SessionKey, RunID: p.RunID, Kind: "error", Error: msg})
		return nil, wireError(CodeInternal, "%s", msg)
	case stop == gateway.StopCancelled:
		_ = c.p.event("chat.aborted", &ChatEvent{SessionKey: p.SessionKey, RunID: p.RunID, Kind: "aborted", StopReason: stop})
	default:
		_ = c.p.event("chat.final", &ChatEvent{SessionKey: p.SessionKey, RunID: p.RunID, Kind: "final", StopReason: stop})
	}
	res := ChatSendResult{StopReason: stop, Messages: turn.Messages, Usage: turn.Usage, Compaction: turn.Compaction, HistoryReloaded: reloaded}
	if p.SessionID != "" {
		res.LeaseToken = lease.Token
	}
	return res, nil
}

// proxy is the gateway side of a translator's tool: Execute invokes it back
// over the connection that registered it.
func (c *serverConn) proxy(key string, wt WireTool) *gateway.Tool {
	return &gateway.Tool{Name: wt.Name, Label: wt.Label, Group: wt.Group, Description: wt.Description, InputSchema: wt.InputSchema, Annotations: wt.Annotations, Kind: wt.Kind,
		Execute: func(ctx context.Context, callID string, args map[string]any, onUpdate func(gateway.ToolUpdate)) (gateway.Result, error) {
			if onUpdate != nil {
				c.mu.Lock()
				c.updates[callID] = onUpdate
				c.mu.Unlock()
				defer func() {
					c.mu.Lock()
					delete(c.updates, callID)
					c.mu.Unlock()
				}()
			}
			var res gateway.Result
			err := c.p.call(ctx, "tools.invoke", ToolsInvokeParams{SessionKey: key, ToolCallID: callID, Name: wt.Name, Args: args}, &res)
			if errors.Is(err, errConnClosed) {
				return gateway.Result{}, fmt.Errorf("tool %s: the translator that owns it disconnected", wt.Name)
			}
			return res, err
		}}
}

// onEvent receives the translator's notifications: tool progress.
func (c *serverConn) onEvent(event string, payload json.RawMessage) {
	if event != "tools.update" {
		return
	}
	var u ToolsUpdateParams
	if json.Unmarshal(payload, &u) != nil {
		return
	}
	c.mu.Lock()
	sink := c.updates[u.ToolCallID]
	c.mu.Unlock()
	if sink != nil {
		sink(u.Update)
	}
}
