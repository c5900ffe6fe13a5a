package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
	"github.com/seed02d3eb6b/acp-agent/sandbox/process"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// stdioCommand returns the command of the stdio server spec, confined as
// every stdio server is: process.Command (its own process group, the
// parent-death signal once started with process.Start, exactly the
// environment env builds from the entry's, in cwd; ctx's end kills the
// group), with stderr logged line by line at debug level to log and its
// last lines kept (the returned tailWriter). Dropped environment
// variables are logged as warnings.
func stdioCommand(ctx context.Context, spec ServerSpec, cwd string, env *environ.Policy, log *slog.Logger) (*exec.Cmd, *tailWriter) {
	vars, dropped := env.ChildEnv(spec.Env)
	for _, k := range dropped {
		log.Warn("dropped an environment variable that could inject code into the server; sandbox.allowEnv re-allows it", "key", k)
	}
	cmd := process.Command(ctx, spec.Command, spec.Args, cwd, vars)
	stderr := newTailWriter(log)
	cmd.Stderr = stderr
	return cmd, stderr
}

// StdioOptions configure a [StdioTransport]; the zero value is valid.
type StdioOptions struct {
	// Cwd is the child's working directory (normally the session's).
	// Empty means the current process's.
	Cwd string
	// Env builds the child's environment from the spec's (the baseline
	// allowlist plus the entry's variables, less the injection keys). Nil
	// means the default policy.
	Env *environ.Policy
	// Grace is how long the child gets to exit once Stop has closed its
	// stdin, before SIGTERM and then SIGKILL of its process group. Zero or
	// negative means process.DefaultGrace (5 s).
	Grace time.Duration
	// Logger receives the child's stderr, line by line at debug level, and
	// the environment variables the policy dropped. Nil discards them.
	Logger *slog.Logger
}

// StdioTransport is a go-sdk mcp.Transport that starts one stdio MCP
// server exactly as a [Manager] starts its stdio servers (process.Command
// and process.Start: its own process group, the parent-death signal, the
// sanitized environment of [StdioOptions.Env], the cwd, stderr logged),
// for an MCP client that is not a Manager's: acp-agent connect relays the
// server's messages to a remote gateway's client (MCP-over-ACP). Connect
// starts the child and returns the connection on its stdin and stdout
// (newline-delimited JSON); no MCP message is sent. [StdioTransport.Stop]
// ends the child and everything it started. Create it with
// [NewStdioTransport]; its methods are safe for concurrent use.
type StdioTransport struct {
	spec  ServerSpec
	grace time.Duration
	log   *slog.Logger
	// st starts the child; cancel ends procCtx, which kills the child's
	// group (exec.Cmd.Cancel) if it is still running.
	st     *stdioTransport
	cancel context.CancelFunc

	stopOnce sync.Once     // Stop's work
	stopDone chan struct{} // closed when Stop's work is done

	// mu guards the fields below.
	mu        sync.Mutex
	connected bool             // Connect was called
	stopped   bool             // Stop was called
	proc      *process.Process // the child, once started
	conn      mcp.Connection   // what Connect returned, once it has
}

// NewStdioTransport returns the transport of the stdio server spec, which
// must be a valid stdio spec ([ServerSpec.Validate]; else the error says
// why). opts may be nil (every default); it is copied. Nothing starts
// before Connect.
func NewStdioTransport(spec ServerSpec, opts *StdioOptions) (*StdioTransport, error) {
	if spec.Transport != TransportStdio {
		return nil, fmt.Errorf("%w: NewStdioTransport takes a stdio server, not %q", ErrUnsupportedTransport, spec.Transport)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	var o StdioOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	log := o.Logger.With("server", spec.Name)
	procCtx, cancel := context.WithCancel(context.Background())
	cmd, _ := stdioCommand(procCtx, spec, o.Cwd, o.Env, log)
	t := &StdioTransport{spec: spec, grace: o.Grace, log: log, cancel: cancel, stopDone: make(chan struct{})}
	t.st = &stdioTransport{cmd: cmd, out: &stdoutWatch{}, started: func(p *process.Process) {
		t.mu.Lock()
		t.proc = p
		t.mu.Unlock()
	}}
	return t, nil
}

// Connect implements mcp.Transport: it starts the child (an error such as
// `cannot start command "x": executable file not found in $PATH` when it
// cannot) and returns the connection on its pipes. Closing the connection
// closes the child's stdin and never waits for the child; Stop ends it. It
// may be called once, and not after Stop.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	t.mu.Lock()
	switch {
	case t.stopped:
		t.mu.Unlock()
		return nil, fmt.Errorf("stdio server %q: stopped before it was started", t.spec.Name)
	case t.connected:
		t.mu.Unlock()
		return nil, fmt.Errorf("stdio server %q: Connect was called already", t.spec.Name)
	}
	t.connected = true
	t.mu.Unlock()
	conn, err := t.st.Connect(ctx)
	if err != nil {
		t.cancel()
		var execErr *exec.Error
		if errors.As(err, &execErr) {
			err = execErr.Err
		}
		return nil, urlpolicy.RedactError(fmt.Errorf("cannot start command %q: %w", t.spec.Command, err))
	}
	t.st.out.forgetHead() // it explains a failed initialize, which is not ours to see
	t.mu.Lock()
	stopped := t.stopped
	if !stopped {
		t.conn = conn
	}
	t.mu.Unlock()
	if stopped { // Stop ran while the child started: end it now
		_ = conn.Close()
		t.st.proc.Kill()
		return nil, fmt.Errorf("stdio server %q: stopped while it was starting", t.spec.Name)
	}
	t.log.Debug("stdio server started", "pid", t.st.proc.Cmd.Process.Pid)
	return conn, nil
}

// Pid returns the child's process id once Connect has started it, else 0.
func (t *StdioTransport) Pid() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.proc == nil || t.proc.Cmd.Process == nil {
		return 0
	}
	return t.proc.Cmd.Process.Pid
}

// Stop ends the child and everything it started (process.StopGroup): the
// connection closes (the child's stdin: the MCP stdio shutdown signal),
// and if the child has not exited after the grace period its process group
// gets SIGTERM, then SIGKILL, and what is left of its descendants is
// killed. It returns when that is done: within about the grace period plus
// two seconds. It is idempotent and safe for concurrent use (a second call
// waits for the first); before Connect it only makes Connect fail.
func (t *StdioTransport) Stop() {
	t.stopOnce.Do(func() {
		defer close(t.stopDone)
		t.mu.Lock()
		t.stopped = true
		proc, conn := t.proc, t.conn
		t.mu.Unlock()
		switch {
		case proc != nil && conn != nil:
			process.StopGroup(proc, t.grace, func() { _ = conn.Close() })
		case proc != nil: // still starting: Connect ends it; the group is killed below too
			proc.Kill()
		}
		t.cancel()
		t.log.Debug("stdio server stopped")
	})
	<-t.stopDone
}
