package acpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
)

// MCPHost hosts MCP servers on the ACP connection (MCP-over-ACP, ACP's
// unstable capability), in either binding: the acp-go-sdk v0.13 draft
// (Servers: the agent connects with mcp/connect, talks in mcp/message by
// connectionId, ends with mcp/disconnect) and the published one
// (Published: each mcp/message request, by serverId, is one MCP request,
// served as the TypeScript SDK's fromMcpServer does, by a fresh session of
// the server). Set Recorder.MCP to one before the connection starts; it is
// safe for concurrent use.
type MCPHost struct {
	// Servers are the draft's hosted servers by id (the id of their
	// mcpServers entry). Each mcp/connect is a new session of its server.
	Servers map[string]*mcp.Server
	// Published are the published binding's hosted servers by serverId
	// (PublishedEntry). Each mcp/message request is served by a new
	// in-memory session of its server at MCP 2026-07-28; the server's
	// notifications during it go back as mcp/message notifications.
	Published map[string]*mcp.Server

	once   sync.Once
	router *mcpacp.Router

	mu       sync.Mutex
	next     int
	sessions map[string]*mcp.ServerSession // by connectionId
	// events: "connect <id> <connectionId>", "disconnect <connectionId>";
	// published: "message <serverId> <method>", "cancelled <serverId> <method>".
	events  []string
	changed chan struct{} // closed and replaced on every event
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
	handle := func(ctx context.Context, method string, params json.RawMessage) (any, *acpsdk.RequestError) {
		if _, ok := mcpacp.Published(params); ok && method == mcpacp.MethodMessage {
			return h.serve(ctx, params)
		}
		return h.router.Handle(ctx, method, params)
	}
	mux := mcpacp.NewMux(handle, []string{mcpacp.MethodMessage}, func(p []byte) error {
		_, err := lw.Write(p)
		return err
	}, nil)
	h.router.SetConn(mux.Conn())
	return lw, mux.Filter(r)
}

// Conn returns the client's connection for mcp/message (a second
// connection on the stream, whose requests carry ids of their own): a
// test sends session/new with raw mcpServers entries on it, such as the
// published binding's, which acp-go-sdk v0.13's types cannot write.
func (h *MCPHost) Conn() *acpsdk.Connection {
	h.init()
	return h.router.Conn()
}

// PublishedEntry returns the published binding's mcpServers entry of the
// hosted server serverID, named name.
func (h *MCPHost) PublishedEntry(name, serverID string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"type": "acp", "name": name, "serverId": serverID})
	return b
}

// serve answers one published mcp/message request: the MCP request goes
// to a new session of the server its serverId names, and the MCP outcome
// is the result ({"result"} or {"error"}). A serverId it does not host is
// the binding's -33001; a cancelled request, -32800.
func (h *MCPHost) serve(ctx context.Context, raw json.RawMessage) (any, *acpsdk.RequestError) {
	var p struct {
		ServerID  string          `json:"serverId"`
		RequestID string          `json:"requestId"`
		Method    string          `json:"method"`
		Params    json.RawMessage `json:"params,omitempty"`
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.RequestID == "" || p.Method == "" {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": "mcp/message: serverId, requestId and method must be strings"})
	}
	srv := h.Published[p.ServerID]
	if srv == nil {
		return nil, &acpsdk.RequestError{Code: -33001, Message: "MCP server registration unavailable", Data: map[string]any{"serverId": p.ServerID}}
	}
	h.record("message " + p.ServerID + " " + p.Method)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.WithoutCancel(ctx), st, nil)
	if err != nil {
		return nil, &acpsdk.RequestError{Code: -33002, Message: "MCP server handler failed", Data: map[string]any{"details": err.Error()}}
	}
	defer ss.Close()
	conn, err := ct.Connect(ctx)
	if err != nil {
		return nil, &acpsdk.RequestError{Code: -33002, Message: "MCP server handler failed", Data: map[string]any{"details": err.Error()}}
	}
	defer conn.Close()
	id, _ := jsonrpc.MakeID(p.RequestID)
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: p.Method, Params: p.Params}); err != nil {
		return nil, &acpsdk.RequestError{Code: -33002, Message: "MCP server handler failed", Data: map[string]any{"details": err.Error()}}
	}
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				h.record("cancelled " + p.ServerID + " " + p.Method)
				return nil, &acpsdk.RequestError{Code: -32800, Message: "Request cancelled"}
			}
			return nil, &acpsdk.RequestError{Code: -33002, Message: "MCP server stream ended without a response"}
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if m.ID.IsValid() {
				continue // 2026-07-28 has no server requests
			}
			n := map[string]any{"serverId": p.ServerID, "requestId": p.RequestID, "method": m.Method}
			if len(m.Params) > 0 {
				n["params"] = m.Params
			}
			if err := h.router.Conn().SendNotification(ctx, mcpacp.MethodMessage, n); err != nil {
				return nil, &acpsdk.RequestError{Code: -32800, Message: "Request cancelled"}
			}
		case *jsonrpc.Response:
			if m.Error != nil {
				var we *jsonrpc.Error
				if !errors.As(m.Error, &we) {
					we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: m.Error.Error()}
				}
				return map[string]any{"error": we}, nil
			}
			return map[string]any{"result": m.Result}, nil
		}
	}
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
