package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// TestSessionUpdatesShow: a call's Show becomes diff and terminal content
// (before its own blocks) and locations; a plan follows as its own update.
func TestSessionUpdatesShow(t *testing.T) {
	old := "a\n"
	show := &gateway.Show{
		Diffs:     []gateway.Diff{{Path: "/w/f.txt", OldText: &old, NewText: "b\n"}},
		Terminals: []string{"term-1"},
		Locations: []gateway.Location{{Path: "/w/f.txt", Line: 2}},
		Plan:      &gateway.Plan{Entries: []gateway.PlanEntry{{Content: "edit f", Status: "in_progress", Priority: "high"}}},
	}
	end := gateway.Event{Kind: gateway.EventToolEnd, Call: &gateway.ToolCallEvent{ID: "c1", Status: gateway.ToolCompleted,
		Result: &gateway.Result{Content: []gateway.Content{gateway.TextContent("done")}, Show: show}}}
	us := sessionUpdates(end)
	if len(us) != 2 {
		t.Fatalf("%d updates, want tool_call_update then plan", len(us))
	}
	got := marshal(t, us[0])
	for _, want := range []string{
		`"content":[{"newText":"b\n","oldText":"a\n","path":"/w/f.txt","type":"diff"},{"terminalId":"term-1","type":"terminal"},{"content":{"text":"done","type":"text"},"type":"content"}]`,
		`"locations":[{"line":2,"path":"/w/f.txt"}]`,
		`"sessionUpdate":"tool_call_update"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tool_call_update %s\nlacks %s", got, want)
		}
	}
	if got, want := marshal(t, us[1]), `{"entries":[{"content":"edit f","priority":"high","status":"in_progress"}],"sessionUpdate":"plan"}`; got != want {
		t.Errorf("plan = %s, want %s", got, want)
	}

	running := gateway.Event{Kind: gateway.EventToolUpdate, Call: &gateway.ToolCallEvent{ID: "c1", Status: gateway.ToolInProgress,
		Update: &gateway.ToolUpdate{Progress: 1, Show: &gateway.Show{Terminals: []string{"term-1"}}}}}
	us = sessionUpdates(running)
	if got := marshal(t, us[0]); len(us) != 1 || !strings.Contains(got, `"content":[{"terminalId":"term-1","type":"terminal"}]`) {
		t.Errorf("a running call's terminal: %s", got)
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSessionUpdatesUsage: a turn's usage is a usage_update with the
// context's size and, when every request was priced, the session's cost;
// the prompt response carries the turn's counts; a compaction is told.
func TestSessionUpdatesUsage(t *testing.T) {
	rep := &gateway.UsageReport{
		Turn:    gateway.Usage{InputTokens: 100, CacheReadTokens: 5000, CacheWriteTokens: 300, OutputTokens: 40, Requests: 2, Cost: 0.01},
		Session: gateway.Usage{InputTokens: 900, OutputTokens: 80, Requests: 5, Cost: 0.25},
		Used:    5440, Size: 200_000,
	}
	us := sessionUpdates(gateway.Event{Kind: gateway.EventUsage, Usage: rep})
	if len(us) != 1 {
		t.Fatalf("%d updates", len(us))
	}
	if got, want := marshal(t, us[0]), `{"cost":{"amount":0.25,"currency":"USD"},"sessionUpdate":"usage_update","size":200000,"used":5440}`; got != want {
		t.Errorf("usage_update = %s, want %s", got, want)
	}
	rep.Session.Unpriced = 1
	if got := marshal(t, sessionUpdates(gateway.Event{Kind: gateway.EventUsage, Usage: rep})[0]); strings.Contains(got, "cost") {
		t.Errorf("a session with an unpriced request reports a cost: %s", got)
	}
	b, _ := json.Marshal(turnUsage(rep.Turn))
	if got, want := string(b), `{"cachedReadTokens":5000,"cachedWriteTokens":300,"inputTokens":100,"outputTokens":40,"totalTokens":5440}`; got != want {
		t.Errorf("prompt usage = %s, want %s", got, want)
	}
	for _, c := range []*gateway.CompactionReport{{Status: gateway.CompactionInProgress}, {Status: gateway.CompactionInProgress, Delta: "a piece"}, {Status: gateway.CompactionCancelled}} {
		if u := sessionUpdates(gateway.Event{Kind: gateway.EventCompaction, Compaction: c}); len(u) != 0 {
			t.Errorf("compaction step %+v told to a client without session.compaction: %+v", c, u)
		}
	}
	for _, c := range []*gateway.CompactionReport{{Status: gateway.CompactionCompleted, Reason: "threshold", Before: 170000, After: 30000}, {Status: gateway.CompactionCompleted, Reason: "server", Before: 170000, After: 30000}, {Status: gateway.CompactionFailed, Reason: "too_long", Err: "the model wrote no summary"}} {
		u := sessionUpdates(gateway.Event{Kind: gateway.EventCompaction, Compaction: c})
		if len(u) != 1 || u[0].AgentMessageChunk == nil {
			t.Fatalf("compaction %+v: %d updates", c, len(u))
		}
		text := u[0].AgentMessageChunk.Content.Text.Text
		if c.Err == "" && !strings.Contains(text, "170000 → 30000") || c.Err != "" && !strings.Contains(text, c.Err) ||
			c.Reason == "server" && !strings.Contains(text, "provider compacted") {
			t.Errorf("compaction told as %q", text)
		}
	}
}

// TestSessionUpdatesToolCallName: a tool_call carries the schema's name,
// the tool's name as the model calls it, beside the title people read; a
// notice is the schema's notice update.
func TestSessionUpdatesToolCallName(t *testing.T) {
	start := gateway.Event{Kind: gateway.EventToolStart, Call: &gateway.ToolCallEvent{ID: "c1", Name: "mcp__everything__echo",
		Title: "Echo Tool (everything)", Kind: gateway.ToolKindOther, Status: gateway.ToolPending}}
	got := marshal(t, sessionUpdates(start)[0])
	for _, want := range []string{`"name":"mcp__everything__echo"`, `"title":"Echo Tool (everything)"`, `"sessionUpdate":"tool_call"`, `"toolCallId":"c1"`} {
		if !strings.Contains(got, want) {
			t.Errorf("tool_call %s lacks %s", got, want)
		}
	}
	n := update{Notice: &notice{Severity: "warning", Title: `MCP server "x" failed`, Description: "connection refused"}}
	if got, want := marshal(t, n), `{"sessionUpdate":"notice","severity":"warning","title":"MCP server \"x\" failed","description":"connection refused"}`; got != want {
		t.Errorf("notice = %s, want %s", got, want)
	}
}

// TestSessionUpdatesResultShownOnce: a result's structured content, added
// as JSON text for the model next to the tool's own blocks (ModelOnly),
// is not a second content block for the editor: the editor shows the
// tool's blocks and has the structured content in rawOutput.
func TestSessionUpdatesResultShownOnce(t *testing.T) {
	structured := map[string]any{"celsius": 21}
	forModel := gateway.TextContent(`{"celsius":21}`)
	forModel.ModelOnly = true
	raw := map[string]any{"content": []any{map[string]any{"type": "text", "text": "21 C"}}, "structuredContent": structured}
	end := gateway.Event{Kind: gateway.EventToolEnd, Call: &gateway.ToolCallEvent{ID: "c1", Status: gateway.ToolCompleted,
		Result: &gateway.Result{Content: []gateway.Content{gateway.TextContent("21 C"), forModel}, Structured: structured, Raw: raw}}}
	got := marshal(t, sessionUpdates(end)[0])
	for _, want := range []string{
		`"content":[{"content":{"text":"21 C","type":"text"},"type":"content"}]`,
		`"rawOutput":{"content":[{"text":"21 C","type":"text"}],"structuredContent":{"celsius":21}}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tool_call_update %s\nlacks %s", got, want)
		}
	}
	// Replayed (session/load) from the stored turn, likewise.
	stored, err := jsonRoundTrip(end.Call.Result)
	if err != nil {
		t.Fatal(err)
	}
	end.Call.Result = stored
	if got := marshal(t, sessionUpdates(end)[0]); strings.Contains(got, `"text":"{\"celsius\":21}"`) {
		t.Errorf("replayed tool_call_update %s shows the structured content as content", got)
	}
}

// jsonRoundTrip is r as a store keeps it: encoded and decoded as JSON.
func jsonRoundTrip(r *gateway.Result) (*gateway.Result, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var out gateway.Result
	return &out, json.Unmarshal(b, &out)
}
