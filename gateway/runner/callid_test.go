package runner

import (
	"context"
	"fmt"
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
	hist.Append(context.Background(), "k", gateway.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("before")}}, {Role: gateway.RoleAssistant, ToolCalls: []gateway.ToolCall{{ID: "c1", Name: "echo"}}}, {Role: gateway.RoleTool, ToolCallID: "c1", ToolName: "echo", Result: &gateway.Result{}}}})
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
	for _, m := range hist.View(context.Background(), "k").Messages {
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
	req := &gateway.Request{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("/call echo")}}}, Command: &gateway.Command{Name: "call", Args: "echo"}}
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

// Making call IDs unique costs a turn the messages added since the last
// check, not the whole history: a turn that calls a tool allocates as much
// after 20,000 messages of history as after 20.
func TestRunner_CallIDCheckDoesNotRescanHistory(t *testing.T) {
	allocs := func(messages int) float64 {
		reg := &gateway.Registry{}
		reg.Set("k", []*gateway.Tool{echoTool("echo")})
		hist := &gateway.MemoryHistory{}
		for i := range messages / 2 {
			id := fmt.Sprintf("old_%d", i)
			hist.Append(context.Background(), "k", gateway.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{{Role: gateway.RoleAssistant, ToolCalls: []gateway.ToolCall{{ID: id, Name: "echo"}}}, {Role: gateway.RoleTool, ToolCallID: id, ToolName: "echo", Result: &gateway.Result{}}}})
		}
		r := New(reg, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: NewDirect()}}})
		req := gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent(`/call echo {"message":"hi"}`)}}
		run := func() {
			if _, err := r.Run(context.Background(), req, func(gateway.Event) {}); err != nil {
				t.Fatal(err)
			}
		}
		run() // the first turn of the session reads its whole history once
		return testing.AllocsPerRun(50, run)
	}
	short, long := allocs(20), allocs(20000)
	if long > short+20 {
		t.Errorf("a /call turn allocates %.0f times after 20,000 messages of history, %.0f after 20: the call-ID check scans the whole history each turn", long, short)
	}
}

// The index of a session's call IDs follows its history: calls of later
// turns and a history replaced under the same key (forgotten and
// reloaded) are both seen.
func TestRunner_CallIDIndexFollowsTheHistory(t *testing.T) {
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{echoTool("echo")})
	hist := &gateway.MemoryHistory{}
	var reuse string // the ID the model gives its call; "" ends the turn
	model := &fakeProvider{complete: func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == gateway.RoleTool {
			return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("done")}}}, nil
		}
		return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: reuse, Name: "echo"}}}}, nil
	}}
	r := New(reg, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: model}}})
	turn := func(req gateway.SendRequest) string {
		t.Helper()
		var id string
		req.SessionKey, req.Message = "k", []gateway.Content{gateway.TextContent("go")}
		if _, err := r.Run(t.Context(), req, func(e gateway.Event) {
			if e.Kind == gateway.EventToolStart {
				id = e.Call.ID
			}
		}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	reuse = "a"
	if got := turn(gateway.SendRequest{}); got != "a" {
		t.Fatalf("first call ID = %q, want a (unused)", got)
	}
	if got := turn(gateway.SendRequest{}); got == "a" {
		t.Errorf("a call of the previous turn reused its ID %q", got)
	}
	// The history is forgotten and another one, longer, holds "b" early on.
	hist.Forget(context.Background(), "k")
	for _, id := range []string{"b", "x", "y"} {
		hist.Append(context.Background(), "k", gateway.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{{Role: gateway.RoleAssistant, ToolCalls: []gateway.ToolCall{{ID: id, Name: "echo"}}}, {Role: gateway.RoleTool, ToolCallID: id, ToolName: "echo", Result: &gateway.Result{}}, {Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("ok")}}}})
	}
	reuse = "b"
	if got := turn(gateway.SendRequest{}); got == "b" {
		t.Errorf("a call reused ID %q of the reloaded history", got)
	}
}
