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
