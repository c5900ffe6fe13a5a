package mcpacp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The published binding (npm @agentclientprotocol/sdk 2.4.0,
// schema.unstable.json MessageMcpRequest, MessageMcpResponse,
// MessageMcpNotification): MCP 2026-07-28, stateless, with no connection to
// open. Every MCP request is one ACP mcp/message request of its own,
// {serverId, requestId, method, params}, whose result carries the MCP
// outcome ({"result"} or {"error"}); the provider's notifications for a
// request under way come back as mcp/message notifications naming its
// serverId and requestId; cancelling an MCP request cancels its ACP
// request ($/cancel_request). There is no initialize handshake: the
// client's first request is server/discover.

// Outcome is one MCP request's answer over the published binding: the
// inner MCP result or error of a successful mcp/message (Error set, or
// Result, which may be JSON null), or Err, a failure of the binding itself
// (an outer ACP error, the connection gone), which the MCP client sees as
// an internal error naming the server.
type Outcome struct {
	Result json.RawMessage
	Error  *jsonrpc.Error
	Err    error
}

// CallFunc sends one MCP request (method, params as the MCP client wrote
// them) to the hosted server as an mcp/message request and waits for its
// Outcome. notify receives the request's MCP notifications (method,
// params) while the call is under way; a CallFunc must deliver every
// notification that arrived before the response before it returns (the
// ACP engine's ordering does), and none after. ctx ends when the MCP
// client cancels the request or the Caller closes: the CallFunc then
// cancels its ACP request.
type CallFunc func(ctx context.Context, method string, params json.RawMessage, notify func(method string, params json.RawMessage)) Outcome

// Caller is a go-sdk mcp.Connection to one server a client hosts over the
// published binding: each MCP request the go-sdk client writes goes
// through call in a goroutine of its own, and its outcome, with the
// notifications the call delivered before it, is read back in order. The
// go-sdk client's notifications/cancelled cancels the call it names; its
// other notifications have nowhere to go in the binding and are dropped.
// An initialize request (go-sdk's fallback after a failed server/discover)
// is answered here, with an error, as the binding carries MCP 2026-07-28
// only. It is safe for concurrent use.
type Caller struct {
	server   string
	call     CallFunc
	log      *slog.Logger
	connDone <-chan struct{} // CallerOptions.Done (nil: never)

	ctx    context.Context // ends the calls in flight on Close
	cancel context.CancelFunc
	calls  sync.WaitGroup

	in *inbox // what Read returns

	// mu guards closed, inflight and discoverErr.
	mu       sync.Mutex
	closed   bool
	inflight map[string]context.CancelFunc // the calls under way, by the MCP request id (fmt %v of its Raw)
	// discoverErr is why the last server/discover failed, for the
	// initialize refused after it.
	discoverErr string

	closeOnce sync.Once
}

// CallerOptions are NewCaller's options; the zero value is valid.
type CallerOptions struct {
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Done, if not nil, is closed when the ACP connection ends: Read then
	// returns io.EOF, so the MCP client sees the server gone.
	Done <-chan struct{}
}

// NewCaller returns the Caller of the hosted server named server (for
// errors and logs), sending with call. Its calls carry ctx's values; they
// end on Close (or when the MCP client cancels them), not when ctx does.
// A nil opts is valid. Close it when done.
func NewCaller(ctx context.Context, server string, call CallFunc, opts *CallerOptions) *Caller {
	var o CallerOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &Caller{
		server: server, call: call, log: o.Logger, connDone: o.Done, ctx: ctx, cancel: cancel,
		inflight: make(map[string]context.CancelFunc),
		in:       newInbox(),
	}
}

// SessionID implements mcp.Connection: the binding has no MCP session.
func (c *Caller) SessionID() string { return "" }

func (c *Caller) push(msg jsonrpc.Message) { c.in.push(msg) }

// Read implements mcp.Connection. It returns io.EOF once the Caller is
// closed or the ACP connection has ended (CallerOptions.Done).
func (c *Caller) Read(ctx context.Context) (jsonrpc.Message, error) {
	return c.in.read(ctx, c.connDone)
}

// Write implements mcp.Connection. A request does not wait for its
// outcome here: it is read later.
func (c *Caller) Write(_ context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		// 2026-07-28 has no server-to-client requests, so nothing to answer.
		c.log.Debug("MCP response dropped: the published MCP-over-ACP binding has no server requests", "server", c.server)
		return nil
	}
	if !req.ID.IsValid() {
		c.notification(req)
		return nil
	}
	key := fmt.Sprint(req.ID.Raw())
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	if req.Method == "initialize" {
		why := c.discoverErr
		c.mu.Unlock()
		if why == "" {
			why = "server/discover was not tried"
		}
		c.push(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
			"MCP-over-ACP server %q: server/discover failed: %s (the published binding carries MCP 2026-07-28 only: no initialize to fall back to)", c.server, why)}})
		return nil
	}
	ctx, cancel := context.WithCancel(c.ctx)
	c.inflight[key] = cancel
	c.calls.Add(1) // under mu, so that Close waits for it
	c.mu.Unlock()
	go c.run(ctx, cancel, key, req)
	return nil
}

