package remote

import (
	"encoding/json"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
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
	// Thinking and ThinkingOn are gateway.ModelInfo's: a turn can turn the
	// model's extended thinking on or off, and whether it thinks by
	// default.
	Thinking   bool `json:"thinking,omitempty"`
	ThinkingOn bool `json:"thinkingOn,omitempty"`
	// ToolSearch is gateway.ModelInfo's.
	ToolSearch bool `json:"toolSearch,omitempty"`
}

// HelloLimits are the server's wire limits.
type HelloLimits struct {
	MaxFrameBytes    int `json:"maxFrameBytes"`
	WriteQueueFrames int `json:"writeQueueFrames"`
}

// ChatSendParams is "chat.send": one prompt turn. The response comes when
// the turn ends: ChatSendResult. History, HistoryBase, Compaction and Usage
// are the session's gateway.View, which the translator keeps; all are
// absent for a new session.
type ChatSendParams struct {
	SessionKey string            `json:"sessionKey"`
	RunID      string            `json:"runId"`
	Message    []gateway.Content `json:"message"`
	Model      string            `json:"model,omitempty"`
	System     string            `json:"system,omitempty"`
	// Toggles are the session's on/off choices (gateway.Toggles).
	Toggles gateway.Toggles `json:"toggles,omitzero"`
	// Meta carries the W3C trace context of the translator's turn
	// (traceparent, tracestate: telemetry.Inject), so that the gateway's
	// model and tools/call spans join the editor's trace.
	Meta map[string]any `json:"_meta,omitempty"`
	// History is what the model sees of the conversation so far, verbatim:
	// the messages from HistoryBase on (gateway.View.Messages).
	History []gateway.Message `json:"history,omitempty"`
	// HistoryBase is the index of History[0] in the whole conversation:
	// Compaction.From, or 0 without a compaction.
	HistoryBase int `json:"historyBase,omitempty"`
	// Compaction is the session's latest compaction, or nil: its summary
	// stands for the messages before HistoryBase.
	Compaction *gateway.Compaction `json:"compaction,omitempty"`
	// Usage is the session's usage so far.
	Usage gateway.Usage `json:"usage,omitzero"`
	// SessionID is the stored session the turn belongs to, when the
	// gateway keeps the translator's sessions (sessions extension): the
	// turn runs under that session's lease, and only the session's tenant
	// may run it.
	SessionID string `json:"sessionId,omitempty"`
	// HistoryLease, with SessionID, is the lease token (leaseToken) of the
	// turn the history ends with, when the translator ran that turn and
	// committed it: if this turn's lease is the next one (HistoryLease+1),
	// no other translator or replica can have written the session since,
	// and the gateway takes the history as it comes. Otherwise (0: unknown,
	// as right after session/load) it compares the history with the stored
	// session's and runs the turn on the stored one when they differ
	// (ChatSendResult.HistoryReloaded).
	HistoryLease int64 `json:"historyLease,omitempty"`
}

// shownID names the session the turn belongs to in the translator's
// words: the stored session's id, else the wire session key.
func (p ChatSendParams) shownID() string {
	if p.SessionID != "" {
		return p.SessionID
	}
	return p.SessionKey
}

// view returns the gateway.View the params carry, or a bad_request error
// when it is not one: a negative historyBase, or one that is not the
// compaction's from (0 without a compaction).
func (p ChatSendParams) view() (gateway.View, error) {
	v := gateway.View{Messages: p.History, Base: p.HistoryBase, Compaction: p.Compaction, Usage: p.Usage}
	if len(v.Messages) == 0 {
		v.Messages = nil
	}
	switch {
	case p.HistoryBase < 0:
		return gateway.View{}, badRequest("chat.send: historyBase %d is negative", p.HistoryBase)
	case p.Compaction == nil && p.HistoryBase != 0:
		return gateway.View{}, badRequest("chat.send: historyBase %d without a compaction: the messages before it would be lost", p.HistoryBase)
	case p.Compaction != nil && p.Compaction.From != p.HistoryBase:
		return gateway.View{}, badRequest("chat.send: historyBase %d is not the compaction's from (%d)", p.HistoryBase, p.Compaction.From)
	}
	return v, nil
}

