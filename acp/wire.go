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

// update is one session/update's update as the agent sends it:
// acp-go-sdk's SessionUpdate, with what the current schema adds that
// acp-go-sdk v0.13 lacks. Notice, when set, is the whole update.
type update struct {
	acpsdk.SessionUpdate
	// ToolName is a tool_call's `name` (the schema's ToolCall.name): the
	// tool's name as the model calls it, such as mcp__everything__echo.
	// Empty leaves it out.
	ToolName string
	// Notice, if set, is a `notice` update (the schema's Notice): sent only
	// to a client that advertised session.notices (notices.go).
	Notice *notice
	// Compaction and CompactionChunk, if set, are the whole update: a
	// compaction_update or a compaction_summary_chunk, sent only to a
	// client that advertised session.compaction (compaction.go).
	Compaction      *compactionUpdate
	CompactionChunk *compactionSummaryChunk
	// Subagent, if set, is a `subagent_update` (the schema's unstable
	// SubagentUpdate), the whole update: sent only to a client that
	// advertised clientCapabilities.subagents (subagents.go).
	Subagent *subagentUpdate
	// Session, if set, is the session the update is sent on instead of
	// the one it is sent for: a child's (subagents.go).
	Session string
}

// sdkUpdate is u as an update.
func sdkUpdate(u acpsdk.SessionUpdate) update { return update{SessionUpdate: u} }

// MarshalJSON writes the notice, the compaction update or chunk, the
// tool_call with its name, or else acp-go-sdk's update.
func (u update) MarshalJSON() ([]byte, error) {
	switch {
	case u.Notice != nil:
		return json.Marshal(struct {
			SessionUpdate string `json:"sessionUpdate"`
			*notice
		}{"notice", u.Notice})
	case u.Compaction != nil:
		return json.Marshal(struct {
			SessionUpdate string `json:"sessionUpdate"`
			*compactionUpdate
		}{"compaction_update", u.Compaction})
	case u.CompactionChunk != nil:
		return json.Marshal(struct {
			SessionUpdate string `json:"sessionUpdate"`
			*compactionSummaryChunk
		}{"compaction_summary_chunk", u.CompactionChunk})
	case u.Subagent != nil:
		return json.Marshal(struct {
			SessionUpdate string `json:"sessionUpdate"`
			*subagentUpdate
		}{"subagent_update", u.Subagent})
	}
	return marshalUpdate(u.SessionUpdate, u.ToolName)
}

// marshalUpdate writes u as acp-go-sdk's SessionUpdate.MarshalJSON does
// (its variant with its sessionUpdate discriminator), in one pass, with
// name as a tool_call's `name` when not empty. acp-go-sdk marshals a
// variant, decodes it into a map and marshals that again, at every level of
// nesting (a content block in a tool call's content in an update): a fifth
// of the agent's CPU on a /call turn. The variants a turn sends (message
// chunks, tool calls and their updates, session_info_update) and those
// with no union inside are written so; the others go through acp-go-sdk.
func marshalUpdate(u acpsdk.SessionUpdate, name string) ([]byte, error) {
	switch {
	case u.AgentMessageChunk != nil:
		c := u.AgentMessageChunk
		return json.Marshal(chunkJSON{c.Meta, contentBlockOf(c.Content), c.MessageId, "agent_message_chunk"})
	case u.AgentThoughtChunk != nil:
		c := u.AgentThoughtChunk
		return json.Marshal(chunkJSON{c.Meta, contentBlockOf(c.Content), c.MessageId, "agent_thought_chunk"})
	case u.UserMessageChunk != nil:
		c := u.UserMessageChunk
		return json.Marshal(chunkJSON{c.Meta, contentBlockOf(c.Content), c.MessageId, "user_message_chunk"})
	case u.ToolCall != nil:
		c := u.ToolCall
		return json.Marshal(toolCallJSON{c.Meta, toolCallContents(c.Content), c.Kind, c.Locations, c.RawInput, c.RawOutput, "tool_call", c.Status, c.Title, c.ToolCallId, name})
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		return json.Marshal(toolCallUpdateJSON{c.Meta, toolCallContents(c.Content), c.Kind, c.Locations, c.RawInput, c.RawOutput, "tool_call_update", c.Status, c.Title, c.ToolCallId})
	case u.SessionInfoUpdate != nil:
		v := *u.SessionInfoUpdate
		v.SessionUpdate = "session_info_update"
		return json.Marshal(v)
	case u.UsageUpdate != nil:
		v := *u.UsageUpdate
		v.SessionUpdate = "usage_update"
		return json.Marshal(v)
	case u.CurrentModeUpdate != nil:
		v := *u.CurrentModeUpdate
		v.SessionUpdate = "current_mode_update"
		return json.Marshal(v)
	case u.Plan != nil:
		v := *u.Plan
		v.SessionUpdate = "plan"
		return json.Marshal(v)
	}
	return u.MarshalJSON()
}

