package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/lifetime"
	"github.com/seed02d3eb6b/acp-agent/sandbox/process"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// State is the connection state of one MCP server of a session.
type State int

// The states a server goes through: Connecting, then Connected or Failed.
// When the connection of a Connected http or sse server is lost (the server
// restarted or forgot the session, and a fresh initialize failed), it becomes
// Lost: the next call dials it again, with a backoff after failed attempts,
// and success makes it Connected again. A stdio server whose connection is
// lost becomes Failed. An http or sse server that asks the user to sign in
// (Options.OAuth) is SignIn until the user has signed in (then Connecting
// again) or the sign-in failed. Every state ends in Closed when the Manager
// closes.
const (
	StateConnecting State = iota
	StateConnected
	StateFailed
	StateLost
	StateClosed
	StateSignIn
)

// String returns the lower-case name of s, as /servers shows it.
func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateFailed:
		return "failed"
	case StateLost:
		return "lost"
	case StateClosed:
		return "closed"
	case StateSignIn:
		return "needs sign-in"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// client is acp-agent's MCP client of one server (the spec's "MCP client":
// the host's one connection to one MCP server): the server's identity and
// settings, the connection state machine (conn, conn.go), the feature
// caches (tools, prompts, resources, progress, calls, sign-in, built
// server), each with its own mutex guarding only its own fields, and its
// lifetime.
//
// Lock order: a lock on the right of an arrow may be taken while holding
// the one on its left, never the other way round.
//
//	conn.redial → conn.mu → {toolCache.mu, rerun.mu, tailWriter.mu}
//	Manager.mu  → {toolCache.mu, resourceCache.mu}
//
// Manager.mu and conn.mu are never held together. conn.redial is held
// across a dial, so a lock the dial takes (conn.mu, signInCache.mu,
// builtServer.mu, lifetime.mu) may be taken under it; conn.mu and the
// caches' locks are never held across I/O. Every other lock of a client
// (promptCache.mu, progressTable.mu, inflight.mu, signInCache.mu,
// builtServer.mu, lifetime.mu, connectDeadline.mu, stdoutWatch.mu,
// readEnd.mu, ToolLists.mu) is a leaf: no other lock of the bridge is taken while it
// is held. progressFan.mu is held while the call's progress callback runs.
type client struct {
	spec     ServerSpec
	opts     *Options // shared with the Manager, read-only
	log      *slog.Logger
	timeouts Timeouts           // effective: the spec's, else the Manager's
	limiter  *quota.CallLimiter // tools/call rate limit

	conn conn // the connection state machine and the MCP client session (conn.go)

	// life ends when the server closes: it cancels the server's connects,
	// requests and list refreshes (internal/lifetime), whose contexts derive
	// from their callers'. No context is stored.
	life lifetime.Lifetime

	// Set by the Manager before the first connect, read-only after.
	onToolsChanged   func()        // after a refresh changed the tools, or the resources came or went
	onStateChanged   func(*client) // after a connect that ended in the background
	onLinkChanged    func(*client) // after a connection lost, or back (Options.OnLinkChanged)
	onPromptsChanged func()        // after a refresh of the prompts (prompts.go)

	// The feature caches: each guards its own fields with its own mutex.
	tools    toolCache     // the server's tools (toolcache.go)
	prompts  promptCache   // the server's prompts (a listCache: toolcache.go)
	res      resourceCache // the server's resources and templates (resources.go)
	progress progressTable // progress tokens of the calls in flight (progress.go)
	calls    inflight      // tool calls in flight and pending URL elicitations (elicit.go)
	signIn   signInCache   // an http or sse server's sign-in handler (signin.go)
	built    builtServer   // what spec.NewServer built (lazy.go)
}

func newServer(spec ServerSpec, opts *Options) *client {
	perMinute := spec.CallsPerMinute
	if perMinute == 0 {
		perMinute = opts.CallsPerMinute
	}
	return &client{
		spec:     spec,
		opts:     opts,
		log:      opts.Logger.With("server", spec.Name),
		timeouts: spec.Timeouts.Or(opts.Timeouts),
		limiter:  quota.NewCallLimiter(spec.Name, perMinute, opts.Clock),
		conn:     conn{settled: make(chan struct{})},
	}
}

// onToolListChanged handles notifications/tools/list_changed: the tools are
// listed again in the background (one refresh at a time; a notification
// during a refresh runs one more), and the Manager is told.
func (s *client) onToolListChanged(ctx context.Context, _ *mcp.ToolListChangedRequest) {
	s.listChanged(ctx, &s.tools.refresh, s.refreshTools)
}