// run makes one call and queues its notifications, then its response.
func (c *Caller) run(ctx context.Context, cancel context.CancelFunc, key string, req *jsonrpc.Request) {
	defer c.calls.Done()
	defer cancel()
	params := req.Params
	if string(params) == "null" {
		params = nil
	}
	out := c.call(ctx, req.Method, params, func(method string, params json.RawMessage) {
		if ctx.Err() == nil {
			c.push(&jsonrpc.Request{Method: method, Params: params})
		}
	})
	c.mu.Lock()
	delete(c.inflight, key)
	if req.Method == "server/discover" {
		c.discoverErr = ""
		switch {
		case out.Err != nil:
			c.discoverErr = out.Err.Error()
		case out.Error != nil:
			c.discoverErr = out.Error.Error()
		}
	}
	c.mu.Unlock()
	if ctx.Err() != nil {
		return // cancelled: the MCP client retired the call already
	}
	res := &jsonrpc.Response{ID: req.ID}
	switch {
	case out.Err != nil:
		res.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("MCP-over-ACP server %q: mcp/message %s: %v", c.server, req.Method, out.Err)}
	case out.Error != nil:
		res.Error = out.Error
	case len(out.Result) == 0:
		res.Result = json.RawMessage("null")
	default:
		res.Result = out.Result
	}
	c.push(res)
}

// notification handles a notification of the MCP client:
// notifications/cancelled cancels the call it names; the rest are dropped.
func (c *Caller) notification(req *jsonrpc.Request) {
	if req.Method != "notifications/cancelled" {
		c.log.Debug("MCP notification dropped: the published MCP-over-ACP binding carries the client's requests only", "server", c.server, "method", req.Method)
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.RequestID == nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	cancel := c.inflight[fmt.Sprint(id.Raw())]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Close implements mcp.Connection: the calls in flight are cancelled (and
// waited for), and Read returns io.EOF. It is idempotent.
func (c *Caller) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.in.close()
		c.cancel()
		c.calls.Wait()
	})
	return nil
}

// Published reports whether the params of an mcp/message are in the
// published binding's shape (serverId, and no connectionId, which every
// message of the draft has), and the serverId they name (empty when it is
// not a string).
func Published(params json.RawMessage) (serverID string, ok bool) {
	var p struct {
		ConnectionID json.RawMessage `json:"connectionId"`
		ServerID     json.RawMessage `json:"serverId"`
	}
	if json.Unmarshal(params, &p) != nil || p.ConnectionID != nil || p.ServerID == nil {
		return "", false
	}
	_ = json.Unmarshal(p.ServerID, &serverID)
	return serverID, true
}
