package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// subagentModel is a fake Anthropic model that plays a parent and its
// subagent, told apart by their requests: the parent's first request calls
// task, its next answers with what the child reported; the child (its
// system prompt is the subagent's) writes a file, then reports.
func subagentModel(t *testing.T) *fakemodel.Server {
	return fakemodel.NewAnthropicWith(t, &fakemodel.Options{Respond: func(r fakemodel.Recorded) fakemodel.Turn {
		system, _ := json.Marshal(r.JSON["system"])
		results := strings.Count(string(r.Body), `"tool_result"`)
		if strings.Contains(string(system), "subagent of acp-agent") {
			if results == 0 {
				return fakemodel.Turn{Text: "Writing it.", ToolCalls: []fakemodel.ToolCall{{Name: "mcp__acp__write_file", Args: `{"path":"out.txt","content":"x"}`}}}
			}
			return fakemodel.Turn{Text: "CHILD REPORT: wrote out.txt"}
		}
		if results == 0 {
			return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "toolu_task1", Name: "task", Args: `{"description":"Write the file","prompt":"CHILD TASK: write out.txt"}`}}}
		}
		if strings.Contains(string(r.Body), "CHILD REPORT: wrote out.txt") {
			return fakemodel.Turn{Text: "PARENT: the subagent wrote out.txt"}
		}
		return fakemodel.Turn{Text: "PARENT: no report"}
	}})
}

// childRequests are the fake model's requests whose system prompt is the
// subagent's.
func childRequests(fake *fakemodel.Server) (child, parent []fakemodel.Recorded) {
	for _, r := range fake.Requests() {
		system, _ := json.Marshal(r.JSON["system"])
		if strings.Contains(string(system), "subagent of acp-agent") {
			child = append(child, r)
		} else {
			parent = append(parent, r)
		}
	}
	return child, parent
}

// checkSubagentModelRequests: the child's requests hold its task, not the
// parent's conversation, nor the task tool; the parent's last holds the
// child's report alone.
func checkSubagentModelRequests(t *testing.T, fake *fakemodel.Server) {
	t.Helper()
	child, parent := childRequests(fake)
	if len(child) != 2 || len(parent) != 2 {
		t.Fatalf("%d child and %d parent model requests, want 2 and 2", len(child), len(parent))
	}
	for _, r := range child {
		body := string(r.Body)
		if !strings.Contains(body, "CHILD TASK: write out.txt") || strings.Contains(body, "PARENT SECRET") {
			t.Errorf("a child's request does not hold its task alone: %s", body)
		}
		if strings.Contains(body, `"name":"task"`) {
			t.Errorf("a child was offered task")
		}
	}
	if body := string(parent[0].Body); !strings.Contains(body, `"name":"task"`) {
		t.Errorf("the parent was not offered task")
	}
	last := string(parent[1].Body)
	if !strings.Contains(last, "CHILD REPORT: wrote out.txt") || strings.Contains(last, "Writing it.") {
		t.Errorf("the parent's request after the task holds more than the child's report: %s", last)
	}
}

