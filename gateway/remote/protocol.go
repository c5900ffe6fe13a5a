package remote

import (
	"encoding/json"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// Parameters and results of the gateway protocol's methods
// (docs/gateway-protocol.md).

// ConnectParams is the first request of a translator: "connect".
type ConnectParams struct {
	Protocol int      `json:"protocol"`
	Client   PeerInfo `json:"client"`
	Token    string   `json:"token,omitempty"`
	// Extensions names the protocol extensions the translator wants, each
	// with its version, such as {"sessions": 1} ([ExtSessions]). The
	// gateway enables those it supports and says which in hello.
	Extensions map[string]int `json:"extensions,omitempty"`
}

// Protocol extensions (docs/gateway-protocol.md, "Extensions").
const (
	// ExtSessions is the session store extension: the sessions.* store
	// methods (sessions.create ... sessions.turns), served by a gateway
	// that keeps a store. Its version is [ExtSessionsVersion].
	ExtSessions = "sessions"
	// ExtSessionsVersion is the version of the sessions extension.
	ExtSessionsVersion = 1
)

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
	// Extensions are the extensions enabled on this connection: those the
	// translator asked for that this gateway supports, at the version
	// asked. Absent when none.
	Extensions map[string]int `json:"extensions,omitempty"`
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
	// SessionID is the stored session the turn belongs to, when the
	// gateway keeps the translator's sessions (sessions extension): the
	// turn runs under that session's lease, and only the session's tenant
	// may run it.
	SessionID string `json:"sessionId,omitempty"`
}

// ChatSendResult ends a turn: its stop reason and its messages, which the
// translator adds to the session's history.
type ChatSendResult struct {
	StopReason gateway.StopReason `json:"stopReason"`
	Messages   []gateway.Message  `json:"messages"`
	// LeaseToken is the fencing token of the lease the turn ran under,
	// when chat.send named a sessionId: the translator passes it with the
	// turn's sessions.appendTurn, which fails (conflict) once a later turn
	// of the session has taken the lease.
	LeaseToken int64 `json:"leaseToken,omitempty"`
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

// WireRecord is a stored session on the wire (sessions extension): a
// [session.Record] without its tenant, which the gateway takes from the
// connection's token.
type WireRecord struct {
	ID      string           `json:"id"`
	Key     string           `json:"key"`
	Cwd     string           `json:"cwd"`
	Title   string           `json:"title,omitempty"`
	Created time.Time        `json:"created"`
	Updated time.Time        `json:"updated"`
	Servers []session.Server `json:"servers,omitempty"`
	Model   string           `json:"model,omitempty"`
}

func wireRecord(r session.Record) WireRecord {
	return WireRecord{ID: r.ID, Key: r.Key, Cwd: r.Cwd, Title: r.Title, Created: r.Created, Updated: r.Updated, Servers: r.Servers, Model: r.Model}
}

func (w WireRecord) record(tenant string) session.Record {
	return session.Record{ID: w.ID, Key: w.Key, Cwd: w.Cwd, Title: w.Title, Created: w.Created, Updated: w.Updated, Servers: w.Servers, Model: w.Model, Tenant: tenant}
}

// WireTurn is a committed turn on the wire (sessions extension).
type WireTurn struct {
	Messages   []gateway.Message  `json:"messages"`
	StopReason gateway.StopReason `json:"stopReason"`
}

// SessionIDParams is "sessions.get" (result: WireRecord) and
// "sessions.turns" (result: SessionTurnsResult).
type SessionIDParams struct {
	ID string `json:"id"`
}

// SessionTurnsResult answers sessions.turns: every committed turn, oldest
// first.
type SessionTurnsResult struct {
	Turns []WireTurn `json:"turns"`
}

// SessionCreateParams is "sessions.create"; the result is {}.
type SessionCreateParams struct {
	Record WireRecord `json:"record"`
}

// SessionSetServersParams is "sessions.setServers"; the result is {}.
type SessionSetServersParams struct {
	ID      string           `json:"id"`
	Servers []session.Server `json:"servers"`
}

// SessionSetModelParams is "sessions.setModel"; the result is {}.
type SessionSetModelParams struct {
	ID    string `json:"id"`
	Model string `json:"model"`
}

// SessionListParams is "sessions.list": the connection's tenant's sessions,
// newest first, a page at a time (limit 0: 50).
type SessionListParams struct {
	Cwd    string `json:"cwd,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// SessionListResult answers sessions.list; nextCursor is "" at the end.
type SessionListResult struct {
	Sessions   []WireRecord `json:"sessions"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

// SessionAppendTurnParams is "sessions.appendTurn"; the result is {}.
// LeaseToken, when not 0, fences the write: it is the token chat.send
// returned for this turn (ChatSendResult.LeaseToken).
type SessionAppendTurnParams struct {
	ID         string   `json:"id"`
	Turn       WireTurn `json:"turn"`
	LeaseToken int64    `json:"leaseToken,omitempty"`
}
