package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
)

// MCP-over-ACP (ACP's unstable mcp/connect, mcp/message, mcp/disconnect: a
// draft proposal, https://agentclientprotocol.com/rfds/mcp-over-acp): an
// mcpServers entry of type "acp" is a server the client hosts, reached on
// the ACP connection itself. The agent advertises mcpCapabilities.acp.
//
// Field names: acp-go-sdk v0.13 (the schema the agent is built on) names
// the server's id "id" in the entry and "acpId" in mcp/connect; the
// proposal's 2026 schema names it "serverId" in both. The agent accepts
// either in the entry and answers in the same schema: an entry that gave
// "serverId" is connected with {"serverId"}, any other with {"acpId"}.
// connectionId is the same in both.

// mcpDisconnectTimeout bounds the mcp/disconnect sent when a connection
// closes.
const mcpDisconnectTimeout = 5 * time.Second

// mcpOverACP is the agent's side of MCP-over-ACP: the Router that serves
// mcp/message in the dispatch table (conn.go) and sends on the one
// connection.
type mcpOverACP struct {
	router *mcpacp.Router
	ready  <-chan struct{} // Serve has given the router the connection
	log    *slog.Logger
	// disconnects are the mcp/disconnect requests in flight: best-effort
	// cleanup that no Close waits for; Serve waits (each is bounded by
	// mcpDisconnectTimeout) before it ends the Mux.
	disconnects sync.WaitGroup
}

// acpTransport is the go-sdk mcp.Transport of one acp entry: Connect sends
// mcp/connect for its id and returns the connection the client named;
// closing it sends mcp/disconnect.
type acpTransport struct {
	m    *mcpOverACP
	spec bridge.ServerSpec
}

// Connect implements mcp.Transport.
func (t *acpTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	select {
	case <-t.m.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rpc := t.m.router.Conn()
	if rpc == nil {
		return nil, fmt.Errorf("MCP-over-ACP server %q: the ACP connection is not running", t.spec.Name)
	}
	params := mcpConnectParams{AcpID: t.spec.ServerID}
	if t.spec.ServerIDKey == "serverId" {
		params = mcpConnectParams{ServerID: t.spec.ServerID}
	}
	res, err := acpsdk.SendRequest[acpsdk.UnstableConnectMcpResponse](rpc, ctx, acpsdk.ClientMethodMcpConnect, params)
	if err != nil {
		return nil, fmt.Errorf("MCP-over-ACP server %q: mcp/connect %s %q: %w", t.spec.Name, t.spec.ServerIDKey, t.spec.ServerID, err)
	}
	if res.ConnectionId == "" {
		return nil, fmt.Errorf("MCP-over-ACP server %q: the client's mcp/connect response has no connectionId", t.spec.Name)
	}
	id := res.ConnectionId
	conn, err := t.m.router.Open(ctx, string(id), t.spec.Name, func() {
		t.m.disconnects.Go(func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mcpDisconnectTimeout)
			defer cancel()
			if _, err := acpsdk.SendRequest[acpsdk.UnstableDisconnectMcpResponse](rpc, dctx, acpsdk.ClientMethodMcpDisconnect, acpsdk.UnstableDisconnectMcpRequest{ConnectionId: id}); err != nil {
				t.m.log.Debug("mcp/disconnect failed", "server", t.spec.Name, "connectionId", id, "err", err)
			}
		})
	})
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// mcpMessage serves mcp/message: a message to the agent's side of a
// connection to a server the client hosts (mcpacp.Router.Handle).
func (a *Agent) mcpMessage(ctx context.Context, params json.RawMessage) (any, error) {
	res, re := a.mcpACP.router.Handle(ctx, methodMCPMessage, params)
	if re != nil {
		return nil, re
	}
	return res, nil
}