// listChanged starts refresh through r (one at a time, one more for a
// notification during a refresh) while the server is connected; a server
// still connecting lists everything itself. The refresh's context has the
// values of ctx, the notification's, and ends when the server closes.
func (s *client) listChanged(ctx context.Context, r *rerun, refresh func(context.Context)) {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	if s.conn.state != StateConnected || s.conn.closing {
		return
	}
	r.trigger(&s.conn.watchers, func() {
		rctx, release := s.life.Bind(context.WithoutCancel(ctx))
		defer release()
		refresh(rctx)
	})
}

// rerun runs a list refresh in the background, one at a time: a trigger
// while one runs makes it run once more when it ends.
type rerun struct {
	mu      sync.Mutex
	running bool
	again   bool
}

// trigger starts run as a goroutine of wg unless one runs. Callers hold the
// server's mu, so wg (the server's watchers) is not yet waited on.
func (r *rerun) trigger(wg *sync.WaitGroup, run func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		r.again = true
		return
	}
	r.running = true
	wg.Go(func() {
		for {
			run()
			r.mu.Lock()
			again := r.again
			r.again, r.running = false, again
			r.mu.Unlock()
			if !again {
				return
			}
		}
	})
}

// refreshTools lists the tools again and, when that worked, tells the
// Manager; a failure keeps the old list.
func (s *client) refreshTools(ctx context.Context) {
	cs, err := s.conn.session()
	var tools []*mcp.Tool
	if err == nil {
		tools, err = s.listTools(ctx, cs)
	}
	s.conn.mu.Lock()
	notify := err == nil && !s.conn.closing
	if notify {
		s.tools.set(tools)
	}
	s.conn.mu.Unlock()
	if err != nil {
		s.log.Warn("refreshing the tools after tools/list_changed failed; keeping the old list", "err", err)
	} else if notify && s.onToolsChanged != nil {
		s.log.Info("tools changed", "tools", len(tools))
		s.onToolsChanged()
	}
}

