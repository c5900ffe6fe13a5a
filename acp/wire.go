package acp

import (
	"encoding/json"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
)

// The messages acp-go-sdk v0.13.5 lacks, or types in a shape other than
// the ACP schema's (npm @agentclientprotocol/sdk 2.4.0 is the reference):
// small typed structs of ours, all in this file, sent and received over
// the one engine (conn.go).

const (
	// methodMCPMessage is MCP-over-ACP's mcp/message, in both directions:
	// acp-go-sdk has its types but dispatches it on neither side.
	methodMCPMessage = mcpacp.MethodMessage
	// mcpNotificationPrefix starts the method of every MCP notification: an
	// mcp/message carrying one is an ACP notification, any other a request.
	mcpNotificationPrefix = "notifications/"
)

// elicitationCreate is the params of elicitation/create with its session
// scope (the schema's ElicitationSessionScope: sessionId, and toolCallId
// when a tool call asks), which acp-go-sdk's
// UnstableCreateElicitationRequest leaves out.
type elicitationCreate struct {
	acpsdk.UnstableCreateElicitationRequest
	SessionID  acpsdk.SessionId
	ToolCallID string
}

// MarshalJSON writes the request's members and the session scope beside
// them.
func (e elicitationCreate) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(e.UnstableCreateElicitationRequest)
	if err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return nil, err
	}
	if members["sessionId"], err = json.Marshal(e.SessionID); err != nil {
		return nil, err
	}
	if e.ToolCallID != "" {
		if members["toolCallId"], err = json.Marshal(e.ToolCallID); err != nil {
			return nil, err
		}
	}
	return json.Marshal(members)
}

// mcpMessage is the params of mcp/message in the published binding of
// MCP-over-ACP (schema.unstable.json MessageMcpRequest, which the agent
// sends, and MessageMcpNotification, which it receives): the inner MCP
// request or notification of the declared server serverId, for the inner
// request requestId (the caller's, distinct from the outer JSON-RPC id).
type mcpMessage struct {
	Meta      map[string]any  `json:"_meta,omitempty"`
	ServerID  string          `json:"serverId"`
	RequestID string          `json:"requestId"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params,omitempty"`
}

// mcpOutcome is the result of the published mcp/message request
// (MessageMcpResponse): exactly one inner MCP outcome, result (any JSON
// value, null included: present is what counts) or error.
type mcpOutcome struct {
	Meta   map[string]any  `json:"_meta,omitempty"`
	Result json.RawMessage `json:"result"`
	Error  *mcpError       `json:"error,omitempty"`
}

// mcpError is an inner MCP error (McpError): an MCP code, never an ACP one.
type mcpError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}