// The variants marshalUpdate writes whose acp-go-sdk struct holds a union
// (SessionUpdate*MessageChunk, SessionUpdateToolCall, SessionToolCallUpdate):
// their members in their order (sorted, as acp-go-sdk writes them), the
// unions inside as plain structs (contentBlockJSON, toolCallContentJSON),
// and a tool_call's `name` last. Plain structs, no MarshalJSON below the
// update's: each nested json.Marshal validated and copied its output again
// and grew the stack of the request's goroutine, new for each request.
// TestMarshalUpdate_MirrorsAcpGoSDK checks the members against
// acp-go-sdk's.
type (
	chunkJSON struct {
		Meta          map[string]any   `json:"_meta,omitempty"`
		Content       contentBlockJSON `json:"content"`
		MessageId     *string          `json:"messageId,omitempty"`
		SessionUpdate string           `json:"sessionUpdate"`
	}
	toolCallJSON struct {
		Meta          map[string]any            `json:"_meta,omitempty"`
		Content       []toolCallContentJSON     `json:"content,omitempty"`
		Kind          acpsdk.ToolKind           `json:"kind,omitempty"`
		Locations     []acpsdk.ToolCallLocation `json:"locations,omitempty"`
		RawInput      any                       `json:"rawInput,omitempty"`
		RawOutput     any                       `json:"rawOutput,omitempty"`
		SessionUpdate string                    `json:"sessionUpdate"`
		Status        acpsdk.ToolCallStatus     `json:"status,omitempty"`
		Title         string                    `json:"title"`
		ToolCallId    acpsdk.ToolCallId         `json:"toolCallId"`
		Name          string                    `json:"name,omitempty"`
	}
	toolCallUpdateJSON struct {
		Meta          map[string]any            `json:"_meta,omitempty"`
		Content       []toolCallContentJSON     `json:"content,omitempty"`
		Kind          *acpsdk.ToolKind          `json:"kind,omitempty"`
		Locations     []acpsdk.ToolCallLocation `json:"locations,omitempty"`
		RawInput      any                       `json:"rawInput,omitempty"`
		RawOutput     any                       `json:"rawOutput,omitempty"`
		SessionUpdate string                    `json:"sessionUpdate"`
		Status        *acpsdk.ToolCallStatus    `json:"status,omitempty"`
		Title         *string                   `json:"title,omitempty"`
		ToolCallId    acpsdk.ToolCallId         `json:"toolCallId"`
	}
	// contentBlockJSON is a ContentBlock: the members of its variants
	// (text, image, audio, resource_link, resource), sorted, a variant's
	// own set and its type. A member a variant requires is a pointer set
	// for it; an embedded resource's resource goes through acp-go-sdk.
	contentBlockJSON struct {
		Meta        map[string]any      `json:"_meta,omitempty"`
		Annotations *acpsdk.Annotations `json:"annotations,omitempty"`
		Data        *string             `json:"data,omitempty"`
		Description *string             `json:"description,omitempty"`
		MimeType    *string             `json:"mimeType,omitempty"`
		Name        *string             `json:"name,omitempty"`
		Resource    any                 `json:"resource,omitempty"`
		Size        *int                `json:"size,omitempty"`
		Text        *string             `json:"text,omitempty"`
		Title       *string             `json:"title,omitempty"`
		Type        string              `json:"type"`
		Uri         *string             `json:"uri,omitempty"`
	}
	// toolCallContentJSON is a ToolCallContent: the members of its
	// variants (content, diff, terminal), sorted, as contentBlockJSON.
	toolCallContentJSON struct {
		Meta       map[string]any    `json:"_meta,omitempty"`
		Content    *contentBlockJSON `json:"content,omitempty"`
		NewText    *string           `json:"newText,omitempty"`
		OldText    *string           `json:"oldText,omitempty"`
		Path       *string           `json:"path,omitempty"`
		TerminalId *string           `json:"terminalId,omitempty"`
		Type       string            `json:"type"`
	}
)

