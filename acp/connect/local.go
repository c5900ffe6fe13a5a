package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
)

// The editor's stdio servers run here, on the editor's machine, and reach
// the gateway as MCP-over-ACP servers in acp-go-sdk v0.13's draft binding
// (the one the agent speaks for entries naming "id"): the gateway sends
// mcp/connect {acpId}, the proxy starts the entry's command
// (bridge.StdioTransport: confined as the agent starts stdio servers) and
// answers a fresh connectionId; then mcp/message {connectionId, method,
// params} carries MCP both ways, each jsonrpc.Message relayed between the
// child's connection and an mcpacp.Conn; mcp/disconnect, the Link's end
// and the proxy's end close the relay and stop the child's process group.
//
// These messages are the proxy's own, never the editor's: an mcp/connect
// whose acpId is a local entry's (sessions.go), an mcp/message or
// mcp/disconnect whose connectionId starts with its prefix. The editor's own
// acp entries use ids of its own, so their mcp/* pass through to it.

// localServers are the local servers one Link carries: a Mux, the second
// acp-go-sdk connection on the Link that serves mcp/connect, mcp/message
// and mcp/disconnect and sends the children's requests (ids
// "<prefix>mcp-<n>"), the Router of its mcp/message, and the relays by
// connectionId.
type localServers struct {
	p      *Proxy
	mux    *mcpacp.Mux
	router *mcpacp.Router
	log    *slog.Logger

	// handlers counts the Mux's handler calls under way; one starts only
	// while closed is false (under mu), so wait can wait for them all.
	// stops counts the relays closing in the background; only handlers
	// and close start one, so once closed and the handlers are done none
	// starts (wait).
	handlers, stops sync.WaitGroup

	// mu guards relays, next and closed.
	mu     sync.Mutex
	relays map[string]*relay
	next   int
	closed bool
}

// newLocalServers returns the local servers of l, whose Mux writes on l.
func (p *Proxy) newLocalServers(l *link) *localServers {
	s := &localServers{p: p, relays: make(map[string]*relay), log: p.log.With("component", "local-servers", "link", l.gen)}
	s.router = mcpacp.NewRouter(s.log)
	s.mux = mcpacp.NewMux(s.handle, []string{acpsdk.ClientMethodMcpConnect, acpsdk.ClientMethodMcpDisconnect, mcpacp.MethodMessage},
		func(b []byte) error { return l.write(b) }, &mcpacp.MuxOptions{Logger: s.log, IDPrefix: p.muxPrefix()})
	s.router.SetConn(s.mux.Conn())
	p.lmu.Lock()
	p.locals = append(p.locals, s)
	p.lmu.Unlock()
	return s
}

// wait waits, once close has begun, for the handlers under way and then
// for every relay's stop.
func (s *localServers) wait() {
	s.handlers.Wait()
	s.stops.Wait()
}

// deliver hands one message of the gateway that is the local servers' to
// the Mux: it returns once the Mux has read it.
func (s *localServers) deliver(raw []byte) {
	if err := s.mux.Deliver(raw); err != nil {
		s.log.Debug("message for the local servers dropped", "err", err)
	}
}

// handle is the Mux's handler: mcp/connect, mcp/disconnect, mcp/message.
func (s *localServers) handle(ctx context.Context, method string, params json.RawMessage) (any, *acpsdk.RequestError) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, &acpsdk.RequestError{Code: codeInternal, Message: "the connection to the gateway is closing"}
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	switch method {
	case acpsdk.ClientMethodMcpConnect:
		return s.connect(ctx, params)
	case acpsdk.ClientMethodMcpDisconnect:
		var p acpsdk.UnstableDisconnectMcpRequest
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, acpsdk.NewInvalidParams(map[string]any{"error": "mcp/disconnect params: " + err.Error()})
		}
		s.disconnect(string(p.ConnectionId))
		return acpsdk.UnstableDisconnectMcpResponse{}, nil
	}
	return s.router.Handle(ctx, method, params)
}