// connect connects the server and lists its tools. On failure the server is
// left in StateFailed with the reason, and nothing of it keeps running.
// The connect ends with ctx until the server waits for the user to sign in;
// from then on it runs in the background, until it succeeds, fails or the
// server closes. It settles the server. When it ends after having settled
// early, or initial is false (Manager.Login), the Manager is told: the tools
// are bridged again and Options.OnStateChanged hears of the new state.
func (s *client) connect(ctx context.Context, initial bool) {
	if s.lazy() {
		s.connectIdle(ctx, initial) // lazy.go
		return
	}
	// The dial is ctx's until detach (a sign-in), and always the server's:
	// closing the server ends it.
	dctx, cancel := s.life.Bind(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	s.conn.mu.Lock()
	s.conn.detach = stop
	s.conn.mu.Unlock()
	cs, err := s.dial(dctx)
	var tools []*mcp.Tool
	if err == nil {
		// The three lists are independent requests: sent together, they
		// cost the connect one round trip instead of three or more.
		var lists sync.WaitGroup
		lists.Go(func() { s.loadResources(dctx, cs) }) // never fails the server (resources.go)
		lists.Go(func() { s.loadPrompts(dctx, cs) })   // nor (prompts.go)
		tools, err = s.listTools(dctx, cs)
		lists.Wait()
		if err != nil {
			s.res.set(nil, nil)
			s.prompts.set(nil)
			s.abandon(cs)
		}
	}
	tell := !initial || s.conn.isSettled()
	defer func() {
		s.conn.settle()
		if tell && s.onStateChanged != nil {
			s.onStateChanged(s)
		}
	}()
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	s.conn.detach, s.conn.signInURL = nil, ""
	if s.conn.closing { // the Manager closed while we were connecting
		tell = false
		if err == nil {
			s.conn.mu.Unlock()
			s.stopSession(cs)
			s.conn.mu.Lock()
		}
		return
	}
	if err != nil {
		s.conn.state, s.conn.err = StateFailed, err
		s.log.Warn("MCP server failed", "err", err)
		return
	}
	s.conn.state, s.conn.cs, s.conn.err = StateConnected, cs, nil
	s.tools.set(tools)
	s.conn.info = cs.InitializeResult().ServerInfo
	s.watchConn(cs)
	s.log.Info("MCP server connected", "tools", len(tools))
}

// dial starts the transport and runs the MCP initialize handshake, bounded by
// the connect timeout.
func (s *client) dial(ctx context.Context) (*mcp.ClientSession, error) {
	transport, cmd, kill, err := s.transport(ctx)
	if err != nil {
		return nil, err
	}
	opts := &mcp.ClientOptions{
		Logger: s.opts.Logger,
		// Roots on purpose: the session cwd is the one root (MCP "Roots":
		// https://modelcontextprotocol.io/specification/2025-11-25/client/roots).
		//lint:ignore SA1019 roots are deprecated from 2026-07-28 but still served (as input requests there); servers (server-filesystem) rely on them.
		Capabilities:                &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		ProgressNotificationHandler: s.onProgress,
		ToolListChangedHandler:      s.onToolListChanged,
		ResourceListChangedHandler:  s.onResourceListChanged, // resources.go
		ResourceUpdatedHandler:      s.onResourceUpdated,
		PromptListChangedHandler:    s.onPromptListChanged, // prompts.go
		//lint:ignore SA1019 logging is deprecated from 2026-07-28 but still sent by servers in its window (mcplog.go).
		LoggingMessageHandler: s.onLog,
	}
	if caps := s.opts.Elicitor.modes(); caps != nil {
		// Exactly the modes the session's user can be asked in (elicit.go).
		opts.Capabilities.Elicitation = caps
		opts.ElicitationHandler = s.onElicit
		opts.ElicitationCompleteHandler = s.onElicitComplete
	}
	sampling := s.opts.Sampler != nil && s.opts.Sampler.Sample != nil
	if sampling {
		// The capability follows from the handler (sample.go).
		//lint:ignore SA1019 sampling is deprecated from 2026-07-28 but still asked for (as input requests there).
		opts.CreateMessageHandler = s.onSample
	}
	client := mcp.NewClient(s.opts.ClientInfo, opts)
	client.AddSendingMiddleware(s.sendLogLevel, leanToolLists, rightSizeMaps) // mcplog.go: 2026-07-28 sessions; tool.go; lean.go
	if !sampling {
		client.AddReceivingMiddleware(s.refuseSampling)
	}
	if root := rootFor(s.opts.Cwd); root != nil {
		//lint:ignore SA1019 see Capabilities above.
		client.AddRoots(root)
	}

	// The deadline pauses while the user signs in (signin.go).
	cctx, dl, cancel := withConnectDeadline(ctx, s.timeouts.Connect)
	defer cancel()
	s.conn.mu.Lock()
	s.conn.deadline = dl
	s.conn.mu.Unlock()
	defer func() {
		s.conn.mu.Lock()
		if s.conn.deadline == dl {
			s.conn.deadline = nil
		}
		s.conn.mu.Unlock()
	}()
	// If the handshake outlives its deadline, kill the child (or end the HTTP
	// streams) at once so that a hanging server costs no more than its timeout.
	stopKill := context.AfterFunc(cctx, kill)
	cs, err := client.Connect(cctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err == nil {
		s.setLogLevel(cctx, cs)
	}
	if !stopKill() && err == nil {
		_ = cs.Close()
		err = context.Cause(cctx)
	}
	if err == nil {
		if st, ok := transport.(*stdioTransport); ok {
			st.out.forgetHead() // only a failed initialize needs it
		}
		return cs, nil
	}
	// Whether the child was still running is read before kill: closing the
	// connection reads what is left of its stdout first (stdoutWatch.drain),
	// long enough for a killed child to be seen exiting on its own.
	killed := false // the child was still running: its end is ours, not a cause
	st, stdio := transport.(*stdioTransport)
	if stdio && st.proc != nil {
		select {
		case <-st.proc.Done():
		default:
			killed = true
		}
	}
	kill()
	if stdio && st.proc != nil {
		st.proc.Kill() // the group and every descendant; then cmd.ProcessState is set
	}
	err = s.describeDialError(err, dl.timedOut(), cmd, killed)
	if stdio {
		if note := s.deniedNote(err.Error()); note != "" {
			err = fmt.Errorf("%w. %s", err, note)
		}
	}
	return nil, urlpolicy.RedactError(err)
}

// transport returns the transport of the server: Options.Dial's, a stdio
// child in its own process group (cmd, started by the transport's Connect
// through process.Start), or Streamable HTTP / SSE. kill ends what the
// transport started (the child's process group, the HTTP streams); close
// calls it too. It refuses transports the bridge cannot serve, a server
// Options.Admit refuses and a stdio server Options.StdioPolicy refuses,
// with the policy's error.
func (s *client) transport(ctx context.Context) (t mcp.Transport, cmd *exec.Cmd, kill func(), err error) {
	if s.spec.Transport != TransportInProcess && s.opts.Admit != nil {
		if err := s.opts.Admit(s.spec); err != nil {
			return nil, nil, nil, err // nothing started: the server fails with the policy's reason
		}
	}
	if s.spec.Transport == TransportStdio && s.opts.StdioPolicy != nil {
		if err := s.opts.StdioPolicy(s.spec); err != nil {
			return nil, nil, nil, err // no process: the server fails with the policy's reason
		}
	}
	if s.opts.Dial != nil {
		t, err := s.opts.Dial(ctx, s.spec)
		if err != nil || t != nil {
			return t, nil, func() {}, err
		}
	}
	switch s.spec.Transport {
	case TransportStdio:
	case TransportInProcess:
		return s.inProcessTransport(ctx)
	case TransportACP:
		return nil, nil, nil, fmt.Errorf("%w: an acp server is carried by the ACP connection, and no Options.Dial supplies it", ErrUnsupportedTransport)
	case TransportHTTP, TransportSSE:
		t, err := s.httpTransport()
		if err != nil {
			return nil, nil, nil, err
		}
		// The transport's streams live as long as the connection, not as long
		// as the connect call: Connect gets a context of their own.
		connCtx, connCancel := context.WithCancel(context.WithoutCancel(ctx))
		s.conn.mu.Lock()
		s.conn.procCancel = connCancel
		s.conn.mu.Unlock()
		return &detached{Transport: t, ctx: connCtx}, nil, connCancel, nil
	default:
		return nil, nil, nil, fmt.Errorf("%w: unknown type %q", ErrUnsupportedTransport, s.spec.Transport)
	}
	procCtx, procCancel := context.WithCancel(context.WithoutCancel(ctx))
	dir := s.opts.Cwd
	if s.opts.StdioDir != "" {
		dir = s.opts.StdioDir
	}
	// The child is killed when procCtx ends through an AfterFunc set once
	// it runs (st.started), not through exec.CommandContext, whose
	// watching goroutine would live as long as the child: one less
	// goroutine per idle stdio server.
	cmd, stderr := stdioCommand(context.WithoutCancel(ctx), s.spec, dir, s.opts.Env, s.log)
	ws := s.opts.Confine.workspace()
	if s.opts.StdioDir != "" { // the session's directories are on its client's machine
		ws.Cwd, ws.Dirs = dir, nil
	}
	mode, err := s.opts.Confine.Apply(cmd, ws, s.spec.Sandbox)
	if err != nil {
		procCancel()
		return nil, nil, nil, err // no process: the server fails with the reason
	}
	st := &stdioTransport{cmd: cmd, out: &stdoutWatch{}, end: &readEnd{}}
	s.conn.mu.Lock()
	s.conn.cmd, s.conn.proc, s.conn.procCancel, s.conn.stderr, s.conn.stdout = cmd, nil, procCancel, stderr, st.out
	s.conn.readEnd = st.end
	s.conn.mode = mode
	s.conn.mu.Unlock()
	st.started = func(p *process.Process) {
		s.conn.mu.Lock()
		if s.conn.cmd == cmd {
			s.conn.proc = p
		}
		s.conn.mu.Unlock()
		// As exec.CommandContext's Cancel would (process.Command): the
		// group gets SIGKILL when procCtx ends, at once if it has, unless
		// the child is reaped (its group id may be another's by then).
		context.AfterFunc(procCtx, func() {
			select {
			case <-p.Done():
			default:
				_ = process.SignalGroup(cmd, syscall.SIGKILL)
			}
		})
	}
	return st, cmd, procCancel, nil
}

// inProcessTransport connects a new session of spec.Server (or of the
// server spec.NewServer built, once) to one end of a go-sdk in-memory
// transport pair and returns the other end. Ending the server session is
// kill (and close, through procCancel).
func (s *client) inProcessTransport(ctx context.Context) (mcp.Transport, *exec.Cmd, func(), error) {
	srv := s.spec.Server
	if srv == nil {
		srv = s.built.get(s.spec.NewServer)
	}
	if srv == nil {
		return nil, nil, nil, fmt.Errorf("%w: inprocess server without an *mcp.Server (NewServer returned nil)", ErrUnsupportedTransport)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.WithoutCancel(ctx), st, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("connecting the in-process server: %w", err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { _ = ss.Close() }) }
	s.conn.mu.Lock()
	s.conn.procCancel = stop
	s.conn.mu.Unlock()
	return ct, nil, stop, nil
}

// detached connects its Transport with ctx instead of the caller's context,
// so that streams the transport opens while connecting (the legacy SSE GET,
// the Streamable HTTP standalone stream) outlive the connect deadline.
type detached struct {
	mcp.Transport
	ctx context.Context
}

func (d *detached) Connect(context.Context) (mcp.Connection, error) {
	return d.Transport.Connect(d.ctx)
}

// describeDialError turns a failed start or initialize into a short reason.
// killed says the bridge killed the child after the failure, so a signal in
// its exit status is not the cause.
func (s *client) describeDialError(err error, timedOut bool, cmd *exec.Cmd, killed bool) error {
	var execErr *exec.Error
	switch {
	case errors.As(err, &execErr):
		return fmt.Errorf("cannot start command %q: %w", s.spec.Command, execErr.Err)
	case cmd != nil && cmd.Process == nil:
		return fmt.Errorf("cannot start command %q: %w", s.spec.Command, err)
	case timedOut:
		return fmt.Errorf("%w: initialize took longer than %s", ErrTimeout, s.timeouts.Connect)
	case cmd != nil && s.conn.stdout.nonJSON() != nil:
		return fmt.Errorf("%w%s", s.conn.stdout.nonJSON(), s.conn.stderr.suffix())
	case cmd != nil && cmd.ProcessState != nil && cmd.ProcessState.Exited():
		return fmt.Errorf("process exited during initialize (%s)%s", cmd.ProcessState, s.conn.stderr.suffix())
	case cmd != nil && s.conn.stdout.closed() && cmd.ProcessState != nil && !cmd.ProcessState.Exited():
		// The child was running when its stdout ended: dial killed it.
		return fmt.Errorf("server closed its stdout during initialize while still running%s", s.conn.stderr.suffix())
	case cmd != nil && cmd.ProcessState != nil && !killed:
		return fmt.Errorf("process exited during initialize (%s)%s", cmd.ProcessState, s.conn.stderr.suffix())
	default:
		return fmt.Errorf("initialize failed: %w%s", err, s.conn.stderr.suffix())
	}
}

// listTools pages through tools/list, bounded by the list timeout.
func (s *client) listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	if res := cs.InitializeResult(); res == nil || res.Capabilities == nil || res.Capabilities.Tools == nil {
		return nil, nil // the server offers no tools
	}
	lctx, cancel := context.WithTimeout(ctx, s.timeouts.ToolsList)
	defer cancel()
	for attempt := 0; ; attempt++ {
		var tools []*mcp.Tool
		var err error
		for t, e := range cs.Tools(lctx, nil) {
			if e != nil {
				err = e
				break
			}
			tools = append(tools, t)
		}
		switch {
		case err == nil:
			return tools, nil // lean already (leanToolLists), and shared with go-sdk's cache: read-only
		case errors.Is(lctx.Err(), context.DeadlineExceeded):
			return nil, fmt.Errorf("%w: tools/list took longer than %s", ErrTimeout, s.timeouts.ToolsList)
		case attempt == 0 && lctx.Err() == nil && undelivered(err):
			// The HTTP request failed on the way (a reset connection):
			// listing is idempotent, so it is sent once more.
			s.log.Debug("tools/list did not get through; listing again", "err", err)
			continue
		}
		return nil, fmt.Errorf("tools/list failed: %w", err)
	}
}

// requestContext returns ctx bounded by d and by the server's life:
// closing the server cancels it.
func (s *client) requestContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	lctx, release := s.life.Bind(ctx)
	cctx, cancel := context.WithTimeout(lctx, d)
	return cctx, func() { cancel(); release() }
}