// TestSubagents_TypeScriptClientShowsTheChildSession: to an editor on the
// TypeScript SDK 2.4.0 that advertises clientCapabilities.subagents, a
// turn whose model calls task announces the child on the parent session
// (subagent_update, running), then the child's own updates (its task as a
// user message, its message chunks, its tool call) and its permission question come under the
// child's sessionId, then the child is idle with its usage, and the
// parent ends with the child's answer; the child's model requests hold its
// task, not the parent's conversation; session/load replays the child's
// transcript under its sessionId.
func TestSubagents_TypeScriptClientShowsTheChildSession(t *testing.T) {
	t.Parallel()
	fake := subagentModel(t)
	run := tsClient{
		Capabilities: map[string]any{"subagents": map[string]any{}},
		Prompts:      []string{"PARENT SECRET: delegate the file"},
		Env:          []string{"FAKE_ANTHROPIC_KEY=test-key"},
		Args:         []string{"--config", fakeAnthropicConfig(t, fake.URL)},
		Load:         true,
	}.run(t)
	checkSubagentModelRequests(t, fake)
	child := run.SessionID + "/task-toolu_task1"
	var seq []string
	var parentText, childText string
	for _, u := range run.Updates {
		kind, _ := u.Update["sessionUpdate"].(string)
		switch {
		case kind == "subagent_update":
			state, _ := u.Update["state"].(map[string]any)
			if u.SessionID != run.SessionID || u.Update["sessionId"] != child {
				t.Errorf("subagent_update on %s for %v, want on %s for %s", u.SessionID, u.Update["sessionId"], run.SessionID, child)
			}
			seq = append(seq, "subagent_update:"+state["state"].(string))
			if state["state"] == "running" && u.Update["title"] != "Write the file" {
				t.Errorf("running subagent_update = %v", u.Update)
			}
			if state["state"] == "idle" && (state["stopReason"] != "end_turn" || state["usage"] == nil) {
				t.Errorf("idle subagent_update = %v", u.Update)
			}
		case u.SessionID == child:
			seq = append(seq, "child:"+kind)
			if kind == "agent_message_chunk" {
				childText += u.Update["content"].(map[string]any)["text"].(string)
			}
		case kind == "agent_message_chunk":
			parentText += u.Update["content"].(map[string]any)["text"].(string)
		}
	}
	seq = slices.Compact(seq)
	want := []string{"subagent_update:running", "child:user_message_chunk", "child:agent_message_chunk", "child:tool_call", "child:tool_call_update", "child:agent_message_chunk", "child:usage_update", "subagent_update:idle"}
	if !slices.Equal(seq, want) {
		t.Errorf("subagent sequence = %v\nwant %v", seq, want)
	}
	if !strings.Contains(childText, "CHILD REPORT") || parentText != "PARENT: the subagent wrote out.txt" {
		t.Errorf("child said %q, parent %q", childText, parentText)
	}
	if len(run.Permissions) != 1 || run.Permissions[0]["sessionId"] != child ||
		!strings.HasPrefix(run.Permissions[0]["toolCall"].(map[string]any)["title"].(string), "Write the file: ") {
		t.Errorf("permission requests = %v, want one under %s titled \"Write the file: ...\"", run.Permissions, child)
	}
	if len(run.Stops) != 1 || run.Stops[0] != "end_turn" {
		t.Errorf("stops = %v", run.Stops)
	}
	// The replay: the child announced, its transcript under its sessionId.
	var replayed []string
	for _, u := range run.LoadUpdates {
		kind, _ := u.Update["sessionUpdate"].(string)
		if u.SessionID == child {
			replayed = append(replayed, "child:"+kind)
		} else if kind == "subagent_update" {
			replayed = append(replayed, kind)
		}
	}
	replayed = slices.Compact(replayed)
	want = []string{"subagent_update", "child:user_message_chunk", "child:agent_message_chunk", "child:tool_call", "child:tool_call_update", "child:agent_message_chunk", "subagent_update"}
	if !slices.Equal(replayed, want) {
		t.Errorf("replayed = %v\nwant %v", replayed, want)
	}
}

// TestSubagents_TypeScriptClientWithoutTheCapability: an editor that does
// not advertise subagents sees nothing of the child session: the child's
// progress is folded into the parent's task call (tool_call_update content
// "Write the file: 1 tool call; now: ..."), its permission question comes
// on the parent session titled by the task, and the call ends with the
// child's answer.
func TestSubagents_TypeScriptClientWithoutTheCapability(t *testing.T) {
	t.Parallel()
	fake := subagentModel(t)
	run := tsClient{
		Prompts: []string{"PARENT SECRET: delegate the file"},
		Env:     []string{"FAKE_ANTHROPIC_KEY=test-key"},
		Args:    []string{"--config", fakeAnthropicConfig(t, fake.URL)},
	}.run(t)
	checkSubagentModelRequests(t, fake)
	var progress []string
	var answer string
	for _, u := range run.Updates {
		if u.SessionID != run.SessionID {
			t.Errorf("an update on %s, not the session", u.SessionID)
		}
		kind, _ := u.Update["sessionUpdate"].(string)
		if kind == "subagent_update" {
			t.Errorf("a subagent_update to a client without the capability: %v", u.Update)
		}
		if kind != "tool_call_update" || u.Update["toolCallId"] != "toolu_task1" {
			continue
		}
		content, _ := u.Update["content"].([]any)
		for _, c := range content {
			text, _ := c.(map[string]any)["content"].(map[string]any)["text"].(string)
			if u.Update["status"] == "completed" {
				answer = text
			} else {
				progress = append(progress, text)
			}
		}
	}
	if len(progress) < 3 || progress[0] != "Write the file: working: no tool calls yet" ||
		!slices.ContainsFunc(progress, func(p string) bool { return strings.HasPrefix(p, "Write the file: 1 tool call; now: ") }) ||
		progress[len(progress)-1] != "Write the file: 1 tool call" {
		t.Errorf("progress = %q", progress)
	}
	if answer != "CHILD REPORT: wrote out.txt" {
		t.Errorf("task call's answer = %q", answer)
	}
	if len(run.Permissions) != 1 || run.Permissions[0]["sessionId"] != run.SessionID ||
		!strings.HasPrefix(run.Permissions[0]["toolCall"].(map[string]any)["title"].(string), "Write the file: ") {
		t.Errorf("permission requests = %v, want one on the session titled \"Write the file: ...\"", run.Permissions)
	}
}
