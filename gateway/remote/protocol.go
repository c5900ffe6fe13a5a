package remote

import (
	"encoding/json"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Parameters and results of the gateway protocol's methods
// (docs/gateway-protocol.md).

// ConnectParams is the first request of a translator: "connect".
type ConnectParams struct {
	Protocol int      `json:"protocol"`
	Client   PeerInfo `json:"client"`
	Token    string   `json:"token,omitempty"`
}

// PeerInfo names a program and its version.
type PeerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Hello answers connect.
type Hello struct {
	Protocol int         `json:"protocol"`
	Server   PeerInfo    `json:"server"`
	Limits   HelloLimits `json:"limits"`
	Models   []WireModel `json:"models"`
}

// WireModel is a model the gateway offers (hello.models): its id, as
// chat.send's model takes it, and a label for menus.
type WireModel struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// HelloLimits are the server's wire limits.
type HelloLimits struct {
	MaxFrameBytes    int `json:"maxFrameBytes"`
	WriteQueueFrames int `json:"writeQueueFrames"`
}

// ChatSendParams is "chat.send": one prompt turn. The response comes when
// the turn ends: ChatSendResult.
type ChatSendParams struct {
	SessionKey string            `json:"sessionKey"`
	RunID      string            `json:"runId"`
	Message    []gateway.Content `json:"message"`
	Model      string            `json:"model,omitempty"`
	System     string            `json:"system,omitempty"`
	// History is the conversation so far: the translator keeps it.
	History []gateway.Message `json:"history,omitempty"`
}

// ChatSendResult ends a turn: its stop reason and its messages, which the
// translator adds to the session's history.
type ChatSendResult struct {
	StopReason gateway.StopReason `json:"stopReason"`
	Messages   []gateway.Message  `json:"messages"`
}

// ChatAbortParams is "chat.abort".
type ChatAbortParams struct {
	SessionKey string `json:"sessionKey"`
	RunID      string `json:"runId"`
}

// WireTool is a tool definition on the wire (sessions.setExtraTools).
type WireTool struct {
	Name        string              `json:"name"`
	Label       string              `json:"label,omitempty"`
	Group       string              `json:"group,omitempty"`
	Description string              `json:"description,omitempty"`
	InputSchema json.RawMessage     `json:"inputSchema,omitempty"`
	Annotations gateway.Annotations `json:"annotations"`
	// Kind is the tool's ACP tool kind, when it declares one.
	Kind gateway.ToolKind `json:"kind,omitempty"`
}

// SetExtraToolsParams is "sessions.setExtraTools".
type SetExtraToolsParams struct {
	SessionKey string     `json:"sessionKey"`
	Tools      []WireTool `json:"tools"`
}

// SessionKeyParams is "sessions.clearExtraTools".
type SessionKeyParams struct {
	SessionKey string `json:"sessionKey"`
}

// ToolsInvokeParams is "tools.invoke", gateway → translator; the result is
// a Result.
type ToolsInvokeParams struct {
	SessionKey string `json:"sessionKey"`
	// RunID is the turn's run id when the gateway knows it; today it is
	// not sent.
	RunID      string         `json:"runId,omitempty"`
	ToolCallID string         `json:"toolCallId"`
	Name       string         `json:"name"`
	Args       map[string]any `json:"args"`
}

// PermissionParams is "permission.request", gateway → translator; the
// result is PermissionResult.
type PermissionParams struct {
	SessionKey string                `json:"sessionKey"`
	RunID      string                `json:"runId"`
	Call       gateway.ToolCallEvent `json:"call"`
}

// PermissionResult answers permission.request: "allow_once",
// "allow_always", "reject" or "cancelled".
type PermissionResult struct {
	Outcome string `json:"outcome"`
}

// ChatEvent is the params of the "chat" notifications of a turn: a delta or a
// tool step ("text", "thought", "tool_start", "tool_update", "tool_end").
// The turn's end is the "chat.final", "chat.error" or "chat.aborted" event.
type ChatEvent struct {
	SessionKey string                 `json:"sessionKey"`
	RunID      string                 `json:"runId"`
	Kind       string                 `json:"kind"`
	Text       string                 `json:"text,omitempty"`
	Call       *gateway.ToolCallEvent `json:"call,omitempty"`
	StopReason gateway.StopReason     `json:"stopReason,omitempty"`
	Error      string                 `json:"error,omitempty"`
	// Seq numbers the sender's notifications, from 1.
	Seq uint64 `json:"seq"`
}

func (e *ChatEvent) setSeq(n uint64) { e.Seq = n }

// ToolsUpdateParams is the "tools.update" notification, translator →
// gateway: progress of a tool call in flight.
type ToolsUpdateParams struct {
	ToolCallID string             `json:"toolCallId"`
	Update     gateway.ToolUpdate `json:"update"`
	// Seq numbers the sender's notifications, from 1.
	Seq uint64 `json:"seq"`
}

func (u *ToolsUpdateParams) setSeq(n uint64) { u.Seq = n }

var eventKindNames = map[gateway.EventKind]string{
	gateway.EventTextDelta: "text", gateway.EventThoughtDelta: "thought",
	gateway.EventToolStart: "tool_start", gateway.EventToolUpdate: "tool_update", gateway.EventToolEnd: "tool_end",
}

var permissionOutcomes = map[gateway.PermissionOutcome]string{
	gateway.PermissionAllowOnce: "allow_once", gateway.PermissionAllowAlways: "allow_always",
	gateway.PermissionReject: "reject", gateway.PermissionCancelled: "cancelled",
	gateway.PermissionUnavailable: "unavailable",
}
