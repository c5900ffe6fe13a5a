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

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/defaults"
	"github.com/seed02d3eb6b/acp-agent/internal/warmstack"
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

// schemas holds ask_agent's input and output schemas, resolved once per
// process.
var schemas = mcp.NewSchemaCache()

// inputSchema is ask_agent's input schema: Input's, with the sessionKey
// rules (CheckKey) as its length and pattern.
var inputSchema = func() *jsonschema.Schema {
	s, err := jsonschema.For[Input](nil)
	if err != nil {
		panic(err)
	}
	key := s.Properties["sessionKey"]
	key.MinLength, key.MaxLength, key.Pattern = new(1), new(MaxKeyLength), keyPattern
	return s
}()

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
	defaults.Implementation(&opts.Name, &opts.Version, &opts.Logger)
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
	sv := &conversations{
		opts: opts, core: core, log: opts.Logger,
		base: base, stop: stop, turns: warmstack.NewPerCPU(),
		convs: make(map[string]*conv), parked: make(map[string]*parkedAsk),
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		SchemaCache:  schemas,
		Logger:       opts.Logger.With("component", "mcp-server"),
		Instructions: instructions,
		Capabilities: capabilities,
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolName,
		Title:       "Ask acp-agent",
		Description: toolDescription,
		InputSchema: inputSchema,
	}, sv.ask)
	sv.wg.Go(sv.sweep)
	return srv, sv.shutdown
}

// instructions are the server's initialize instructions.
const instructions = "acp-agent is a coding agent with its own model, tools and MCP servers. " +
	"Call ask_agent with a message to hand it a task; pass the sessionKey of a result, or a key of your own, to continue that conversation."

// toolDescription is ask_agent's description.
const toolDescription = "Hand a task or a question to acp-agent, a coding agent with its own model, tools and MCP servers, and get its answer. " +
	"Without sessionKey each call starts a new conversation under a fresh unguessable key, returned in the result. " +
	"With a sessionKey (the one of an earlier result, or your own, such as user-123-conversation: 1 to 128 visible ASCII characters) the call continues that conversation with its history; " +
	"the first call with a key of your own starts it. Your keys are yours: another client (over HTTP, another bearer token) with the same key has its own conversation. " +
	"The slash commands /help, /tools, /call <tool> {json arguments} and /servers work without a model."

// conversations is the state behind New's *mcp.Server, the ask_agent tool:
// its live conversations (each an open session of the core, by stored
// session ID) and the runs parked on an input request, with the shutdown
// that ends them.
type conversations struct {
	opts Options
	core *session.Core
	log  *slog.Logger

	base context.Context // parent of every turn's context; cancelled by shutdown
	stop context.CancelFunc
	wg   sync.WaitGroup // the sweeper and every run's goroutine
	// turns are the goroutines runs go on, kept between turns so that a
	// turn finds a grown stack (internal/warmstack): at most two idle per
	// CPU, each for a minute.
	turns *warmstack.Pool
	once  sync.Once // shutdown

	// mu guards the fields below; it is never held across I/O.
	mu     sync.Mutex
	convs  map[string]*conv      // live conversations by stored session ID
	parked map[string]*parkedAsk // runs waiting for an input response, by requestState
	closed bool                  // shutdown has begun
}

// conv is one live conversation: an open session of the core, with its use
// count and last use for the idle sweep.
type conv struct {
	id     string        // the stored session's ID (storedID)
	key    string        // its sessionKey
	opened chan struct{} // closed once s or err is set
	s      *session.Session
	err    error
	busy   int       // calls and runs using it; guarded by conversations.mu
	last   time.Time // when busy last dropped to 0; guarded by conversations.mu
	ending chan struct{}
}

// errClosed is the error of a call that arrives during shutdown.
var errClosed = errors.New("ask_agent: the server is shutting down")