// codeRejected is the go-sdk's "rejected by transport" error code: the
// request failed in the transport (an HTTP request that got no response),
// and the connection is still usable.
const codeRejected = -32005

// undelivered reports whether err is a request the transport could not
// deliver or get an answer to.
func undelivered(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == codeRejected
}

// watchConn has watch run on cs, the live session, once its connection
// ends: a stdio connection tells when its reads end (readEnd), so the
// watcher starts then; on another transport it starts now and waits.
// s.conn.mu is held.
func (s *client) watchConn(cs *mcp.ClientSession) {
	if end := s.conn.readEnd; end != nil && end.arm(func() { s.watchEnded(cs) }) {
		return
	}
	s.conn.watchers.Go(func() { s.watch(cs) })
}

// watchEnded starts watch on cs, whose stdio connection's reads have
// ended, unless the server is closing or cs is no longer its session.
func (s *client) watchEnded(cs *mcp.ClientSession) {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	if !s.conn.closing && s.conn.cs == cs {
		s.conn.watchers.Go(func() { s.watch(cs) })
	}
}

// watch marks the server failed (stdio) or lost (http, sse: the next call
// dials again) when its connection ends before Close.
func (s *client) watch(cs *mcp.ClientSession) {
	err := cs.Wait()
	tell := false
	defer func() { // after the unlock
		if tell && s.onLinkChanged != nil {
			s.onLinkChanged(s)
		}
	}()
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	if s.conn.closing || s.conn.cs != cs {
		return
	}
	if s.lazy() { // idle again: the next call connects (lazy.go)
		s.conn.cs = nil
		s.log.Warn("in-process MCP server connection ended; the next call connects again", "err", err)
		return
	}
	tell = true
	s.conn.state, s.conn.cs = StateFailed, nil
	switch {
	case errors.Is(err, mcp.ErrSessionMissing):
		s.conn.err = fmt.Errorf("%w: %w", errSessionLost, err)
	case err != nil && !errors.Is(err, mcp.ErrConnectionClosed):
		s.conn.err = fmt.Errorf("connection lost: %v%s", err, s.conn.stderr.suffix())
	default:
		s.conn.err = fmt.Errorf("connection lost%s", s.conn.stderr.suffix())
	}
	s.conn.err = urlpolicy.RedactError(s.conn.err)
	if s.redials() {
		s.conn.state = StateLost // retryAt stays: zero after a success, so the next call dials at once
		s.log.Warn("MCP server connection lost; the next call dials it again", "err", s.conn.err)
		return
	}
	s.log.Warn("MCP server connection lost", "err", s.conn.err)
	if s.conn.cmd != nil && s.conn.procCancel != nil {
		s.conn.procCancel() // reap whatever is left of the group
	}
}