// contentBlockOf is c as a contentBlockJSON.
func contentBlockOf(c acpsdk.ContentBlock) contentBlockJSON {
	switch {
	case c.Text != nil:
		v := c.Text
		return contentBlockJSON{Meta: v.Meta, Annotations: v.Annotations, Text: &v.Text, Type: "text"}
	case c.Image != nil:
		v := c.Image
		return contentBlockJSON{Meta: v.Meta, Annotations: v.Annotations, Data: &v.Data, MimeType: &v.MimeType, Type: "image", Uri: v.Uri}
	case c.Audio != nil:
		v := c.Audio
		return contentBlockJSON{Meta: v.Meta, Annotations: v.Annotations, Data: &v.Data, MimeType: &v.MimeType, Type: "audio"}
	case c.ResourceLink != nil:
		v := c.ResourceLink
		return contentBlockJSON{Meta: v.Meta, Annotations: v.Annotations, Description: v.Description, MimeType: v.MimeType, Name: &v.Name,
			Size: v.Size, Title: v.Title, Type: "resource_link", Uri: &v.Uri}
	case c.Resource != nil:
		v := c.Resource
		return contentBlockJSON{Meta: v.Meta, Annotations: v.Annotations, Resource: v.Resource, Type: "resource"}
	}
	return contentBlockJSON{}
}

// toolCallContents is cs as toolCallContentJSON; nil when empty, as
// omitempty leaves it out.
func toolCallContents(cs []acpsdk.ToolCallContent) []toolCallContentJSON {
	if len(cs) == 0 {
		return nil
	}
	out := make([]toolCallContentJSON, len(cs))
	for i, c := range cs {
		switch {
		case c.Content != nil:
			b := contentBlockOf(c.Content.Content)
			out[i] = toolCallContentJSON{Meta: c.Content.Meta, Content: &b, Type: "content"}
		case c.Diff != nil:
			out[i] = toolCallContentJSON{Meta: c.Diff.Meta, NewText: &c.Diff.NewText, OldText: c.Diff.OldText, Path: &c.Diff.Path, Type: "diff"}
		case c.Terminal != nil:
			out[i] = toolCallContentJSON{Meta: c.Terminal.Meta, TerminalId: &c.Terminal.TerminalId, Type: "terminal"}
		}
	}
	return out
}

// sessionNotification is the params of session/update carrying an update.
type sessionNotification struct {
	SessionID acpsdk.SessionId `json:"sessionId"`
	Update    update           `json:"update"`
}

// notice is the schema's Notice (stable in v1, sent only when the client
// advertised session.notices): fire-and-forget information for the user,
// not part of the session's history.
type notice struct {
	// Severity is "info", "warning" or "error".
	Severity string `json:"severity"`
	// Title is non-empty plain text that stands alone.
	Title string `json:"title"`
	// Description is optional plain-text detail or guidance.
	Description string `json:"description,omitempty"`
}