// connect serves mcp/connect: it starts the local entry's command and
// relays its connection under a fresh connectionId. A command that cannot
// start is an error naming it.
func (s *localServers) connect(ctx context.Context, params json.RawMessage) (any, *acpsdk.RequestError) {
	var p acpsdk.UnstableConnectMcpRequest
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": "mcp/connect params: " + err.Error()})
	}
	e := s.p.entry(string(p.AcpId))
	if e == nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("mcp/connect: no local MCP server has acpId %q (its session was closed)", p.AcpId)})
	}
	t, err := bridge.NewStdioTransport(e.spec, &bridge.StdioOptions{Cwd: e.cwd, Env: s.p.opts.Env, Grace: s.p.opts.Grace, Logger: s.log})
	if err != nil {
		return nil, &acpsdk.RequestError{Code: codeInternal, Message: fmt.Sprintf("local MCP server %q: %v", e.spec.Name, err)}
	}
	local, err := t.Connect(ctx)
	if err != nil {
		return nil, &acpsdk.RequestError{Code: codeInternal, Message: fmt.Sprintf("local MCP server %q on the editor's machine: %v", e.spec.Name, err)}
	}
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("%sconn-%d", s.p.prefix, s.next)
	closed := s.closed
	s.mu.Unlock()
	var remote *mcpacp.Conn
	if !closed {
		remote, err = s.router.Open(ctx, id, e.spec.Name, nil)
	}
	if closed || err != nil {
		t.Stop()
		return nil, &acpsdk.RequestError{Code: codeInternal, Message: fmt.Sprintf("local MCP server %q: the connection to the gateway is closing", e.spec.Name)}
	}
	r := newRelay(id, e, t, local, remote, s.log.With("server", e.spec.Name, "connectionId", id, "pid", t.Pid()))
	s.mu.Lock()
	if s.closed { // the Link ended while the child started
		s.mu.Unlock()
		r.close()
		return nil, &acpsdk.RequestError{Code: codeInternal, Message: fmt.Sprintf("local MCP server %q: the connection to the gateway is closing", e.spec.Name)}
	}
	s.relays[id] = r
	s.mu.Unlock()
	r.log.Info("local MCP server started")
	return acpsdk.UnstableConnectMcpResponse{ConnectionId: acpsdk.UnstableMcpConnectionId(id)}, nil
}

// disconnect closes the relay of connectionID, if it is open, and stops
// its child in the background (the Proxy waits for it at its end).
func (s *localServers) disconnect(connectionID string) {
	s.mu.Lock()
	r := s.relays[connectionID]
	delete(s.relays, connectionID)
	s.mu.Unlock()
	if r != nil {
		s.stops.Go(r.close)
	}
}

// stopEntries closes the relays of the local entries ids (their session
// closed), in the background.
func (s *localServers) stopEntries(ids []string) {
	s.mu.Lock()
	var rs []*relay
	for id, r := range s.relays {
		for _, e := range ids {
			if r.entry.id == e {
				rs = append(rs, r)
				delete(s.relays, id)
			}
		}
	}
	s.mu.Unlock()
	for _, r := range rs {
		s.stops.Go(r.close)
	}
}

// close ends the Mux (what waits on the gateway fails) and every relay;
// the children stop in the background (the Proxy's Run waits for them and
// for the handlers under way at its end: wait). It is idempotent.
func (s *localServers) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	rs := s.relays
	s.relays = make(map[string]*relay)
	s.mu.Unlock()
	s.mux.Close()
	s.router.CloseAll()
	for _, r := range rs {
		s.stops.Go(r.close)
	}
}

// relay carries one local server's MCP connection: what the child writes
// goes to the gateway (remote.Write: its requests as mcp/message requests,
// its responses as the results of the gateway's, its notifications as
// mcp/message notifications), and what the gateway sends (remote.Read)
// goes to the child. Two goroutines, owned by the relay, copy
// jsonrpc.Message values; close ends both and stops the child.
type relay struct {
	id    string
	entry *localEntry
	t     *bridge.StdioTransport
	local mcp.Connection
	// remote is the gateway's side, in mcp/message.
	remote *mcpacp.Conn
	log    *slog.Logger

	cancel context.CancelFunc // ends the copies' reads and writes
	copies sync.WaitGroup
	once   sync.Once
}

// newRelay starts copying between local and remote.
func newRelay(id string, e *localEntry, t *bridge.StdioTransport, local mcp.Connection, remote *mcpacp.Conn, log *slog.Logger) *relay {
	ctx, cancel := context.WithCancel(context.Background())
	r := &relay{id: id, entry: e, t: t, local: local, remote: remote, log: log, cancel: cancel}
	r.copies.Go(func() {
		for {
			msg, err := local.Read(ctx)
			if err != nil {
				r.log.Debug("the local MCP server's output ended", "err", err)
				break
			}
			if err := remote.Write(ctx, msg); err != nil {
				r.log.Debug("a message of the local MCP server was not sent to the gateway", "err", err)
				break
			}
		}
		// The child is gone or the gateway's side closed: the gateway's
		// requests under way fail, and its next ones find no connection.
		_ = remote.Close()
	})
	r.copies.Go(func() {
		for {
			msg, err := remote.Read(ctx)
			if err != nil {
				return
			}
			if err := local.Write(ctx, msg); err != nil {
				r.log.Debug("a message of the gateway was not written to the local MCP server", "err", err)
				return
			}
		}
	})
	return r
}

// close closes the gateway's side, stops the child and its process group
// (bridge.StdioTransport.Stop: stdin closed, then after the grace period
// SIGTERM and SIGKILL) and waits for the copies. It is idempotent and
// returns within about the grace period plus two seconds.
func (r *relay) close() {
	r.once.Do(func() {
		_ = r.remote.Close()
		r.t.Stop()
		r.cancel()
		r.copies.Wait()
		r.log.Info("local MCP server stopped")
	})
}