// call sends tools/call for the tool named name (the server's own name). A
// call over the server's rate limit fails at once as a tool error. For an
// http or sse server: when the server has lost the session (isSessionLost),
// the bridge initializes a fresh session once and retries the call once; a
// server marked lost is dialed again by the next call, and a call while its
// redial backoff runs fails at once as a tool error saying when it will be
// tried again. Errors are redacted (urlpolicy.RedactError).
func (s *client) call(ctx context.Context, name string, args map[string]any, onUpdate func(gateway.ToolUpdate)) (res gateway.Result, err error) {
	ctx, span := s.startCallSpan(ctx, name) // trace.go
	defer func() { endCallSpan(span, res, err) }()
	if err := s.limiter.Allow(); err != nil {
		return gateway.ErrorResult(gateway.ErrorText(err)), nil
	}
	res, err = s.callRetrying(ctx, name, args, onUpdate)
	var wait *backoffError
	if errors.As(err, &wait) {
		return gateway.ErrorResult(urlpolicy.RedactURLs(wait.Error())), nil
	}
	return res, urlpolicy.RedactError(err)
}

func (s *client) callRetrying(ctx context.Context, name string, args map[string]any, onUpdate func(gateway.ToolUpdate)) (gateway.Result, error) {
	defer s.use()() // a lazy server rests after its last request (lazy.go)
	cs, err := s.liveSession(ctx)
	if err != nil {
		return gateway.Result{}, err
	}
	res, err := s.callOnce(ctx, cs, name, args, onUpdate)
	if err == nil || ctx.Err() != nil || !s.redials() || !isSessionLost(err) {
		return res, err
	}
	retry := neverReached(err) || s.tools.idempotent(name)
	s.log.Info("the MCP session was lost; initializing a new one", "tool", name, "retry", retry, "err", err)
	cause := err
	if cs, err = s.reconnect(ctx, cs, err); err != nil {
		return gateway.Result{}, err
	}
	if !retry {
		// The server may have run the call before the connection broke:
		// running a tool that is not idempotent twice is worse than asking.
		return gateway.ErrorResult(fmt.Sprintf("the connection to MCP server %q broke during the call (%v), so the tool may or may not have run; the session is back: check, then call again if needed",
			s.spec.Name, urlpolicy.RedactError(cause))), nil
	}
	res, err = s.callOnce(ctx, cs, name, args, onUpdate)
	if err != nil && ctx.Err() == nil && isSessionLost(err) {
		err = fmt.Errorf("%w again right after a fresh initialize: %w", errSessionLost, err)
		s.conn.markLost(cs, err, s.now())
	}
	return res, err
}

