package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// ToolName is the name of the server's one tool.
const ToolName = "ask_agent"

// DefaultIdleTimeout is Options.IdleTimeout when it is zero.
const DefaultIdleTimeout = 10 * time.Minute

// Options configure New.
type Options struct {
	// Name and Version are the serverInfo of initialize. Empty means
	// "acp-agent" and "dev".
	Name, Version string
	// Cwd is the working directory of every conversation, an absolute path
	// to a directory. Empty means the process's.
	Cwd string
	// Logger receives the server's logs. Nil discards them.
	Logger *slog.Logger
	// IdleTimeout ends a live conversation unused this long: its turn-less
	// session is ended (its MCP servers closed) and reopened from the store
	// on its next call. Zero means DefaultIdleTimeout; the check runs every
	// quarter of it.
	IdleTimeout time.Duration
}

// schemas holds ask_agent's input and output schemas, inferred from Input
// and Output once per process.
var schemas = mcp.NewSchemaCache()

// New returns the MCP server exposing ask_agent over core (the gateway:
// model, permissions policy, built-in tools; default servers, in-process
// servers and store: session.NewCore), as acp.New does, and a
// function that ends every live conversation and waits for their turns and
// the server's background work (call it once serving has stopped; it is
// idempotent). The server may be served over any number of connections
// (mcp.StdioTransport, mcp.NewStreamableHTTPHandler): conversations are
// shared by key, not by connection. The caller still owns core: call
// core.Shutdown after the shutdown func.
func New(core *session.Core, o *Options) (*mcp.Server, func()) {
	if core == nil {
		panic("mcpserver.New: core is nil")
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Name == "" {
		opts.Name = "acp-agent"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			opts.Logger.Warn("the working directory is unknown: conversations start in /", "err", err)
			wd = "/"
		}
		opts.Cwd = wd
	}
	// base is the root of the turns the server runs in goroutines it owns:
	// they outlive the ask_agent call that started them (a permission
	// question waits across a retried call), and New has no caller's
	// context to give; shutdown cancels it.
	base, stop := context.WithCancel(context.Background())
	sv := &server{
		opts: opts, core: core, log: opts.Logger,
		base: base, stop: stop,
		convs: make(map[string]*conv), parked: make(map[string]*parkedAsk),
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		SchemaCache:  schemas,
		Logger:       opts.Logger.With("component", "mcp-server"),
		Instructions: instructions,
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolName,
		Title:       "Ask acp-agent",
		Description: toolDescription,
	}, sv.ask)
	sv.wg.Go(sv.sweep)
	return srv, sv.shutdown
}

// instructions are the server's initialize instructions.
const instructions = "acp-agent is a coding agent with its own model, tools and MCP servers. " +
	"Call ask_agent with a message to hand it a task; pass the sessionKey of a result to continue that conversation."

// toolDescription is ask_agent's description.
const toolDescription = "Hand a task or a question to acp-agent, a coding agent with its own model, tools and MCP servers, and get its answer. " +
	"Without sessionKey each call starts a new conversation; pass the sessionKey of an earlier result to continue that conversation with its history. " +
	"The slash commands /help, /tools, /call <tool> {json arguments} and /servers work without a model."

// server is the state behind New's *mcp.Server.
type server struct {
	opts Options
	core *session.Core
	log  *slog.Logger

	base context.Context // parent of every turn's context; cancelled by shutdown
	stop context.CancelFunc
	wg   sync.WaitGroup // the sweeper and every run's goroutine
	once sync.Once      // shutdown

	// mu guards the fields below; it is never held across I/O.
	mu     sync.Mutex
	convs  map[string]*conv      // live conversations by key (session ID)
	parked map[string]*parkedAsk // runs waiting for an input response, by requestState
	closed bool                  // shutdown has begun
}

// conv is one live conversation: an open session of the core, with its use
// count and last use for the idle sweep.
type conv struct {
	key    string
	opened chan struct{} // closed once s or err is set
	s      *session.Session
	err    error
	busy   int       // calls and runs using it; guarded by server.mu
	last   time.Time // when busy last dropped to 0; guarded by server.mu
	ending chan struct{}
}

// errClosed is the error of a call that arrives during shutdown.
var errClosed = errors.New("ask_agent: the server is shutting down")

