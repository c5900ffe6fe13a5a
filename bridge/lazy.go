package bridge

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A lazy in-process server (ServerSpec.ToolsKey) is StateConnected with no
// client session while it idles: its tools come from Options.ToolLists, and
// the first call of one of them connects it (wake). A session that never
// calls one costs no connection: no go-sdk read loops, decoder buffers,
// server-side session or per-session copy of the tool list. Once the
// last request under way ends (client.use) and restAfter passes with no
// other, the connection closes again (rest): an idle session holds none,
// whether or not it called the tools, while a session calling them turn
// after turn keeps one (connecting costs a handshake per call); the
// server NewServer built is kept for the next call.

// ToolLists holds the tool lists of lazy in-process servers
// (ServerSpec.ToolsKey) by key, for every Manager that shares it
// (Options.ToolLists): a key is listed once, by the first Manager that needs
// it, while the others wait for that list. A failed list is not kept: the
// next Manager lists again. The zero value is ready to use; a ToolLists is
// safe for concurrent use and must not be copied after first use.
type ToolLists struct {
	mu    sync.Mutex
	lists map[string]*toolList // key → its list, or the listing in progress
}

// toolList is one key's list; its fields are set before done is closed and
// never change after.
type toolList struct {
	done      chan struct{}
	tools     []*mcp.Tool         // shared by every server of the key: read-only
	info      *mcp.Implementation // the serverInfo of the listing connection
	err       error
	abandoned bool // err is the lister's context ending, not the server's failure
}

// listFunc lists one server's tools and serverInfo.
type listFunc func(context.Context) ([]*mcp.Tool, *mcp.Implementation, error)

// get returns the list of key, made by list when no list of key is held or
// in progress. A waiter whose lister gave up (its session closed, its open
// was cancelled) lists itself. A nil l lists every time.
func (l *ToolLists) get(ctx context.Context, key string, list listFunc) ([]*mcp.Tool, *mcp.Implementation, error) {
	if l == nil {
		return list(ctx)
	}
	for {
		l.mu.Lock()
		if l.lists == nil {
			l.lists = make(map[string]*toolList)
		}
		e, waiting := l.lists[key]
		if !waiting {
			e = &toolList{done: make(chan struct{})}
			l.lists[key] = e
		}
		l.mu.Unlock()
		if !waiting {
			e.tools, e.info, e.err = list(ctx)
			if e.err != nil {
				e.abandoned = ctx.Err() != nil
				l.mu.Lock()
				delete(l.lists, key)
				l.mu.Unlock()
			}
			close(e.done)
			return e.tools, e.info, e.err
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, nil, context.Cause(ctx)
		}
		if e.err == nil || !e.abandoned {
			return e.tools, e.info, e.err
		}
	}
}

// lazy reports whether s connects on first use (ServerSpec.ToolsKey).
func (s *client) lazy() bool {
	return s.spec.Transport == TransportInProcess && s.spec.ToolsKey != ""
}