// liveSession returns the live client session; a lost server is dialed
// again first (reconnect), unless its backoff runs, and an idle lazy one is
// connected (wake).
func (s *client) liveSession(ctx context.Context) (*mcp.ClientSession, error) {
	if s.lazy() {
		return s.wake(ctx) // lazy.go
	}
	s.conn.mu.Lock()
	// Connecting with no session, once connected, is another call's redial:
	// reconnect waits for it.
	lost := s.conn.cs == nil && !s.conn.closing && s.redials() && (s.conn.state == StateLost || s.conn.state == StateConnecting && s.conn.info != nil)
	s.conn.mu.Unlock()
	if lost {
		return s.reconnect(ctx, nil, nil)
	}
	return s.conn.session()
}

// callOnce sends one tools/call on cs, bounded by the call timeout.
func (s *client) callOnce(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any, onUpdate func(gateway.ToolUpdate)) (gateway.Result, error) {
	if args == nil {
		args = map[string]any{} // never "arguments": null (TS servers reject it)
	}
	cctx, cancel := s.requestContext(ctx, s.timeouts.ToolCall) // closing the server cancels its calls (notifications/cancelled)
	defer cancel()
	defer s.calls.add(cctx)() // an elicitation arriving now belongs to this call
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	traceMeta(ctx, params) // trace.go
	if onUpdate != nil {
		token, fan := s.progress.watch(onUpdate)
		params.SetProgressToken(token)
		defer s.progress.unwatch(token, fan)
	}
	res, err := cs.CallTool(cctx, params)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return gateway.Result{}, context.Cause(ctx)
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			return gateway.Result{}, fmt.Errorf("%w: tools/call took longer than %s", ErrTimeout, s.timeouts.ToolCall)
		}
		return gateway.Result{}, err
	}
	out := resultFromMCP(capResult(res, s.opts.Limits), s.spec.Transport == TransportInProcess)
	out.Show = showFromMeta(s.spec.Transport, res.Meta)
	out.Raw = rawWithoutShow(s.spec.Transport, out.Raw)
	return out, nil
}

