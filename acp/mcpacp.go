package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
)

// MCP-over-ACP (unstable; https://agentclientprotocol.com/rfds/mcp-over-acp):
// an mcpServers entry of type "acp" is a server the client hosts, reached
// on the ACP connection itself. The agent advertises mcpCapabilities.acp
// and speaks two bindings of it, chosen per entry:
//
//   - the published binding (npm @agentclientprotocol/sdk 2.4.0,
//     schema.unstable.json), for an entry that names its server "serverId"
//     only, as that SDK's declarations do: MCP 2026-07-28, stateless, with
//     no connection to open. Each MCP request is one mcp/message request
//     {serverId, requestId, method, params} (requestId is ours, unique on
//     the connection), whose result is the MCP outcome {"result"} or
//     {"error"}; an outer ACP error is a failure of the binding (-33001: no
//     such server). The provider's notifications for a request under way
//     (progress, subscription updates) are mcp/message notifications naming
//     the same serverId and requestId. Cancelling an MCP request cancels
//     its mcp/message ($/cancel_request). publishedTransport, over
//     mcpacp.Caller.
//   - the acp-go-sdk v0.13 draft, for an entry that names it "id" (alone,
//     or with an equal "serverId"), as clients built on that SDK write it:
//     mcp/connect {acpId} returns a connectionId, then mcp/message
//     {connectionId, method, params} in both directions, then
//     mcp/disconnect. acpTransport, over mcpacp.Router.
//
// Incoming mcp/message follows its params: one with connectionId belongs
// to the draft (a request or a notification, by its inner method, as
// before); one with serverId and no connectionId is the published
// binding's notification. The agent hosts no servers itself, so a
// published mcp/message request is refused by framing with -33001.

// mcpDisconnectTimeout bounds the mcp/disconnect sent when a connection
// closes.
const mcpDisconnectTimeout = 5 * time.Second

// mcpOverACP is the agent's side of MCP-over-ACP: the Router that serves
// mcp/message in the dispatch table (dispatch.go) and sends on the one
// connection.
type mcpOverACP struct {
	router *mcpacp.Router
	ready  <-chan struct{} // Serve has given the router the connection
	log    *slog.Logger
	// disconnects are the mcp/disconnect requests in flight: best-effort
	// cleanup that no Close waits for; Serve waits (each is bounded by
	// mcpDisconnectTimeout) before it ends the Mux.
	disconnects sync.WaitGroup

	// mu guards routes.
	mu sync.Mutex
	// routes are the published binding's requests under way, by serverId
	// and requestId: each takes the notifications the client sends for it.
	routes      map[mcpRoute]func(method string, params json.RawMessage)
	nextRequest atomic.Int64 // the requestIds handed out (published binding)
}

// mcpRoute names one request under way in the published binding.
type mcpRoute struct{ serverID, requestID string }

// transport returns the go-sdk transport of an "acp" entry, by the
// binding its entry chose (see above).
func (m *mcpOverACP) transport(spec bridge.ServerSpec) mcp.Transport {
	if spec.ServerIDKey == "serverId" {
		return &publishedTransport{m: m, spec: spec}
	}
	return &acpTransport{m: m, spec: spec}
}

