package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

func marshalUpdates(t *testing.T, us []update) []string {
	t.Helper()
	var out []string
	for _, u := range us {
		b, err := json.Marshal(sessionNotification{SessionID: "parent", Update: u})
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if u.Session != "" {
			s = "on " + u.Session + ": " + s
		}
		out = append(out, s)
	}
	return out
}

func TestSubagentUpdates_ShownOrFolded(t *testing.T) {
	call := &gateway.ToolCallEvent{ID: "c1", Name: "echo", Title: "srv/echo", Kind: gateway.ToolKindRead, RawInput: map[string]any{}, Status: gateway.ToolInProgress}
	events := []*gateway.SubagentEvent{
		{CallID: "t1", Name: "task-t1", Title: "Find it", Description: "look", State: gateway.SubagentRunning, Prompt: "find it", Progress: "working: no tool calls yet"},
		{CallID: "t1", Name: "task-t1", Title: "Find it", State: gateway.SubagentRunning, Event: &gateway.Event{Kind: gateway.EventTextDelta, Text: "hm"}, Progress: "working: no tool calls yet"},
		{CallID: "t1", Name: "task-t1", Title: "Find it", State: gateway.SubagentRunning, Event: &gateway.Event{Kind: gateway.EventToolStart, Call: call}, Progress: "1 tool call; now: srv/echo"},
		{CallID: "t1", Name: "task-t1", Title: "Find it", State: gateway.SubagentDone, Stop: gateway.StopEndTurn, Usage: gateway.Usage{InputTokens: 5, OutputTokens: 2, Requests: 1}, Progress: "1 tool call"},
	}
	var shown, folded []update
	for _, e := range events {
		shown = append(shown, subagentUpdates("parent", e, true)...)
		folded = append(folded, subagentUpdates("parent", e, false)...)
	}
	got := strings.Join(marshalUpdates(t, shown), "\n")
	for _, want := range []string{
		`{"sessionId":"parent","update":{"sessionUpdate":"subagent_update","sessionId":"parent/task-t1","title":"Find it","description":"look","state":{"state":"running"}}}`,
		`on parent/task-t1: {"sessionId":"parent","update":{"content":{"text":"find it","type":"text"},"sessionUpdate":"user_message_chunk"}}`,
		`on parent/task-t1: {"sessionId":"parent","update":{"content":{"text":"hm","type":"text"},"sessionUpdate":"agent_message_chunk"}}`,
		`"sessionUpdate":"tool_call","status":"in_progress","title":"srv/echo","toolCallId":"c1","name":"echo"}}`,
		`{"sessionId":"parent","update":{"sessionUpdate":"subagent_update","sessionId":"parent/task-t1","state":{"state":"idle","stopReason":"end_turn","usage":{"inputTokens":5,"outputTokens":2,"totalTokens":7}}}}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("shown updates lack\n%s\ngot\n%s", want, got)
		}
	}
	got = strings.Join(marshalUpdates(t, folded), "\n")
	if len(folded) != 3 || !strings.Contains(got, `"toolCallId":"t1"`) || !strings.Contains(got, `Find it: 1 tool call; now: srv/echo`) || strings.Contains(got, "on parent/") {
		t.Errorf("folded updates:\n%s", got)
	}
}

func TestReplayUpdates_ChildRun(t *testing.T) {
	child := gateway.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{
		{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("the task")}},
		{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("the report")}},
	}}
	turns := []store.Turn{{Messages: []gateway.Message{
		{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("go")}},
		{Role: gateway.RoleAssistant, ToolCalls: []gateway.ToolCall{{ID: "t1", Name: gateway.TaskToolName, Args: map[string]any{}}}},
		{Role: gateway.RoleTool, ToolCallID: "t1", ToolName: gateway.TaskToolName, ToolTitle: "Task", Result: &gateway.Result{
			Content: []gateway.Content{gateway.TextContent("the report")}, Subagent: &gateway.Subagent{Name: "task-t1", Title: "Do it", Turn: child}}},
	}}}
	got := strings.Join(marshalUpdates(t, replayUpdates(turns, "parent", true)), "\n")
	for _, want := range []string{`"subagent_update","sessionId":"parent/task-t1","title":"Do it"`, `on parent/task-t1: {"sessionId":"parent","update":{"content":{"text":"the task","type":"text"},"sessionUpdate":"user_message_chunk"}}`, `"state":{"state":"idle","stopReason":"end_turn"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("replay lacks %s\ngot\n%s", want, got)
		}
	}
	if got := marshalUpdates(t, replayUpdates(turns, "parent", false)); len(got) != 3 {
		t.Errorf("replay without subagents = %d updates:\n%s", len(got), strings.Join(got, "\n"))
	}
}
