package gateway

import (
	"context"
	"regexp"
	"testing"
)

// A model that reuses a tool call ID (its own, or one from a loaded
// history) gets a fresh one: the client and the history never see two calls
// with one ID.
func TestRunner_ToolCallIDsAreUniqueInTheSession(t *testing.T) {
	reg := &Registry{}
	reg.Set("k", []*Tool{echoTool("echo")})
	hist := &MemoryHistory{}
	// An earlier agent process left a call "c1" in the history.
	hist.Append("k", StopEndTurn,
		Message{Role: RoleUser, Content: []Content{TextContent("before")}},
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "echo"}}},
		Message{Role: RoleTool, ToolCallID: "c1", ToolName: "echo", Result: &Result{}})
	requests := 0
	model := &fakeProvider{complete: func(_ context.Context, req *Request, _ func(Event)) (*Response, error) {
		requests++
		switch requests {
		case 1: // the model reuses c1, and gives two calls one ID
			return &Response{Message: Message{ToolCalls: []ToolCall{{ID: "c1", Name: "echo"}, {ID: "c2", Name: "echo"}, {ID: "c2", Name: "echo"}, {Name: "echo"}}}}, nil
		}
		return &Response{Message: Message{Content: []Content{TextContent("done")}}}, nil
	}}
	r := NewRunner(reg, &RunnerOptions{History: hist, Models: []Model{{ID: "m", Provider: model}}})
	evs, emit := collect()
	if _, err := r.Run(t.Context(), SendRequest{SessionKey: "k", Message: []Content{TextContent("go")}}, emit); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range hist.Messages("k") {
		for _, c := range m.ToolCalls {
			seen[c.ID]++
		}
	}
	if len(seen) != 5 {
		t.Errorf("history call IDs = %v, want 5 distinct", seen)
	}
	started := map[string]bool{}
	for _, e := range *evs {
		if e.Kind == EventToolStart {
			if started[e.Call.ID] || e.Call.ID == "c1" || e.Call.ID == "" {
				t.Errorf("tool_start with a used ID %q", e.Call.ID)
			}
			started[e.Call.ID] = true
			if seen[e.Call.ID] != 1 {
				t.Errorf("the client saw ID %q, the history does not hold it once", e.Call.ID)
			}
		}
	}
	if len(started) != 4 {
		t.Errorf("%d tool starts, want 4", len(started))
	}
}

// Direct mode's /call IDs do not repeat across providers (processes).
func TestDirect_CallIDsDoNotRepeat(t *testing.T) {
	req := &Request{Messages: []Message{{Role: RoleUser, Content: []Content{TextContent("/call echo")}}}}
	ids := map[string]bool{}
	for range 3 {
		resp, err := NewDirect().Complete(t.Context(), req, func(Event) {})
		if err != nil {
			t.Fatal(err)
		}
		id := resp.Message.ToolCalls[0].ID
		if ids[id] || !regexp.MustCompile(`^call_[0-9a-f]{16}$`).MatchString(id) {
			t.Errorf("ID %q repeats or is malformed", id)
		}
		ids[id] = true
	}
}