// ChatSendResult ends a turn: the gateway.Turn the translator adds to the
// session's history (and store): its stop reason, its messages, its usage
// and the compaction it made, if any.
type ChatSendResult struct {
	StopReason gateway.StopReason `json:"stopReason"`
	Messages   []gateway.Message  `json:"messages"`
	// Usage is the tokens of the turn's model requests; absent when none
	// were counted (the direct model).
	Usage gateway.Usage `json:"usage,omitzero"`
	// Compaction is the compaction the turn made, or nil: from this turn on
	// the model sees its summary and the messages from its from on.
	Compaction *gateway.Compaction `json:"compaction,omitempty"`
	// LeaseToken is the fencing token of the lease the turn ran under,
	// when chat.send named a sessionId: the translator passes it with the
	// turn's sessions.appendTurn, which fails (conflict) once a later turn
	// of the session has taken the lease.
	LeaseToken int64 `json:"leaseToken,omitempty"`
	// HistoryReloaded says that the history chat.send carried was not the
	// stored session's (another translator or replica wrote turns since
	// this translator read it), so the turn ran on the stored history: the
	// translator reloads the session's history (sessions.turns) before it
	// adds the turn.
	HistoryReloaded bool `json:"historyReloaded,omitempty"`
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

// ChatEvent is the params of the "chat" notifications of a turn: a delta, a
// tool step, a compaction or the turn's usage ("text", "thought",
// "tool_start", "tool_update", "tool_end", "compaction", "usage"; see
// eventKindNames). The turn's end is the "chat.final", "chat.error" or
// "chat.aborted" event.
type ChatEvent struct {
	SessionKey string                 `json:"sessionKey"`
	RunID      string                 `json:"runId"`
	Kind       string                 `json:"kind"`
	Text       string                 `json:"text,omitempty"`
	Call       *gateway.ToolCallEvent `json:"call,omitempty"`
	// Usage is set for "usage", Compaction for "compaction".
	Usage      *WireUsageReport      `json:"usage,omitempty"`
	Compaction *WireCompactionReport `json:"compaction,omitempty"`
	StopReason gateway.StopReason    `json:"stopReason,omitempty"`
	Error      string                `json:"error,omitempty"`
	// Seq numbers the sender's notifications, from 1.
	Seq uint64 `json:"seq"`
}

func (e *ChatEvent) setSeq(n uint64) { e.Seq = n }

// chatEvent returns the "chat" notification of e, which has one of
// eventKindNames' kinds.
func chatEvent(sessionKey, runID string, e gateway.Event) *ChatEvent {
	ce := &ChatEvent{SessionKey: sessionKey, RunID: runID, Kind: eventKindNames[e.Kind], Text: e.Text, Call: e.Call}
	if u := e.Usage; u != nil {
		ce.Usage = &WireUsageReport{Turn: u.Turn, Session: u.Session, Used: u.Used, Size: u.Size}
	}
	if c := e.Compaction; c != nil {
		ce.Compaction = &WireCompactionReport{Summary: c.Summary, Before: c.Before, After: c.After, Reason: c.Reason, Error: c.Err}
	}
	return ce
}

// event returns the gateway.Event of a "chat" notification, and false for
// a kind this version does not know (a newer gateway's: the translator
// skips it).
func (e *ChatEvent) event() (gateway.Event, bool) {
	for kind, name := range eventKindNames {
		if name != e.Kind {
			continue
		}
		ev := gateway.Event{Kind: kind, Text: e.Text, Call: e.Call}
		if u := e.Usage; u != nil {
			ev.Usage = &gateway.UsageReport{Turn: u.Turn, Session: u.Session, Used: u.Used, Size: u.Size}
		}
		if c := e.Compaction; c != nil {
			ev.Compaction = &gateway.CompactionReport{Summary: c.Summary, Before: c.Before, After: c.After, Reason: c.Reason, Err: c.Error}
		}
		return ev, true
	}
	return gateway.Event{}, false
}

// WireUsageReport is a gateway.UsageReport on the wire: the "usage" event
// that ends a turn that asked a model.
type WireUsageReport struct {
	// Turn is the usage of the turn's model requests; Session the
	// session's so far, this turn included.
	Turn    gateway.Usage `json:"turn"`
	Session gateway.Usage `json:"session"`
	// Used is the tokens in the model's context after the turn, Size the
	// model's context window in tokens (absent when unknown).
	Used int64 `json:"used,omitempty"`
	Size int64 `json:"size,omitempty"`
}

// WireCompactionReport is a gateway.CompactionReport on the wire: the
// "compaction" event. Error, when set, says why the compaction failed (the
// turn goes on without it).
type WireCompactionReport struct {
	Summary string `json:"summary,omitempty"`
	// Before and After are the request's estimated tokens before and after.
	Before int64 `json:"before,omitempty"`
	After  int64 `json:"after,omitempty"`
	// Reason is "threshold", "too_long" or "command".
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ToolsUpdateParams is the "tools.update" notification, translator →
// gateway: progress of a tool call in flight.
type ToolsUpdateParams struct {
	ToolCallID string             `json:"toolCallId"`
	Update     gateway.ToolUpdate `json:"update"`
	// Seq numbers the sender's notifications, from 1.
	Seq uint64 `json:"seq"`
}

func (u *ToolsUpdateParams) setSeq(n uint64) { u.Seq = n }

// eventKindNames are the "chat" notifications' kinds, by event kind.
var eventKindNames = map[gateway.EventKind]string{
	gateway.EventTextDelta: "text", gateway.EventThoughtDelta: "thought",
	gateway.EventToolStart: "tool_start", gateway.EventToolUpdate: "tool_update", gateway.EventToolEnd: "tool_end",
	gateway.EventUsage: "usage", gateway.EventCompaction: "compaction",
}

var permissionOutcomes = map[gateway.PermissionOutcome]string{
	gateway.PermissionAllowOnce: "allow_once", gateway.PermissionAllowAlways: "allow_always",
	gateway.PermissionReject: "reject", gateway.PermissionCancelled: "cancelled",
	gateway.PermissionUnavailable: "unavailable",
}

// WireRecord is a stored session on the wire (sessions extension): a
// [store.Record] without its tenant, which the gateway takes from the
// connection's token.
type WireRecord struct {
	ID      string         `json:"id"`
	Key     string         `json:"key"`
	Cwd     string         `json:"cwd"`
	Title   string         `json:"title,omitempty"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
	Servers []store.Server `json:"servers,omitempty"`
	Model   string         `json:"model,omitempty"`
	// Usage is the session's usage total (store.Record.Usage); absent
	// when zero.
	Usage gateway.Usage `json:"usage,omitzero"`
}

func wireRecord(r store.Record) WireRecord {
	return WireRecord{ID: r.ID, Key: r.Key, Cwd: r.Cwd, Title: r.Title, Created: r.Created, Updated: r.Updated, Servers: r.Servers, Model: r.Model, Usage: r.Usage}
}

func (w WireRecord) record(tenant string) store.Record {
	return store.Record{ID: w.ID, Key: w.Key, Cwd: w.Cwd, Title: w.Title, Created: w.Created, Updated: w.Updated, Servers: w.Servers, Model: w.Model, Tenant: tenant, Usage: w.Usage}
}

// WireTurn is a committed turn on the wire (sessions extension): a
// [store.Turn].
type WireTurn struct {
	Messages   []gateway.Message  `json:"messages"`
	StopReason gateway.StopReason `json:"stopReason"`
	// Usage is the turn's usage; absent when zero.
	Usage gateway.Usage `json:"usage,omitzero"`
	// Compaction is the compaction the turn made, or nil.
	Compaction *gateway.Compaction `json:"compaction,omitempty"`
}

func wireTurn(t store.Turn) WireTurn {
	return WireTurn{Messages: t.Messages, StopReason: t.StopReason, Usage: t.Usage, Compaction: t.Compaction}
}

func (w WireTurn) turn() store.Turn {
	return store.Turn{Messages: w.Messages, StopReason: w.StopReason, Usage: w.Usage, Compaction: w.Compaction}
}

// SessionIDParams is "sessions.get" (result: WireRecord),
// "sessions.turns" (result: SessionTurnsResult) and "sessions.delete"
// (result: {}).
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
	ID      string         `json:"id"`
	Servers []store.Server `json:"servers"`
}

// SessionSetModelParams is "sessions.setModel"; the result is {}.
type SessionSetModelParams struct {
	ID    string `json:"id"`
	Model string `json:"model"`
}

// SessionSetTitleParams is "sessions.setTitle"; the result is {}.
type SessionSetTitleParams struct {
	ID    string `json:"id"`
	Title string `json:"title"`
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