// reconnect replaces the client session stale with a fresh one: a new
// transport and initialize; the tools are kept. stale is the session a call
// just saw fail with cause, or nil when the server is already marked lost.
// Concurrent callers share one reconnect. A redial of a lost server waits
// for its backoff: before retryAt it fails at once with a *backoffError,
// except for the first retry of a session that was live until now. A failed
// redial marks the server lost and doubles the backoff (redialMinBackoff up
// to redialMaxBackoff); a successful one resets it.
func (s *client) reconnect(ctx context.Context, stale *mcp.ClientSession, cause error) (*mcp.ClientSession, error) {
	s.conn.redial.Lock()
	defer s.conn.redial.Unlock()
	s.conn.mu.Lock()
	if s.conn.closing {
		s.conn.mu.Unlock()
		return nil, ErrNotConnected
	}
	if s.conn.cs != nil && s.conn.cs != stale {
		cs := s.conn.cs // another call reconnected already
		s.conn.mu.Unlock()
		return cs, nil
	}
	// A server told as lost is told when it is back.
	wasLost := s.conn.state == StateLost
	if s.conn.cs == nil { // lost: no session to retry at once, so the backoff rules
		if s.conn.state != StateLost {
			err := s.conn.err
			s.conn.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", ErrNotConnected, err)
		}
		if wait := s.conn.retryAt.Sub(s.now()); wait > 0 {
			err := &backoffError{server: s.spec.Name, retryIn: wait, cause: s.conn.err}
			s.conn.mu.Unlock()
			return nil, err
		}
	}
	if stale != nil && s.conn.cs == stale {
		s.conn.closeStale(stale)
		s.conn.cs, s.conn.err = nil, urlpolicy.RedactError(fmt.Errorf("%w: %w", errSessionLost, cause))
	}
	s.conn.state = StateConnecting
	var endStreams context.CancelFunc
	if s.conn.cmd == nil {
		endStreams = s.conn.procCancel // the old HTTP streams' context; dial sets a new one
	}
	s.conn.mu.Unlock()
	if endStreams != nil {
		defer endStreams()
	}

	s.log.Info("dialing the MCP server again")
	cs, err := s.dial(ctx)
	// tell: the server is lost, or back, as of this redial; told after the
	// unlock.
	tell := false
	defer func() {
		if tell && s.onLinkChanged != nil {
			s.onLinkChanged(s)
		}
	}()
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	if s.conn.closing {
		if cs != nil {
			s.conn.mu.Unlock()
			_ = cs.Close()
			s.conn.mu.Lock()
		}
		return nil, ErrNotConnected
	}
	if err != nil && ctx.Err() != nil { // the call was cancelled: no backoff for that
		s.conn.state = StateLost
		return nil, context.Cause(ctx)
	}
	if err != nil {
		s.conn.backoff = nextBackoff(s.conn.backoff)
		s.conn.state, s.conn.retryAt, s.conn.cs = StateLost, s.now().Add(s.conn.backoff), nil
		if cause != nil {
			err = fmt.Errorf("%w (%v), and dialing again failed: %w", errSessionLost, cause, err)
		} else {
			err = fmt.Errorf("dialing again failed: %w", err)
		}
		s.conn.err = urlpolicy.RedactError(err)
		s.log.Warn("dialing the MCP server again failed", "err", s.conn.err, "retryIn", s.conn.backoff)
		tell = !wasLost
		return nil, fmt.Errorf("%w: %w", ErrNotConnected, s.conn.err)
	}
	s.conn.state, s.conn.err, s.conn.cs, s.conn.backoff, s.conn.retryAt = StateConnected, nil, cs, 0, time.Time{}
	s.watchConn(cs)
	s.log.Info("MCP server connected again")
	tell = wasLost
	return cs, nil
}

