package runner

import (
	"context"
	"regexp"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// A model that reuses a tool call ID (its own, or one from a loaded
// history) gets a fresh one: the client and the history never see two calls
// with one ID.
func TestRunner_ToolCallIDsAreUniqueInTheSession(t *testing.T) {
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{echoTool("echo")})
	hist := &gateway.MemoryHistory{}
	// An earlier agent process left a call "c1" in the history.
	hist.Append(context.Background(), "k", gateway.StopEndTurn,
		gateway.Message{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("before")}},
		gateway.Message{Role: gateway.RoleAssistant, ToolCalls: []gateway.ToolCall{{ID: "c1", Name: "echo"}}},
		gateway.Message{Role: gateway.RoleTool, ToolCallID: "c1", ToolName: "echo", Result: &gateway.Result{}})
	requests := 0
	model := &fakeProvider{complete: func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		requests++
		switch requests {
		case 1: // the model reuses c1, and gives two calls one ID
			return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: "c1", Name: "echo"}, {ID: "c2", Name: "echo"}, {ID: "c2", Name: "echo"}, {Name: "echo"}}}}, nil
		}
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("done")}}}, nil
	}}
	r := New(reg, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: model}}})
	evs, emit := collect()
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("go")}}, emit); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range hist.Messages(context.Background(), "k") {
		for _, c := range m.ToolCalls {
			seen[c.ID]++
		}
	}
	if len(seen) != 5 {
		t.Errorf("history call IDs = %v, want 5 distinct", seen)
	}
	started := map[string]bool{}
	for _, e := range *evs {
		if e.Kind == gateway.EventToolStart {
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
	req := &gateway.Request{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("/call echo")}}}}
	ids := map[string]bool{}
	for range 3 {
		resp, err := NewDirect().Complete(t.Context(), req, func(gateway.Event) {})
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
