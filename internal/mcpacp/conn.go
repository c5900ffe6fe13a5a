package mcpacp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// message is the params of mcp/message, request or notification form
// (acpsdk.UnstableMessageMcpRequest, UnstableMessageMcpNotification), with
// the inner params kept as raw JSON rather than a map.
type message struct {
	Meta         map[string]any  `json:"_meta,omitempty"`
	ConnectionID string          `json:"connectionId"`
	Method       string          `json:"method"`
	Params       json.RawMessage `json:"params,omitempty"`
}

// Router routes the mcp/message a connection receives to the open Conns by
// connectionId, and its Conns send on that connection (SetConn). Its
// methods are safe for concurrent use.
type Router struct {
	log   *slog.Logger
	conn  atomic.Pointer[acpsdk.Connection]
	mu    sync.Mutex
	conns map[string]*Conn
	next  atomic.Int64 // ids of the requests handed to the Conns
}

// NewRouter returns an empty Router logging to log (nil discards). Serve
// mcp/message with its Handle, and give it the connection with SetConn
// before any Open.
func NewRouter(log *slog.Logger) *Router {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Router{log: log, conns: make(map[string]*Conn)}
}

// SetConn sets the ACP connection the Router's Conns send on: the agent's
// one connection, or a client's Mux.Conn.
func (r *Router) SetConn(c *acpsdk.Connection) { r.conn.Store(c) }

// Conn returns the connection given to SetConn, or nil.
func (r *Router) Conn() *acpsdk.Connection { return r.conn.Load() }

// Open returns a new Conn for connectionID, which must not be open already;
// onClose, if not nil, runs once when the Conn closes (after its pending
// calls have ended), as the mcp/disconnect of the side that opened it. The
// Conn's calls carry ctx's values; they end on Close, not when ctx does.
func (r *Router) Open(ctx context.Context, connectionID, server string, onClose func()) (*Conn, error) {
	m := r.conn.Load()
	if m == nil {
		return nil, fmt.Errorf("MCP-over-ACP server %q: the ACP connection is not running", server)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Conn{
		r: r, conn: m, id: connectionID, server: server, onClose: onClose, ctx: ctx, cancel: cancel,
		in: newInbox(), waiting: make(map[string]chan *jsonrpc.Response),
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.conns[connectionID]; dup {
		cancel()
		return nil, fmt.Errorf("MCP-over-ACP server %q: connectionId %q is already open", server, connectionID)
	}
	r.conns[connectionID] = c
	return c, nil
}

// Lookup returns the open Conn of connectionID, or nil.
func (r *Router) Lookup(connectionID string) *Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns[connectionID]
}

// CloseAll closes every open Conn.
func (r *Router) CloseAll() {
	r.mu.Lock()
	conns := make([]*Conn, 0, len(r.conns))
	for _, c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Handle is an acpsdk.MethodHandler that serves mcp/message. The
// inner message goes to the Conn of its connectionId as an MCP request
// (answered with the MCP response's result or error) or, when its method
// starts with "notifications/" (every MCP notification's does), as an MCP
// notification. acp-go-sdk does not tell a handler whether the outer
// message had an id; a notification's result is dropped by the SDK.
func (r *Router) Handle(ctx context.Context, method string, params json.RawMessage) (any, *acpsdk.RequestError) {
	if method != MethodMessage {
		return nil, acpsdk.NewMethodNotFound(method)
	}
	var p message
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": "mcp/message params: " + err.Error()})
	}
	if p.ConnectionID == "" || p.Method == "" {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": "mcp/message: connectionId and method must be non-empty strings"})
	}
	c := r.Lookup(p.ConnectionID)
	if c == nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("mcp/message: no open MCP-over-ACP connection %q", p.ConnectionID)})
	}
	if string(p.Params) == "null" {
		p.Params = nil
	}
	if strings.HasPrefix(p.Method, "notifications/") {
		c.push(&jsonrpc.Request{Method: p.Method, Params: p.Params})
		return nil, nil
	}
	key := fmt.Sprintf("acp-%d", r.next.Add(1))
	id, _ := jsonrpc.MakeID(key)
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, acpsdk.NewInternalError(map[string]any{"error": fmt.Sprintf("MCP-over-ACP server %q: connection %q is closed", c.server, c.id)})
	}
	c.waiting[key] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, key)
		c.mu.Unlock()
	}()
	c.push(&jsonrpc.Request{ID: id, Method: p.Method, Params: p.Params})
	select {
	case res := <-ch:
		if res.Error != nil {
			var we *jsonrpc.Error
			if e, ok := res.Error.(*jsonrpc.Error); ok {
				we = e
			} else {
				we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: res.Error.Error()}
			}
			re := &acpsdk.RequestError{Code: int(we.Code), Message: we.Message}
			if len(we.Data) > 0 {
				re.Data = we.Data
			}
			return nil, re
		}
		if len(res.Result) == 0 {
			return json.RawMessage("null"), nil
		}
		return res.Result, nil
	case <-ctx.Done():
		return nil, acpsdk.NewInternalError(map[string]any{"error": fmt.Sprintf("mcp/message %s: cancelled", p.Method)})
	case <-c.in.done:
		return nil, acpsdk.NewInternalError(map[string]any{"error": fmt.Sprintf("MCP-over-ACP server %q: connection %q closed before answering %s", c.server, c.id, p.Method)})
	}
}