// acquire returns the live conversation of key, opening it when it is not
// live (a new one when key is ""), and marks it busy: release it once done.
// Concurrent calls for one key share one open.
func (sv *server) acquire(ctx context.Context, key string) (*conv, error) {
	if key == "" {
		s, err := sv.core.Open(ctx, session.OpenRequest{Cwd: sv.opts.Cwd})
		if err != nil {
			return nil, fmt.Errorf("ask_agent: opening a new conversation: %w", err)
		}
		c := &conv{key: s.ID(), opened: make(chan struct{}), s: s, busy: 1}
		close(c.opened)
		sv.mu.Lock()
		closed := sv.closed
		if !closed {
			sv.convs[c.key] = c
		}
		sv.mu.Unlock()
		if closed {
			s.End()
			return nil, errClosed
		}
		sv.log.Info("conversation started", "sessionKey", c.key)
		return c, nil
	}
	for {
		sv.mu.Lock()
		if sv.closed {
			sv.mu.Unlock()
			return nil, errClosed
		}
		c := sv.convs[key]
		if c == nil {
			c = &conv{key: key, opened: make(chan struct{}), busy: 1}
			sv.convs[key] = c
			sv.mu.Unlock()
			sv.reopen(ctx, c)
			if c.err != nil {
				return nil, c.err
			}
			return c, nil
		}
		if c.ending != nil {
			ending := c.ending
			sv.mu.Unlock()
			select {
			case <-ending:
				continue // reopen it
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		c.busy++
		sv.mu.Unlock()
		select {
		case <-c.opened:
		case <-ctx.Done():
			sv.release(c)
			return nil, context.Cause(ctx)
		}
		if c.err != nil {
			sv.release(c)
			return nil, c.err
		}
		return c, nil
	}
}

// reopen opens the stored session c.key into c, then closes c.opened. On
// failure c leaves the live conversations.
func (sv *server) reopen(ctx context.Context, c *conv) {
	defer close(c.opened)
	s, err := sv.core.Open(ctx, session.OpenRequest{ID: c.key, Cwd: sv.opts.Cwd})
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.err = fmt.Errorf("ask_agent: sessionKey %q: no conversation has this key (use the sessionKey of an earlier ask_agent result, or leave it out to start a new conversation)", c.key)
	case err != nil:
		c.err = fmt.Errorf("ask_agent: sessionKey %q: reopening the conversation: %w", c.key, err)
	}
	sv.mu.Lock()
	closed := sv.closed
	if c.err == nil && closed {
		c.err = errClosed
	}
	if c.err != nil && sv.convs[c.key] == c {
		delete(sv.convs, c.key)
	}
	c.s = s
	sv.mu.Unlock()
	if s != nil && closed {
		s.End()
	}
	if c.err == nil {
		sv.log.Info("conversation reopened from the store", "sessionKey", c.key)
	}
}

// release marks one use of c done.
func (sv *server) release(c *conv) {
	sv.mu.Lock()
	c.busy--
	if c.busy == 0 {
		c.last = time.Now()
	}
	sv.mu.Unlock()
}

// forget drops c from the live conversations (its session has ended under
// it), so the next call reopens it.
func (sv *server) forget(c *conv) {
	sv.mu.Lock()
	if sv.convs[c.key] == c {
		delete(sv.convs, c.key)
	}
	sv.mu.Unlock()
}

// sweep ends idle conversations and expired parked runs until shutdown.
func (sv *server) sweep() {
	every := max(sv.opts.IdleTimeout/4, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-sv.base.Done():
			return
		case now := <-t.C:
			sv.endIdle(now)
		}
	}
}

// endIdle ends the conversations unused for IdleTimeout at now, and cancels
// the runs parked that long.
func (sv *server) endIdle(now time.Time) {
	var idle []*conv
	var expired []*parkedAsk
	sv.mu.Lock()
	for _, c := range sv.convs {
		if c.busy == 0 && c.ending == nil && c.s != nil && now.Sub(c.last) >= sv.opts.IdleTimeout {
			c.ending = make(chan struct{})
			idle = append(idle, c)
		}
	}
	for state, p := range sv.parked {
		if now.Sub(p.since) >= sv.opts.IdleTimeout {
			delete(sv.parked, state)
			expired = append(expired, p)
		}
	}
	sv.mu.Unlock()
	for _, p := range expired {
		sv.log.Info("no answer to a permission question: cancelling the turn", "sessionKey", p.r.c.key, "tool", p.q.call.Name)
		p.r.cancel()
	}
	for _, c := range idle {
		sv.log.Info("ending an idle conversation (the next call reopens it)", "sessionKey", c.key, "idle", now.Sub(c.last).Round(time.Second))
		c.s.End()
		sv.mu.Lock()
		if sv.convs[c.key] == c {
			delete(sv.convs, c.key)
		}
		close(c.ending)
		sv.mu.Unlock()
	}
}

// shutdown cancels every turn, ends every live conversation and waits for
// the sweeper and the runs.
func (sv *server) shutdown() {
	sv.once.Do(func() {
		sv.mu.Lock()
		sv.closed = true
		convs := make([]*conv, 0, len(sv.convs))
		for _, c := range sv.convs {
			convs = append(convs, c)
		}
		clear(sv.parked)
		sv.mu.Unlock()
		sv.stop()
		var wg sync.WaitGroup
		for _, c := range convs {
			wg.Go(func() {
				<-c.opened
				if c.s != nil {
					c.s.End()
				}
			})
		}
		wg.Wait()
		sv.wg.Wait()
		sv.log.Info("MCP server stopped", "conversations", len(convs))
	})
}

// isCommand reports whether text starts with a slash command of the agent
// (runner.Commands): those run without a model.
func isCommand(text string) bool {
	_, _, ok := runner.ParseCommand(text)
	return ok
}

// errNoModel is the error of a message that needs a model when none is
// configured.
var errNoModel = errors.New("ask_agent: no model is configured, so the agent cannot answer a message: " +
	"start acp-agent mcp-server with --model provider:name (or the config file's \"model\"), " +
	"or send a slash command: /help, /tools, /call <tool> {json arguments}, /servers")

// blank reports whether s is empty or white space.
func blank(s string) bool { return strings.TrimSpace(s) == "" }