// close ends the connection and, for a stdio server, everything the child
// started: stdin is closed, then after the grace period the process group
// gets SIGTERM, then SIGKILL, and what is left of the child's descendants is
// killed (process.StopGroup). Requests still in flight get
// notifications/cancelled first. It is idempotent and bounded in time.
func (s *client) close() {
	cs, proc, procCancel, ok := s.conn.shut()
	if !ok {
		return
	}
	s.life.End()
	start := time.Now()
	defer func() { s.log.Debug("MCP server closed", "elapsed", time.Since(start)) }()

	switch {
	case proc != nil && cs != nil:
		process.StopGroup(proc, s.opts.Grace, func() { _ = cs.Close() })
	case cs != nil:
		_ = cs.Close()
	case proc != nil: // failed or still connecting: nothing to be graceful with
		proc.Kill()
	}
	if procCancel != nil {
		procCancel()
	}
	s.conn.watchers.Wait()
}

// stopSession closes a session that never became the server's live one
// because the Manager closed while it connected: gracefully, as close does.
func (s *client) stopSession(cs *mcp.ClientSession) {
	proc, procCancel := s.conn.process()
	if proc != nil {
		process.StopGroup(proc, s.opts.Grace, func() { _ = cs.Close() })
	} else {
		_ = cs.Close()
	}
	if procCancel != nil {
		procCancel()
	}
}

// abandon ends a session whose server failed after initialize (tools/list
// timed out or failed): the child and its descendants are killed at once, as
// after a failed initialize, so that a server that hangs and ignores
// SIGTERM costs its timeout and no more.
func (s *client) abandon(cs *mcp.ClientSession) {
	proc, procCancel := s.conn.process()
	if proc != nil {
		proc.Kill() // its stdout ends, so Close below cannot wait on it
	}
	_ = cs.Close()
	if procCancel != nil {
		procCancel()
	}
}

// status reports the server's state for /servers.
func (s *client) status(bridged int) ServerStatus {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	st := ServerStatus{Name: s.spec.Name, Transport: s.spec.Transport, State: s.conn.state, Err: s.conn.err, Tools: bridged}
	if s.conn.state == StateLost {
		st.RetryAt = s.conn.retryAt
	}
	st.SignInURL = s.conn.signInURL
	st.Mode = s.conn.mode
	st.Idle = s.lazy() && s.conn.state == StateConnected && s.conn.cs == nil
	if s.conn.info != nil {
		st.ServerName, st.ServerVersion = s.conn.info.Name, s.conn.info.Version
	}
	return st
}

// rootFor returns the MCP root of the session cwd as a file:// URI, or nil
// when cwd is empty.
//
//lint:ignore SA1019 see client.dial.
func rootFor(cwd string) *mcp.Root {
	if cwd == "" {
		return nil
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(cwd)}
	return &mcp.Root{URI: u.String(), Name: filepath.Base(cwd)} //lint:ignore SA1019 see client.dial.
}
