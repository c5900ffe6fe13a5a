package acp

import (
	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Subagents (the schema's unstable subagent sessions): a task call's child
// run (gateway.SubagentEvent) is a session of its own, named by its
// parent's sessionId, "/" and its name (childID). To a client that
// advertised clientCapabilities.subagents, a subagent_update on the parent
// announces it (title, description, state running) before any of its own
// updates, which follow under the child's sessionId (its task first, as a
// user message), and a last
// subagent_update says it is idle (stop reason, usage). To other clients
// the child's progress is folded into the parent's task call: a
// tool_call_update whose content is the running summary, at the child's
// start, each of its tool calls' start and end, and its end; the call's
// own end then shows the child's answer.

// subagentsOn reports whether the client shows child sessions.
func (a *Agent) subagentsOn() bool { return a.client.subagents.Load() }

// childID is the sessionId of the child run name of session parent.
func childID(parent, name string) string { return parent + "/" + name }

// subagentUpdates maps a child's event of session parent to its
// session/updates: shown, the child's own (on the child's session, after
// its announcement); else folded into the task call.
func subagentUpdates(parent string, e *gateway.SubagentEvent, shown bool) []update {
	child := childID(parent, e.Name)
	if !shown {
		if e.Event != nil && e.Event.Kind != gateway.EventToolStart && e.Event.Kind != gateway.EventToolEnd {
			return nil
		}
		text := e.Title + ": " + e.Progress
		return []update{sdkUpdate(acpsdk.UpdateToolCall(acpsdk.ToolCallId(e.CallID),
			acpsdk.WithUpdateContent([]acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(text))})))}
	}
	switch {
	case e.Event != nil:
		us := sessionUpdates(*e.Event)
		for i := range us {
			us[i].Session = child
		}
		return us
	case e.State == gateway.SubagentRunning:
		out := []update{{Subagent: &subagentUpdate{SessionID: acpsdk.SessionId(child), Title: e.Title, Description: e.Description,
			State: &subagentState{State: "running"}}}}
		if e.Prompt != "" { // the child's task, as its replay shows it
			task := sdkUpdate(acpsdk.UpdateUserMessageText(e.Prompt))
			task.Session = child
			out = append(out, task)
		}
		return out
	}
	return []update{idleUpdate(child, e.Stop, e.Usage)}
}

// idleUpdate is the subagent_update of a child whose work ended.
func idleUpdate(child string, stop gateway.StopReason, u gateway.Usage) update {
	st := &subagentState{State: "idle", StopReason: string(stop)}
	if u.Requests > 0 {
		st.Usage = turnUsage(u)
	}
	return update{Subagent: &subagentUpdate{SessionID: acpsdk.SessionId(child), State: st}}
}

// replaySubagent is the replay of a stored child run of session parent to
// a client that shows child sessions: its announcement, its turn on its
// own session, its end.
func replaySubagent(parent string, sub *gateway.Subagent) []update {
	child := childID(parent, sub.Name)
	out := []update{{Subagent: &subagentUpdate{SessionID: acpsdk.SessionId(child), Title: sub.Title, Description: sub.Description,
		State: &subagentState{State: "running"}}}}
	for _, u := range replayTurn(sub.Turn.Messages, "", false) {
		u.Session = child
		out = append(out, u)
	}
	return append(out, idleUpdate(child, sub.Turn.StopReason, sub.Turn.Usage))
}