// connectIdle is connect for a lazy server: it takes the server's tools from
// Options.ToolLists (listing them through a short-lived connection when the
// key is new) and leaves the server StateConnected with no connection, or
// StateFailed when listing failed. It settles the server.
func (s *client) connectIdle(ctx context.Context, initial bool) {
	lctx, cancel := s.life.Bind(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	tools, info, err := s.opts.ToolLists.get(lctx, s.spec.ToolsKey, s.listOnce)
	tell := !initial
	defer func() {
		s.conn.settle()
		if tell && s.onStateChanged != nil {
			s.onStateChanged(s)
		}
	}()
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	switch {
	case s.conn.closing:
		tell = false
	case err != nil:
		s.conn.state, s.conn.err = StateFailed, err
		s.log.Warn("MCP server failed", "err", err)
	default:
		s.conn.state, s.conn.info, s.conn.err = StateConnected, info, nil
		s.tools.set(tools)
		s.log.Debug("in-process MCP server ready; it connects on first use", "tools", len(tools))
	}
}

// listOnce connects the server, lists its tools and closes the connection.
func (s *client) listOnce(ctx context.Context) ([]*mcp.Tool, *mcp.Implementation, error) {
	cs, err := s.dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	tools, err := s.listTools(ctx, cs)
	info := cs.InitializeResult().ServerInfo
	s.abandon(cs) // ends the server session too (procCancel)
	s.conn.mu.Lock()
	s.conn.procCancel = nil
	s.conn.mu.Unlock()
	if s.lazy() {
		s.built.drop() // an idle session holds no server either
	}
	return tools, info, err
}

// wake returns the connection of a lazy server, connecting it when it has
// none (the first call of one of its tools, or the first after its
// connection ended). Concurrent callers share one connect. A failed connect
// is returned, and leaves the server as it was: the next call tries again.
func (s *client) wake(ctx context.Context) (*mcp.ClientSession, error) {
	s.conn.mu.Lock()
	cs := s.conn.cs
	s.conn.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	s.conn.redial.Lock()
	defer s.conn.redial.Unlock()
	s.conn.mu.Lock()
	switch {
	case s.conn.closing:
		s.conn.mu.Unlock()
		return nil, ErrNotConnected
	case s.conn.cs != nil: // another call connected it
		cs := s.conn.cs
		s.conn.mu.Unlock()
		return cs, nil
	case s.conn.state != StateConnected:
		err := s.conn.err
		s.conn.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrNotConnected, err)
	}
	s.conn.mu.Unlock()

	s.log.Debug("connecting the in-process MCP server on first use")
	dctx, cancel := s.life.Bind(ctx) // closing the server ends the connect
	defer cancel()
	cs, err := s.dial(dctx)
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	if s.conn.closing {
		if cs != nil {
			s.conn.mu.Unlock()
			s.stopSession(cs)
			s.conn.mu.Lock()
		}
		return nil, ErrNotConnected
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		s.log.Warn("connecting the in-process MCP server on first use failed; the next call tries again", "err", err)
		return nil, fmt.Errorf("connecting on first use failed (the next call tries again): %w", err)
	}
	s.conn.cs = cs
	s.conn.watchers.Go(func() { s.watch(cs) })
	return cs, nil
}

// restAfter is how long a lazy server's connection stays once its last
// request ended: the calls of a model's next steps, seconds apart, find it
// connected; an idle session's is gone soon after.
const restAfter = 2 * time.Second

// use marks a request of a lazy server under way (a tool call, a prompt, a
// resource read) until the returned func is called; restAfter after the
// last one ends, the connection closes (rest). Concurrent requests share
// one connection. For any other server it does nothing.
func (s *client) use() (done func()) {
	if !s.lazy() {
		return func() {}
	}
	s.conn.mu.Lock()
	s.conn.users++
	if s.conn.restTimer != nil {
		s.conn.restTimer.Stop() // a rest that fires anyway finds a user and returns
	}
	s.conn.mu.Unlock()
	return s.unuse
}

// unuse ends a request of use; the last one under way schedules rest.
func (s *client) unuse() {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	s.conn.users--
	if s.conn.users > 0 || s.conn.closing || s.conn.cs == nil {
		return
	}
	if s.conn.restTimer == nil {
		s.conn.restTimer = time.AfterFunc(restAfter, s.rest)
	} else {
		s.conn.restTimer.Reset(restAfter)
	}
}

// rest closes the lazy server's connection, unless a request is under way
// again: the client session, then the in-process server session; the
// server idles again, StateConnected with no connection, until the next
// request connects it (wake).
func (s *client) rest() {
	s.conn.mu.Lock()
	if s.conn.users > 0 || s.conn.closing || s.conn.cs == nil {
		s.conn.mu.Unlock()
		return
	}
	cs, stop := s.conn.cs, s.conn.procCancel
	s.conn.cs, s.conn.procCancel = nil, nil
	s.conn.mu.Unlock()
	_ = cs.Close() // its watcher sees another connection (none) and returns
	if stop != nil {
		stop()
	}
}

// builtServer is the server ServerSpec.NewServer built for a server, kept
// while the server's connections use it. The zero value holds none.
type builtServer struct {
	// mu guards srv; it is held while NewServer runs, and never with
	// another lock of the bridge.
	mu  sync.Mutex
	srv *mcp.Server // nil until built, and again after drop
}

// get returns the server newServer built, building it on the first call;
// nil when newServer is nil or returned nil.
func (b *builtServer) get(newServer func() *mcp.Server) *mcp.Server {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil && newServer != nil {
		b.srv = newServer()
	}
	return b.srv
}

// drop forgets the built server: the next get builds another.
func (b *builtServer) drop() {
	b.mu.Lock()
	b.srv = nil
	b.mu.Unlock()
}