// Conn is one MCP connection carried in mcp/message (a go-sdk
// mcp.Connection): what the local MCP peer writes goes to the ACP peer
// (requests as mcp/message requests, whose result or error becomes the
// response read back; notifications as mcp/message notifications;
// responses as the result of the peer's pending mcp/message), and what the
// ACP peer sends is read. It is safe for concurrent use.
type Conn struct {
	r       *Router
	conn    *acpsdk.Connection
	id      string
	server  string
	onClose func()

	ctx    context.Context // ends the calls in flight on Close
	cancel context.CancelFunc
	calls  sync.WaitGroup

	in *inbox // what Read returns

	// mu guards closed and waiting; it is never held with the Router's
	// mu.
	mu      sync.Mutex
	closed  bool
	waiting map[string]chan *jsonrpc.Response // the peer's requests, by the id handed to Read

	closeOnce sync.Once
}

// ID returns the connectionId.
func (c *Conn) ID() string { return c.id }

// SessionID implements mcp.Connection: there is no MCP session id.
func (c *Conn) SessionID() string { return "" }

func (c *Conn) push(msg jsonrpc.Message) { c.in.push(msg) }

// Read implements mcp.Connection. It returns io.EOF once the Conn is
// closed or the ACP connection has ended.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	return c.in.read(ctx, c.conn.Done())
}

// Write implements mcp.Connection. A request does not wait for its
// response here (it is read later), so that the peer's requests made while
// it runs (roots/list during tools/call) are answered.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.mu.Lock()
	closed := c.closed
	if !closed {
		if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
			c.calls.Add(1) // under mu, so that Close waits for it
		}
	}
	c.mu.Unlock()
	if closed {
		return errClosed
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		params := message{ConnectionID: c.id, Method: m.Method, Params: m.Params}
		if !m.ID.IsValid() {
			return c.conn.SendNotification(ctx, MethodMessage, params)
		}
		go c.call(m.ID, params)
		return nil
	case *jsonrpc.Response:
		key := fmt.Sprint(m.ID.Raw())
		c.mu.Lock()
		ch := c.waiting[key]
		delete(c.waiting, key)
		c.mu.Unlock()
		if ch == nil {
			c.r.log.Debug("MCP response dropped: no such request of the peer is waiting", "server", c.server, "id", key)
			return nil
		}
		ch <- m
		return nil
	}
	return fmt.Errorf("MCP-over-ACP server %q: cannot send a %T", c.server, msg)
}

// call sends one request and queues its response for Read.
func (c *Conn) call(id jsonrpc.ID, params message) {
	defer c.calls.Done()
	res := &jsonrpc.Response{ID: id}
	result, err := acpsdk.SendRequest[json.RawMessage](c.conn, c.ctx, MethodMessage, params)
	switch e := err.(type) {
	case nil:
		res.Result = result
	case *acpsdk.RequestError:
		we := &jsonrpc.Error{Code: int64(e.Code), Message: e.Message}
		if e.Data != nil {
			if b, merr := json.Marshal(e.Data); merr == nil {
				we.Data = b
			}
		}
		res.Error = we
	default:
		res.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcp/message %s to the ACP peer: %v", params.Method, err)}
	}
	if c.ctx.Err() == nil {
		c.push(res)
	}
}

// Close implements mcp.Connection: the calls in flight end, Read returns
// io.EOF, the Conn leaves its Router, then onClose runs. It is idempotent.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.in.close()
		c.cancel()
		c.calls.Wait()
		c.r.mu.Lock()
		if c.r.conns[c.id] == c {
			delete(c.r.conns, c.id)
		}
		c.r.mu.Unlock()
		if c.onClose != nil {
			c.onClose()
		}
	})
	return nil
}

// Transport is a go-sdk mcp.Transport whose Connect returns Conn, for a
// server that a client hosts (mcp.Server.Connect).
type Transport struct{ Conn *Conn }

// Connect implements mcp.Transport.
func (t Transport) Connect(context.Context) (mcp.Connection, error) { return t.Conn, nil }
