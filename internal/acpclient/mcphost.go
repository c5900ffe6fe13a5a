package acpclient

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
)

// MCPHost hosts MCP servers on the ACP connection (MCP-over-ACP, ACP's
// unstable mcp/connect, mcp/message and mcp/disconnect; a draft proposal):
// the agent connects to them with mcp/connect and talks to them in
// mcp/message. Set Recorder.MCP to one before the connection starts; it is
// safe for concurrent use.
type MCPHost struct {
	// Servers are the hosted servers by id (the id of their mcpServers
	// entry). Each mcp/connect is a new session of its server.
	Servers map[string]*mcp.Server

	once   sync.Once
	router *mcpacp.Router

	mu       sync.Mutex
	next     int
	sessions map[string]*mcp.ServerSession // by connectionId
	events   []string                      // "connect <id> <connectionId>", "disconnect <connectionId>"
	changed  chan struct{}                 // closed and replaced on every event
}

// Entry returns the mcpServers entry of the hosted server id, named name.
func (h *MCPHost) Entry(name, id string) acpsdk.McpServer {
	return acpsdk.McpServer{Acp: &acpsdk.McpServerAcpInline{Name: name, Id: acpsdk.McpServerAcpId(id), Type: "acp"}}
}

func (h *MCPHost) init() {
	h.once.Do(func() {
		h.router = mcpacp.NewRouter(nil)
		h.sessions = make(map[string]*mcp.ServerSession)
	})
}

// wrap sets up the connection of mcp/message on the stream w, r of the
// client's main connection and returns what that connection must use
// instead: a writer shared with it (frames stay whole) and r without the
// frames of mcp/message.
func (h *MCPHost) wrap(w io.Writer, r io.Reader) (io.Writer, io.Reader) {
	h.init()
	lw := &lockedWriter{w: w}
	mux := mcpacp.NewMux(h.router.Handle, []string{mcpacp.MethodMessage}, func(p []byte) error {
		_, err := lw.Write(p)
		return err
	}, slog.New(slog.DiscardHandler))
	h.router.SetConn(mux.Conn())
	return lw, mux.Filter(r)
}

// Events returns what happened so far, in order: "connect <id>
// <connectionId>" and "disconnect <connectionId>".
func (h *MCPHost) Events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

// WaitEvent waits until the event ev has happened, or ctx is done.
func (h *MCPHost) WaitEvent(ctx context.Context, ev string) error {
	for {
		h.mu.Lock()
		for _, e := range h.events {
			if e == ev {
				h.mu.Unlock()
				return nil
			}
		}
		if h.changed == nil {
			h.changed = make(chan struct{})
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for MCP-over-ACP event %q (have %q): %w", ev, h.Events(), context.Cause(ctx))
		}
	}
}

func (h *MCPHost) record(ev string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
}

func (h *MCPHost) connect(ctx context.Context, p acpsdk.UnstableConnectMcpRequest) (acpsdk.UnstableConnectMcpResponse, error) {
	h.init()
	srv := h.Servers[string(p.AcpId)]
	if srv == nil {
		return acpsdk.UnstableConnectMcpResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("mcp/connect: no hosted MCP server has acpId %q", p.AcpId)})
	}
	h.mu.Lock()
	h.next++
	connID := fmt.Sprintf("conn-%d", h.next)
	h.mu.Unlock()
	conn, err := h.router.Open(ctx, connID, string(p.AcpId), nil)
	if err != nil {
		return acpsdk.UnstableConnectMcpResponse{}, err
	}
	ss, err := srv.Connect(context.WithoutCancel(ctx), mcpacp.Transport{Conn: conn}, nil)
	if err != nil {
		_ = conn.Close()
		return acpsdk.UnstableConnectMcpResponse{}, err
	}
	h.mu.Lock()
	h.sessions[connID] = ss
	h.mu.Unlock()
	h.record("connect " + string(p.AcpId) + " " + connID)
	return acpsdk.UnstableConnectMcpResponse{ConnectionId: acpsdk.UnstableMcpConnectionId(connID)}, nil
}

func (h *MCPHost) disconnect(p acpsdk.UnstableDisconnectMcpRequest) (acpsdk.UnstableDisconnectMcpResponse, error) {
	h.init()
	id := string(p.ConnectionId)
	h.mu.Lock()
	ss := h.sessions[id]
	delete(h.sessions, id)
	h.mu.Unlock()
	if ss == nil {
		return acpsdk.UnstableDisconnectMcpResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("mcp/disconnect: no open connection %q", id)})
	}
	_ = ss.Close()
	h.record("disconnect " + id)
	return acpsdk.UnstableDisconnectMcpResponse{}, nil
}

// UnstableConnectMcp implements acpsdk.Client (mcp/connect)
// with Recorder.MCP; without it the method is refused.
func (r *Recorder) UnstableConnectMcp(ctx context.Context, p acpsdk.UnstableConnectMcpRequest) (acpsdk.UnstableConnectMcpResponse, error) {
	if r.MCP == nil {
		return acpsdk.UnstableConnectMcpResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodMcpConnect)
	}
	return r.MCP.connect(ctx, p)
}

// UnstableDisconnectMcp implements acpsdk.Client (mcp/disconnect)
// with Recorder.MCP; without it the method is refused.
func (r *Recorder) UnstableDisconnectMcp(_ context.Context, p acpsdk.UnstableDisconnectMcpRequest) (acpsdk.UnstableDisconnectMcpResponse, error) {
	if r.MCP == nil {
		return acpsdk.UnstableDisconnectMcpResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodMcpDisconnect)
	}
	return r.MCP.disconnect(p)
}

// lockedWriter serializes whole-frame writes of two connections.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
