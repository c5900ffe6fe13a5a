package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eofDrainTimeout bounds how long the end of the client's input waits for
// the answers to the requests read before it; after it the end is passed
// on anyway (and logged), and the connection ends.
const eofDrainTimeout = 30 * time.Second

// cancelledAtEOF are the methods whose requests under way are cancelled at
// the end of the input, as the ACP front end cancels a running prompt: an
// ask_agent turn may run for minutes, and its client is gone. Every other
// request is answered as usual.
var cancelledAtEOF = map[string]bool{"tools/call": true}

// eofConn is an mcp.Connection that holds back the end of its input (the
// client closed stdin) until every request it passed on has been answered.
// go-sdk stops writing responses as soon as its reader fails, so without
// it requests written just before the end would be read, run, and never
// answered.
//
// At the end it first passes on a notifications/cancelled for each
// cancelledAtEOF request under way (go-sdk cancels the handler's context,
// and a turn answers "cancelled"), then waits for the answers: at most
// timeout, or until ctx of the Read is done or Close is called.
//
// Read is called by one goroutine at a time (go-sdk's reader); Write and
// Close may be called concurrently with it and each other.
type eofConn struct {
	mcp.Connection
	log     *slog.Logger
	timeout time.Duration

	closed    chan struct{} // closed by the first Close: the wait for answers ends
	closeOnce sync.Once
	// answered gets a value (without blocking: it holds one) when a
	// response is written, so that the wait at the end looks again.
	answered chan struct{}

	// mu guards unanswered.
	mu sync.Mutex
	// unanswered maps the id of each request passed on to the server to
	// its method; an id leaves when the server's response to it has been
	// written (or its writing failed).
	unanswered map[jsonrpc.ID]string

	// Only Read uses the fields below.
	end     error              // the error that ended the input; nil while it lasts
	cancels []*jsonrpc.Request // notifications/cancelled still to pass on after end
	drained bool               // the wait at the end is over: Read returns end
}

func newEOFConn(c mcp.Connection, timeout time.Duration, log *slog.Logger) *eofConn {
	return &eofConn{Connection: c, log: log, timeout: timeout, closed: make(chan struct{}),
		answered: make(chan struct{}, 1), unanswered: make(map[jsonrpc.ID]string)}
}

// Read implements mcp.Connection. A request's id is recorded before the
// request is returned, so that its response, however fast, finds it.
func (c *eofConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if c.end == nil {
		msg, err := c.Connection.Read(ctx)
		if err == nil {
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				c.mu.Lock()
				c.unanswered[req.ID] = req.Method
				c.mu.Unlock()
			}
			return msg, nil
		}
		c.end = err
		c.cancels = c.cancelsAtEnd()
	}
	if len(c.cancels) > 0 {
		msg := c.cancels[0]
		c.cancels = c.cancels[1:]
		return msg, nil
	}
	if !c.drained {
		c.drained = true
		c.drain(ctx)
	}
	return nil, c.end
}

// cancelsAtEnd returns a notifications/cancelled for each cancelledAtEOF
// request under way.
func (c *eofConn) cancelsAtEnd() []*jsonrpc.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*jsonrpc.Request
	for id, method := range c.unanswered {
		if !cancelledAtEOF[method] {
			continue
		}
		params, err := json.Marshal(&mcp.CancelledParams{RequestID: id.Raw(), Reason: "the client closed stdin"})
		if err != nil {
			continue
		}
		c.log.Info("stdin ended: cancelling a request under way", "id", id.Raw(), "method", method)
		out = append(out, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
	}
	return out
}

// drain waits until every request passed on has been answered, at most
// c.timeout, and returns early when ctx is done or the connection closed.
func (c *eofConn) drain(ctx context.Context) {
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	for c.left() > 0 {
		select {
		case <-c.answered:
		case <-timer.C:
			c.mu.Lock()
			var ids []any
			for id := range c.unanswered {
				ids = append(ids, id.Raw())
			}
			c.mu.Unlock()
			c.log.Warn("stdin ended and requests read before it are still unanswered: ending the connection anyway", "timeout", c.timeout, "ids", ids)
			return
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		}
	}
}

// left is the number of requests passed on and not answered.
func (c *eofConn) left() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.unanswered)
}

// Write implements mcp.Connection.
func (c *eofConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.unanswered, resp.ID)
		c.mu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
	}
	return err
}

// Close implements mcp.Connection: it ends a wait for answers, then closes
// the connection. It may be called more than once.
func (c *eofConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}