// connection waits until Serve has set up the ACP connection, or ctx ends,
// and returns it; an error names server spec.
func (m *mcpOverACP) connection(ctx context.Context, spec bridge.ServerSpec) (*acpsdk.Connection, error) {
	select {
	case <-m.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rpc := m.router.Conn()
	if rpc == nil {
		return nil, fmt.Errorf("MCP-over-ACP server %q: the ACP connection is not running", spec.Name)
	}
	return rpc, nil
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
	rpc, err := t.m.connection(ctx, t.spec)
	if err != nil {
		return nil, err
	}
	params := acpsdk.UnstableConnectMcpRequest{AcpId: acpsdk.UnstableMcpServerAcpId(t.spec.ServerID)}
	res, err := acpsdk.SendRequest[acpsdk.UnstableConnectMcpResponse](rpc, ctx, acpsdk.ClientMethodMcpConnect, params)
	if err != nil {
		return nil, fmt.Errorf("MCP-over-ACP server %q: mcp/connect acpId %q: %w", t.spec.Name, t.spec.ServerID, err)
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

// publishedTransport is the go-sdk mcp.Transport of an "acp" entry in the
// published binding: there is nothing to open, so Connect returns an
// mcpacp.Caller at once, and the first request (server/discover) is the
// first the client sees.
type publishedTransport struct {
	m    *mcpOverACP
	spec bridge.ServerSpec
}

// Connect implements mcp.Transport.
func (t *publishedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	rpc, err := t.m.connection(ctx, t.spec)
	if err != nil {
		return nil, err
	}
	return mcpacp.NewCaller(ctx, t.spec.Name, func(ctx context.Context, method string, params json.RawMessage, notify func(string, json.RawMessage)) mcpacp.Outcome {
		return t.m.call(ctx, rpc, t.spec, method, params, notify)
	}, &mcpacp.CallerOptions{Logger: t.m.log, Done: rpc.Done()}), nil
}

// call sends one MCP request of the server spec as a published
// mcp/message request and returns its outcome; the notifications the
// client sends for it meanwhile go to notify (routes). acp-go-sdk hands
// every notification read before the response to the handler before
// SendRequest returns, so none is lost to the route's removal.
func (m *mcpOverACP) call(ctx context.Context, rpc *acpsdk.Connection, spec bridge.ServerSpec, method string, params json.RawMessage, notify func(string, json.RawMessage)) mcpacp.Outcome {
	route := mcpRoute{serverID: spec.ServerID, requestID: fmt.Sprintf("acp-agent-%d", m.nextRequest.Add(1))}
	m.mu.Lock()
	if m.routes == nil {
		m.routes = make(map[mcpRoute]func(string, json.RawMessage))
	}
	m.routes[route] = notify
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.routes, route)
		m.mu.Unlock()
	}()
	out, err := acpsdk.SendRequest[mcpOutcome](rpc, ctx, methodMCPMessage, mcpMessage{ServerID: route.serverID, RequestID: route.requestID, Method: method, Params: params})
	if err != nil {
		return mcpacp.Outcome{Err: bindingError(spec, err)}
	}
	switch {
	case out.Result != nil: // the schema: result wins when both are present
		return mcpacp.Outcome{Result: out.Result}
	case out.Error != nil:
		return mcpacp.Outcome{Error: &jsonrpc.Error{Code: out.Error.Code, Message: out.Error.Message, Data: out.Error.Data}}
	}
	return mcpacp.Outcome{Err: fmt.Errorf("serverId %q: the client's mcp/message response carries neither result nor error (MessageMcpResponse needs exactly one)", spec.ServerID)}
}

// The outer ACP error codes of the published binding's failures
// (McpBindingErrorCode in the TypeScript SDK's mcp/core).
const (
	codeMCPResourceLimit     = -33000 // too many requests under way
	codeMCPServerUnavailable = -33001 // no server registered under serverId
	codeMCPBackendFailed     = -33002 // the server failed without an MCP outcome
)

// bindingError words an outer ACP error of a published mcp/message.
func bindingError(spec bridge.ServerSpec, err error) error {
	var re *acpsdk.RequestError
	if !errors.As(err, &re) {
		return fmt.Errorf("serverId %q: %w", spec.ServerID, err)
	}
	switch re.Code {
	case codeMCPServerUnavailable:
		return fmt.Errorf("the client has no MCP server with serverId %q (%d %s)", spec.ServerID, re.Code, re.Message)
	case codeMCPResourceLimit:
		return fmt.Errorf("serverId %q: the client's limit of requests under way is reached (%d %s)", spec.ServerID, re.Code, re.Message)
	case codeMCPBackendFailed:
		return fmt.Errorf("serverId %q: the hosted server failed without an MCP answer (%d %s)", spec.ServerID, re.Code, re.Message)
	case jsonrpc.CodeMethodNotFound:
		return fmt.Errorf("serverId %q: the client does not serve the published mcp/message (%d %s); an entry with \"id\" selects the acp-go-sdk v0.13 draft (mcp/connect)", spec.ServerID, re.Code, re.Message)
	}
	return fmt.Errorf("serverId %q: %w", spec.ServerID, re)
}

// publishedNotification routes a published mcp/message notification to
// the request it names; one for no request under way is dropped, as the
// binding says.
func (m *mcpOverACP) publishedNotification(p mcpMessage) {
	m.mu.Lock()
	notify := m.routes[mcpRoute{serverID: p.ServerID, requestID: p.RequestID}]
	m.mu.Unlock()
	if notify == nil || p.Method == "" {
		m.log.Debug("mcp/message notification dropped: no such request under way", "serverId", p.ServerID, "requestId", p.RequestID, "method", p.Method)
		return
	}
	params := p.Params
	if string(params) == "null" {
		params = nil
	}
	notify(p.Method, params)
}

// mcpMessage serves mcp/message: a published binding's notification
// (publishedNotification), or a message to the agent's side of a draft
// connection (mcpacp.Router.Handle).
func (a *Agent) mcpMessage(ctx context.Context, params json.RawMessage) (any, error) {
	if _, published := mcpacp.Published(params); published {
		var p mcpMessage
		if err := json.Unmarshal(params, &p); err != nil {
			a.log.Debug("mcp/message notification dropped: invalid params", "err", err)
			return nil, nil
		}
		a.conn.mcp.publishedNotification(p)
		return nil, nil
	}
	res, re := a.conn.mcp.router.Handle(ctx, methodMCPMessage, params)
	if re != nil {
		return nil, re
	}
	return res, nil
}
