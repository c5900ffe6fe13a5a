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

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox"
)

// State is the connection state of one MCP server of a session.
type State int

// The states a server goes through: Connecting, then Connected or Failed;
// Connected becomes Failed when the connection is lost; every state ends in
// Closed when the Manager closes.
const (
	StateConnecting State = iota
	StateConnected
	StateFailed
	StateClosed
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
	case StateClosed:
		return "closed"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// server is the connection to one MCP server.
type server struct {
	spec ServerSpec
	opts *Options // shared with the Manager, read-only
	log  *slog.Logger

	stderr *tailWriter // last lines of a stdio child's stderr, for failure reasons

	mu         sync.Mutex
	state      State
	err        error                   // why the server failed; nil unless state is StateFailed
	cs         *mcp.ClientSession      // non-nil once connected, until closed
	cmd        *exec.Cmd               // the stdio child, or nil
	procCancel context.CancelFunc      // kills the stdio child's process group
	tools      []*mcp.Tool             // from tools/list, in server order
	info       *mcp.Implementation     // serverInfo from initialize
	progress   map[string]*progressFan // progress token → the call waiting for it
	nextToken  int
	closing    bool          // Close has begun; a lost connection is not a failure
	watchDone  chan struct{} // closed when the connection watcher returns; nil if none
}

// progressFan forwards progress notifications to one running call until the
// call returns.
type progressFan struct {
	mu sync.Mutex
	fn func(gateway.ToolUpdate) // nil once the call has returned
}

func newServer(spec ServerSpec, opts *Options) *server {
	return &server{
		spec:     spec,
		opts:     opts,
		log:      opts.Logger.With("server", spec.Name),
		progress: make(map[string]*progressFan),
	}
}

// connect connects the server and lists its tools. On failure the server is
// left in StateFailed with the reason, and nothing of it keeps running.
func (s *server) connect(ctx context.Context) {
	cs, err := s.dial(ctx)
	var tools []*mcp.Tool
	if err == nil {
		tools, err = s.listTools(ctx, cs)
		if err != nil {
			s.stopSession(cs)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.state, s.err = StateFailed, err
		s.log.Warn("MCP server failed", "err", err)
		return
	}
	if s.closing { // the Manager closed while we were connecting
		s.mu.Unlock()
		s.stopSession(cs)
		s.mu.Lock()
		return
	}
	s.state, s.cs, s.tools = StateConnected, cs, tools
	s.info = cs.InitializeResult().ServerInfo
	s.watchDone = make(chan struct{})
	go s.watch(cs)
	s.log.Info("MCP server connected", "tools", len(tools))
}

// dial starts the transport and runs the MCP initialize handshake, bounded by
// the connect timeout.
func (s *server) dial(ctx context.Context) (*mcp.ClientSession, error) {
	transport, cmd, err := s.transport(ctx)
	if err != nil {
		return nil, err
	}
	client := mcp.NewClient(s.opts.ClientInfo, &mcp.ClientOptions{
		Logger: s.opts.Logger,
		// Roots on purpose: the session cwd is the one root (MCP "Roots":
		// https://modelcontextprotocol.io/specification/2025-11-25/client/roots).
		//lint:ignore SA1019 roots are deprecated only from 2026-07-28; we negotiate 2025-11-25 and servers (server-filesystem) rely on them.
		Capabilities:                &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		ProgressNotificationHandler: s.onProgress,
	})
	if root := rootFor(s.opts.Cwd); root != nil {
		//lint:ignore SA1019 see Capabilities above.
		client.AddRoots(root)
	}

	cctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	kill := func() {}
	if cmd != nil {
		s.mu.Lock()
		kill = s.procCancel
		s.mu.Unlock()
	}
	// If the handshake outlives its deadline, kill the child at once so that a
	// hanging server costs no more than its timeout.
	stopKill := context.AfterFunc(cctx, kill)
	cs, err := client.Connect(cctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if !stopKill() && err == nil {
		_ = cs.Close()
		err = cctx.Err()
	}
	if err == nil {
		return cs, nil
	}
	if cmd != nil {
		kill()
		_ = sandbox.SignalGroup(cmd, syscall.SIGKILL)
	}
	return nil, s.describeDialError(err, cctx, cmd)
}

// transport returns the transport of the server: Options.Dial's, or a stdio
// child in its own process group (cmd). It refuses transports the bridge
// cannot serve.
func (s *server) transport(ctx context.Context) (mcp.Transport, *exec.Cmd, error) {
	if s.opts.Dial != nil {
		t, err := s.opts.Dial(ctx, s.spec)
		if err != nil || t != nil {
			return t, nil, err
		}
	}
	switch s.spec.Transport {
	case TransportStdio:
	case TransportHTTP, TransportSSE:
		return nil, nil, fmt.Errorf("%w: %s (this build connects stdio servers only)", ErrUnsupportedTransport, s.spec.Transport)
	default:
		return nil, nil, fmt.Errorf("%w: unknown type %q", ErrUnsupportedTransport, s.spec.Transport)
	}
	procCtx, procCancel := context.WithCancel(context.WithoutCancel(ctx))
	env := sandbox.ChildEnv(s.spec.Env, s.opts.LookupEnv)
	cmd := sandbox.Command(procCtx, s.spec.Command, s.spec.Args, s.opts.Cwd, env)
	stderr := newTailWriter(s.log)
	cmd.Stderr = stderr
	s.mu.Lock()
	s.cmd, s.procCancel, s.stderr = cmd, procCancel, stderr
	s.mu.Unlock()
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: s.opts.Grace + killGraceSlack}, cmd, nil
}

// describeDialError turns a failed start or initialize into a short reason.
func (s *server) describeDialError(err error, cctx context.Context, cmd *exec.Cmd) error {
	var execErr *exec.Error
	switch {
	case errors.As(err, &execErr):
		return fmt.Errorf("cannot start command %q: %w", s.spec.Command, execErr.Err)
	case cmd != nil && cmd.Process == nil:
		return fmt.Errorf("cannot start command %q: %w", s.spec.Command, err)
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: initialize took longer than %s", ErrTimeout, s.opts.ConnectTimeout)
	case cmd != nil && cmd.ProcessState != nil:
		return fmt.Errorf("process exited during initialize (%s)%s", cmd.ProcessState, s.stderr.suffix())
	default:
		return fmt.Errorf("initialize failed: %w%s", err, s.stderr.suffix())
	}
}

// listTools pages through tools/list, bounded by the list timeout.
func (s *server) listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	if res := cs.InitializeResult(); res == nil || res.Capabilities == nil || res.Capabilities.Tools == nil {
		return nil, nil // the server offers no tools
	}
	lctx, cancel := context.WithTimeout(ctx, s.opts.ListTimeout)
	defer cancel()
	var tools []*mcp.Tool
	for t, err := range cs.Tools(lctx, nil) {
		if err != nil {
			if errors.Is(lctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("%w: tools/list took longer than %s", ErrTimeout, s.opts.ListTimeout)
			}
			return nil, fmt.Errorf("tools/list failed: %w", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// watch marks the server failed when its connection ends before Close.
func (s *server) watch(cs *mcp.ClientSession) {
	defer close(s.watchDone)
	err := cs.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.cs != cs {
		return
	}
	reason := "connection lost"
	if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		reason += ": " + err.Error()
	}
	s.state, s.err, s.cs = StateFailed, errors.New(reason+s.stderr.suffix()), nil
	s.log.Warn("MCP server connection lost", "err", s.err)
	if s.procCancel != nil {
		s.procCancel() // reap whatever is left of the group
	}
}

// session returns the live client session, or an error saying why there is none.
func (s *server) session() (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != nil {
		return s.cs, nil
	}
	if s.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotConnected, s.err)
	}
	return nil, ErrNotConnected
}

// call sends tools/call for the tool named name (the server's own name).
func (s *server) call(ctx context.Context, name string, args map[string]any, onUpdate func(gateway.ToolUpdate)) (gateway.Result, error) {
	cs, err := s.session()
	if err != nil {
		return gateway.Result{}, err
	}
	if args == nil {
		args = map[string]any{} // never "arguments": null (TS servers reject it)
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if onUpdate != nil {
		token, fan := s.watchProgress(onUpdate)
		params.SetProgressToken(token)
		defer s.unwatchProgress(token, fan)
	}
	res, err := cs.CallTool(cctx, params)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return gateway.Result{}, context.Cause(ctx)
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			return gateway.Result{}, fmt.Errorf("%w: tools/call took longer than %s", ErrTimeout, s.opts.CallTimeout)
		}
		return gateway.Result{}, err
	}
	return resultFromMCP(res), nil
}

func (s *server) watchProgress(fn func(gateway.ToolUpdate)) (string, *progressFan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextToken++
	token := "acp-agent-" + strconv.Itoa(s.nextToken)
	fan := &progressFan{fn: fn}
	s.progress[token] = fan
	return token, fan
}

func (s *server) unwatchProgress(token string, fan *progressFan) {
	s.mu.Lock()
	delete(s.progress, token)
	s.mu.Unlock()
	fan.mu.Lock()
	fan.fn = nil // progress can arrive after the result; drop it
	fan.mu.Unlock()
}

func (s *server) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	token, _ := req.Params.ProgressToken.(string)
	s.mu.Lock()
	fan := s.progress[token]
	s.mu.Unlock()
	if fan == nil {
		return
	}
	fan.mu.Lock()
	defer fan.mu.Unlock()
	if fan.fn != nil {
		fan.fn(gateway.ToolUpdate{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
	}
}

// close ends the connection and, for a stdio server, the whole process group:
// stdin is closed, then after the grace period SIGTERM, then SIGKILL
// (sandbox.StopGroup). It is idempotent and bounded in time.
func (s *server) close() {
	s.mu.Lock()
	if s.state == StateClosed {
		s.mu.Unlock()
		return
	}
	s.closing = true
	cs, cmd, procCancel, watchDone := s.cs, s.cmd, s.procCancel, s.watchDone
	s.state, s.cs = StateClosed, nil
	s.mu.Unlock()
	start := time.Now()
	defer func() { s.log.Debug("MCP server closed", "elapsed", time.Since(start)) }()

	switch {
	case cmd != nil && cs != nil:
		sandbox.StopGroup(cmd, s.opts.Grace, func() { _ = cs.Close() })
	case cs != nil:
		_ = cs.Close()
	case cmd != nil:
		_ = sandbox.SignalGroup(cmd, syscall.SIGKILL)
	}
	if procCancel != nil {
		procCancel()
	}
	if watchDone != nil {
		<-watchDone
	}
}

// stopSession closes a session that never became the server's live one.
func (s *server) stopSession(cs *mcp.ClientSession) {
	s.mu.Lock()
	cmd, procCancel := s.cmd, s.procCancel
	s.mu.Unlock()
	if cmd != nil {
		sandbox.StopGroup(cmd, s.opts.Grace, func() { _ = cs.Close() })
	} else {
		_ = cs.Close()
	}
	if procCancel != nil {
		procCancel()
	}
}

// status reports the server's state for /servers.
func (s *server) status(bridged int) ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{Name: s.spec.Name, Transport: s.spec.Transport, State: s.state, Err: s.err, Tools: bridged}
	if s.info != nil {
		st.ServerName, st.ServerVersion = s.info.Name, s.info.Version
	}
	return st
}

// rootFor returns the MCP root of the session cwd as a file:// URI, or nil
// when cwd is empty.
//
//lint:ignore SA1019 see server.dial.
func rootFor(cwd string) *mcp.Root {
	if cwd == "" {
		return nil
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(cwd)}
	return &mcp.Root{URI: u.String(), Name: filepath.Base(cwd)} //lint:ignore SA1019 see server.dial.
}