// acquire returns the live conversation stored under id, for the
// sessionKey key, and marks it busy: release it once done. A conversation
// that is not live is opened: created when fresh (a key the agent has just
// issued), else reopened from the store (only a conversation the server
// started, in its directory: see reopen), or created under id on the
// first use of the key. Concurrent calls for one id share one open.
func (sv *conversations) acquire(ctx context.Context, id, key string, fresh bool) (*conv, error) {
	for {
		sv.mu.Lock()
		if sv.closed {
			sv.mu.Unlock()
			return nil, errClosed
		}
		c := sv.convs[id]
		if c == nil {
			c = &conv{id: id, key: key, opened: make(chan struct{}), busy: 1}
			sv.convs[id] = c
			sv.mu.Unlock()
			sv.open(ctx, c, key, fresh)
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

// open opens the session of c (see acquire), then closes c.opened. On
// failure c leaves the live conversations.
func (sv *conversations) open(ctx context.Context, c *conv, key string, fresh bool) {
	defer close(c.opened)
	s, created, err := sv.openSession(ctx, c.id, key, fresh)
	var refused refusal
	switch {
	case errors.As(err, &refused):
		c.err = err // it names the key and says why
	case err != nil && fresh:
		c.err = fmt.Errorf("ask_agent: opening a new conversation: %w", err)
	case err != nil && created:
		c.err = fmt.Errorf("ask_agent: sessionKey %q: starting a conversation under it: %w", key, err)
	case err != nil:
		c.err = fmt.Errorf("ask_agent: sessionKey %q: reopening the conversation: %w", key, err)
	}
	sv.mu.Lock()
	closed := sv.closed
	if c.err == nil && closed {
		c.err = errClosed
	}
	if c.err != nil && sv.convs[c.id] == c {
		delete(sv.convs, c.id)
	}
	c.s = s
	sv.mu.Unlock()
	if s != nil && closed {
		s.End()
	}
	switch {
	case errors.As(c.err, &refused):
		sv.log.Warn("refused to continue a stored session", "sessionKey", key, "session", c.id, "cause", c.err)
	case c.err != nil:
	case fresh:
		sv.log.Info("conversation started", "sessionKey", key, "session", c.id)
	case created:
		sv.log.Info("conversation started under the client's sessionKey", "sessionKey", key, "session", c.id)
	default:
		sv.log.Info("conversation reopened from the store", "sessionKey", key, "session", c.id)
	}
}

// openSession opens the stored session id (reopen: refused when another
// front end's, or another directory's), or creates it (created) when fresh
// or when the store has none, under the gateway key that marks it the
// server's (gatewayKey). A create that fails because another process
// created id meanwhile reopens it.
func (sv *conversations) openSession(ctx context.Context, id, key string, fresh bool) (s *session.Session, created bool, err error) {
	if !fresh {
		s, err = sv.reopen(ctx, id, key)
		if !errors.Is(err, store.ErrNotFound) {
			return s, false, err
		}
	}
	s, err = sv.core.Open(ctx, session.OpenRequest{ID: id, Create: true, Key: gatewayKey(id), Cwd: sv.opts.Cwd})
	if err != nil && !fresh && !errors.Is(err, session.ErrInvalid) && ctx.Err() == nil {
		var r refusal
		if s, err2 := sv.reopen(ctx, id, key); err2 == nil || errors.As(err2, &r) {
			return s, false, err2
		}
	}
	return s, true, err
}

// release marks one use of c done.
func (sv *conversations) release(c *conv) {
	sv.mu.Lock()
	c.busy--
	if c.busy == 0 {
		c.last = time.Now()
	}
	sv.mu.Unlock()
}

// forget drops c from the live conversations (its session has ended under
// it), so the next call reopens it.
func (sv *conversations) forget(c *conv) {
	sv.mu.Lock()
	if sv.convs[c.id] == c {
		delete(sv.convs, c.id)
	}
	sv.mu.Unlock()
}

// sweep ends idle conversations and expired parked runs until shutdown.
func (sv *conversations) sweep() {
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
func (sv *conversations) endIdle(now time.Time) {
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
		sv.log.Info("no answer to a permission question: cancelling the turn", "sessionKey", p.r.key, "tool", p.q.call.Name)
		p.r.cancel()
	}
	for _, c := range idle {
		sv.log.Info("ending an idle conversation (the next call reopens it)", "sessionKey", c.key, "session", c.id, "idle", now.Sub(c.last).Round(time.Second))
		c.s.End()
		sv.mu.Lock()
		if sv.convs[c.id] == c {
			delete(sv.convs, c.id)
		}
		close(c.ending)
		sv.mu.Unlock()
	}
}

// shutdown cancels every turn, ends every live conversation and waits for
// the sweeper and the runs.
func (sv *conversations) shutdown() {
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
		sv.turns.Close()
		sv.log.Info("MCP server stopped", "conversations", len(convs))
	})
}

// errNoModel is the error of a message that needs a model when none is
// configured.
var errNoModel = errors.New("ask_agent: no model is configured, so the agent cannot answer a message: " +
	"start acp-agent mcp-server with --model provider:name (or the config file's \"model\"), " +
	"or send a slash command: /help, /tools, /call <tool> {json arguments}, /servers")

// blank reports whether s is empty or white space.
func blank(s string) bool { return strings.TrimSpace(s) == "" }