// compactionUpdate is the schema's CompactionUpdate (sent only when the
// client advertised session.compaction): an upsert of the compaction
// CompactionID; its first update fixes where the compaction stands in the
// session's timeline.
type compactionUpdate struct {
	CompactionID string `json:"compactionId"`
	// Status is in_progress, completed, failed or cancelled.
	Status string `json:"status"`
	// Summary patches the compaction's summary: nil leaves it out (the
	// summary stays as it is), a pointer to a nil slice writes null (it
	// clears the summary), else the blocks replace it.
	Summary *[]acpsdk.ContentBlock `json:"summary,omitempty"`
	// Error is a failed compaction's human-readable reason, or empty.
	Error string `json:"error,omitempty"`
}

// compactionSummaryChunk is the schema's CompactionSummaryChunk (sent only
// when the client advertised session.compaction): one content block
// appended to the summary of the compaction CompactionID.
type compactionSummaryChunk struct {
	CompactionID string              `json:"compactionId"`
	Content      acpsdk.ContentBlock `json:"content"`
}

// subagentUpdate is the schema's unstable SubagentUpdate: on a parent
// session, a child session it owns (announced before the child's own
// updates), with its display title and description and its state.
type subagentUpdate struct {
	SessionID   acpsdk.SessionId `json:"sessionId"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	State       *subagentState   `json:"state,omitempty"`
}

// subagentState is the schema's StateUpdate: "running", or "idle" with
// the stop reason and usage of the work that ended.
type subagentState struct {
	State      string        `json:"state"`
	StopReason string        `json:"stopReason,omitempty"`
	Usage      *acpsdk.Usage `json:"usage,omitempty"`
}

// permissionRequest is the params of session/request_permission, its
// toolCall with the schema's `name` (ToolCallUpdate.name), which
// acp-go-sdk's ToolCallUpdate lacks.
type permissionRequest struct {
	SessionID acpsdk.SessionId          `json:"sessionId"`
	ToolCall  permissionToolCall        `json:"toolCall"`
	Options   []acpsdk.PermissionOption `json:"options"`
}

// permissionToolCall is a ToolCallUpdate with Name, the tool's name as
// the model calls it (empty leaves it out).
type permissionToolCall struct {
	acpsdk.ToolCallUpdate
	Name string `json:"name,omitempty"`
}

// initializeRequest is initialize's params: acp-go-sdk's, and the client's
// session capabilities (the schema's ClientSessionCapabilities), which
// acp-go-sdk v0.13 lacks.
type initializeRequest struct {
	acpsdk.InitializeRequest
	// Notices: clientCapabilities.session.notices is an object (the client
	// shows notice updates).
	Notices bool
	// BooleanOptions: clientCapabilities.session.configOptions.boolean is an
	// object (the client shows boolean config options and sets them).
	BooleanOptions bool
	// Compaction: clientCapabilities.session.compaction is an object (the
	// client shows compaction_update and compaction_summary_chunk).
	Compaction bool
	// Subagents: clientCapabilities.subagents (unstable) is an object (the
	// client shows child sessions: subagent_update and their own updates).
	Subagents bool
}

// UnmarshalJSON decodes acp-go-sdk's request, then the session
// capabilities; as the schema says of them, a malformed one counts as
// absent.
func (r *initializeRequest) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &r.InitializeRequest); err != nil {
		return err
	}
	// Each member on its own: one malformed member does not hide another.
	member := func(raw json.RawMessage, name string) json.RawMessage {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		return m[name]
	}
	session := member(member(b, "clientCapabilities"), "session")
	r.Notices = isObject(member(session, "notices"))
	r.BooleanOptions = isObject(member(member(session, "configOptions"), "boolean"))
	r.Compaction = isObject(member(session, "compaction"))
	r.Subagents = isObject(member(member(b, "clientCapabilities"), "subagents"))
	return nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
