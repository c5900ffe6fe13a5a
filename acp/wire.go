package acp

import (
	"encoding/json"
	"errors"

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

// mcpConnectParams is the params of mcp/connect in either schema of the
// MCP-over-ACP proposal (acpsdk.UnstableConnectMcpRequest has only acpId;
// the 2026 schema names it serverId).
type mcpConnectParams struct {
	Meta     map[string]any `json:"_meta,omitempty"`
	AcpID    string         `json:"acpId,omitempty"`
	ServerID string         `json:"serverId,omitempty"`
}

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

// methodSessionSetTitle is the unstable session/set_title (schema
// SetSessionTitleRequest), which acp-go-sdk v0.13.5 does not have.
const methodSessionSetTitle = "session/set_title"

// setSessionTitleRequest is the params of session/set_title: the session
// to retitle, live or only stored, and its new title (required, a string).
type setSessionTitleRequest struct {
	Meta      map[string]any   `json:"_meta,omitempty"`
	SessionID acpsdk.SessionId `json:"sessionId"`
	Title     *string          `json:"title"`
}

// Validate implements decodeParams' check: title is required and not
// null.
func (r *setSessionTitleRequest) Validate() error {
	if r.Title == nil {
		return errors.New("title is required (a string)")
	}
	return nil
}

// setSessionTitleResponse is the result of session/set_title: the title
// stored, after normalization.
type setSessionTitleResponse struct {
	Meta  map[string]any `json:"_meta,omitempty"`
	Title string         `json:"title"`
}

// initializeResponse is acp-go-sdk's InitializeResponse with
// agentCapabilities.sessionCapabilities.title (the unstable
// SessionTitleCapabilities, {} when session/set_title is served), which
// its SessionCapabilities lacks.
type initializeResponse struct {
	acpsdk.InitializeResponse
	// Title, when true, writes sessionCapabilities.title as {}.
	Title bool
}

// MarshalJSON writes the response with sessionCapabilities.title added.
func (r initializeResponse) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.InitializeResponse)
	if err != nil || !r.Title {
		return b, err
	}
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, err
	}
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(resp["agentCapabilities"], &caps); err != nil {
		return nil, err
	}
	var sc map[string]json.RawMessage
	if raw, ok := caps["sessionCapabilities"]; ok {
		if err := json.Unmarshal(raw, &sc); err != nil {
			return nil, err
		}
	}
	if sc == nil {
		sc = map[string]json.RawMessage{}
	}
	sc["title"] = json.RawMessage("{}")
	if caps["sessionCapabilities"], err = json.Marshal(sc); err != nil {
		return nil, err
	}
	if resp["agentCapabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}
