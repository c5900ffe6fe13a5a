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

// stdioTransport is the transport NewStdioTransport returns: go-sdk's
// IOTransport (behind the line filter), whose connection drops the
// client's responses to requests the server has not under way (callsConn)
// and answers every request read before the end of the input (eofConn).
type stdioTransport struct {
	io  *mcp.IOTransport
	log *slog.Logger
	// drain bounds the wait for answers at the end of the input
	// (eofDrainTimeout).
	drain time.Duration
}

// Connect implements mcp.Transport.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.io.Connect(ctx)
	if err != nil {
		return nil, err
	}
	calls := &callsConn{Connection: c, log: t.log, sent: make(map[jsonrpc.ID]struct{})}
	return newEOFConn(calls, t.drain, t.log), nil
}

// callsConn is an mcp.Connection that passes on a response only if the
// server has a request under way with its id: one it sent, not answered
// yet and not cancelled. Any other is dropped and logged, so the SDK never
// gets a response it did not ask for. (It hides the IOTransport
// connection's session updates, which that uses only to refuse batches
// from 2025-06-18 on: the line filter refuses them all.)
type callsConn struct {
	mcp.Connection
	log *slog.Logger

	// mu guards sent.
	mu sync.Mutex
	// sent holds the id of each request the server wrote and has no
	// response to yet; an id leaves at its response, at the server's
	// notifications/cancelled for it, or when writing the request fails.
	sent map[jsonrpc.ID]struct{}
}

// Read implements mcp.Connection.
func (c *callsConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			return msg, nil
		}
		c.mu.Lock()
		_, ours := c.sent[resp.ID]
		delete(c.sent, resp.ID)
		c.mu.Unlock()
		if ours {
			return msg, nil
		}
		c.log.Warn("dropped a response to no request of the server's under way (never sent, answered or cancelled)", "id", resp.ID.Raw())
	}
}

// Write implements mcp.Connection. A request's id is recorded before it
// is written, so that its response, however fast, finds it.
func (c *callsConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, _ := msg.(*jsonrpc.Request)
	switch {
	case req == nil:
	case req.IsCall():
		c.mu.Lock()
		c.sent[req.ID] = struct{}{}
		c.mu.Unlock()
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.forget(id)
			}
		}
	}
	err := c.Connection.Write(ctx, msg)
	if err != nil && req != nil && req.IsCall() {
		c.forget(req.ID)
	}
	return err
}

// forget drops id from the requests under way.
func (c *callsConn) forget(id jsonrpc.ID) {
	c.mu.Lock()
	delete(c.sent, id)
	c.mu.Unlock()
}
