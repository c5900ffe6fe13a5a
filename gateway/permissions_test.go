package gateway

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPermissions_Decide(t *testing.T) {
	ro := &Tool{Name: "mcp__fs__read", Annotations: Annotations{ReadOnlyHint: true}}
	rw := &Tool{Name: "mcp__fs__write"}
	gh := &Tool{Name: "mcp__github__create_issue"}
	tests := []struct {
		p    Permissions
		tool *Tool
		want Decision
	}{
		{Permissions{}, ro, DecisionAllow},
		{Permissions{}, rw, DecisionAsk},
		{Permissions{Mode: PermissionAllow}, rw, DecisionAllow},
		{Permissions{Mode: PermissionDeny}, ro, DecisionDeny},
		{Permissions{Mode: PermissionDeny, Allow: []string{"mcp__fs__*"}}, rw, DecisionAllow},
		{Permissions{Allow: []string{"mcp__github__*"}}, gh, DecisionAllow},
		{Permissions{Allow: []string{"mcp__github__*"}, Deny: []string{"mcp__github__create_*"}}, gh, DecisionDeny},
		{Permissions{Mode: PermissionAllow, Deny: []string{"mcp__fs__*"}}, ro, DecisionDeny},
	}
	for _, tt := range tests {
		if got := tt.p.Decide(tt.tool); got != tt.want {
			t.Errorf("%+v.Decide(%s) = %v, want %v", tt.p, tt.tool.Name, got, tt.want)
		}
	}
	if err := (Permissions{Mode: "sometimes"}).Validate(); err == nil {
		t.Error("a bad mode validated")
	}
	if err := (Permissions{Allow: []string{"[x"}}).Validate(); err == nil {
		t.Error("a bad glob validated")
	}
}

// scripted is a provider that asks for calls on its first request and then
// ends the turn.
func scripted(calls ...ToolCall) *fakeProvider {
	var n atomic.Int32
	return &fakeProvider{complete: func(context.Context, *Request, func(Event)) (*Response, error) {
		if n.Add(1) == 1 {
			return &Response{Message: Message{ToolCalls: calls}}, nil
		}
		return &Response{Message: Message{Content: []Content{TextContent("done")}}}, nil
	}}
}

func countingTool(name string, readOnly bool, runs *atomic.Int32) *Tool {
	return &Tool{Name: name, Annotations: Annotations{ReadOnlyHint: readOnly},
		Execute: func(context.Context, string, map[string]any, func(ToolUpdate)) (Result, error) {
			runs.Add(1)
			return Result{Content: []Content{TextContent("ran " + name)}}, nil
		}}
}

func TestRunner_Permissions(t *testing.T) {
	var runs atomic.Int32
	reg := &Registry{}
	reg.Set("k", []*Tool{countingTool("write", false, &runs), countingTool("read", true, &runs), countingTool("banned", false, &runs)})
	var asked []string
	var answer PermissionOutcome
	ask := func(_ context.Context, req PermissionRequest) (PermissionOutcome, error) {
		asked = append(asked, req.Call.Name)
		return answer, nil
	}
	newRunner := func() *Runner {
		return NewRunner(reg, &RunnerOptions{
			Models:      []Model{{ID: "fake", Provider: scripted(ToolCall{ID: "1", Name: "write"}, ToolCall{ID: "2", Name: "read"}, ToolCall{ID: "3", Name: "banned"})}},
			Permissions: Permissions{Deny: []string{"banned"}},
		})
	}
	run := func(r *Runner) map[string]string {
		ends := map[string]string{}
		var mu sync.Mutex
		_, err := r.Run(t.Context(), SendRequest{SessionKey: "k", Ask: ask}, func(e Event) {
			if e.Kind == EventToolEnd {
				mu.Lock()
				ends[e.Call.Name] = string(e.Call.Status) + ":" + e.Call.Result.Content[0].Text
				mu.Unlock()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return ends
	}

	answer = PermissionReject
	ends := run(newRunner())
	if !strings.HasPrefix(ends["write"], "failed:The user declined to run write") || ends["read"] != "completed:ran read" ||
		!strings.Contains(ends["banned"], "denied by the permissions policy") {
		t.Errorf("ends = %v", ends)
	}
	if strings.Join(asked, ",") != "write" || runs.Load() != 1 {
		t.Errorf("asked %v, %d runs; want only write asked, only read run", asked, runs.Load())
	}

	r := newRunner()
	answer, asked = PermissionAllowAlways, nil
	run(r)
	r.opts.Models[0].Provider = scripted(ToolCall{ID: "4", Name: "write"})
	run(r) // allowed always: not asked again
	if strings.Join(asked, ",") != "write" {
		t.Errorf("asked %v, want write once (allow always)", asked)
	}
	r.Forget("k")
	r.opts.Models[0].Provider = scripted(ToolCall{ID: "5", Name: "write"})
	run(r)
	if len(asked) != 2 {
		t.Errorf("after Forget the grant should be gone; asked %v", asked)
	}
}

func TestRunner_DeniedToolsAreNotOffered(t *testing.T) {
	var runs atomic.Int32
	reg := &Registry{}
	reg.Set("k", []*Tool{countingTool("mcp__gh__a", false, &runs), countingTool("mcp__fs__b", true, &runs)})
	var offered []string
	p := &fakeProvider{complete: func(_ context.Context, req *Request, _ func(Event)) (*Response, error) {
		for _, t := range req.Tools {
			offered = append(offered, t.Name)
		}
		return &Response{}, nil
	}}
	r := NewRunner(reg, &RunnerOptions{Models: []Model{{ID: "f", Provider: p}}, Permissions: Permissions{Deny: []string{"mcp__gh__*"}}})
	if _, err := r.Run(t.Context(), SendRequest{SessionKey: "k"}, func(Event) {}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(offered, ",") != "mcp__fs__b" {
		t.Errorf("offered %v", offered)
	}
}

func TestRunner_ParallelToolCallsAreBounded(t *testing.T) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	tool := &Tool{Name: "slow", Annotations: Annotations{ReadOnlyHint: true}, Execute: func(ctx context.Context, id string, _ map[string]any, _ func(ToolUpdate)) (Result, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		running.Add(-1)
		return Result{Content: []Content{TextContent("r" + id)}}, nil
	}}
	reg := &Registry{}
	reg.Set("k", []*Tool{tool})
	var calls []ToolCall
	for i := range 6 {
		calls = append(calls, ToolCall{ID: string(rune('a' + i)), Name: "slow"})
	}
	var seen []Message
	var n atomic.Int32
	p := &fakeProvider{complete: func(_ context.Context, req *Request, _ func(Event)) (*Response, error) {
		if n.Add(1) == 1 {
			return &Response{Message: Message{ToolCalls: calls}}, nil
		}
		seen = req.Messages
		return &Response{}, nil
	}}
	r := NewRunner(reg, &RunnerOptions{Models: []Model{{ID: "f", Provider: p}}, ParallelTools: 3})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.Run(context.Background(), SendRequest{SessionKey: "k"}, func(Event) {})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for running.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(release)
	<-done
	if peak.Load() != 3 {
		t.Errorf("peak concurrency = %d, want 3", peak.Load())
	}
	for i, m := range seen[2:] { // user, assistant, then the results in request order
		if m.ToolCallID != calls[i].ID || m.Result.Content[0].Text != "r"+calls[i].ID {
			t.Errorf("result %d = %s %+v, want call %s", i, m.ToolCallID, m.Result, calls[i].ID)
		}
	}
}

func TestRunner_CancelWhileAskingPermission(t *testing.T) {
	var runs atomic.Int32
	reg := &Registry{}
	reg.Set("k", []*Tool{countingTool("write", false, &runs)})
	r := NewRunner(reg, &RunnerOptions{Models: []Model{{ID: "f", Provider: scripted(ToolCall{ID: "1", Name: "write"})}}})
	ctx, cancel := context.WithCancel(t.Context())
	ask := func(ctx context.Context, _ PermissionRequest) (PermissionOutcome, error) {
		cancel()
		<-ctx.Done()
		return PermissionCancelled, nil
	}
	stop, err := r.Run(ctx, SendRequest{SessionKey: "k", Ask: ask}, func(Event) {})
	if err != nil || stop != StopCancelled || runs.Load() != 0 {
		t.Errorf("Run = %s, %v, %d runs; want cancelled, nothing run", stop, err, runs.Load())
	}
	h := r.opts.History.Messages("k")
	if last := h[len(h)-1]; last.Role != RoleTool || last.Result == nil || !last.Result.IsError {
		t.Errorf("history ends with %+v; the call needs a result", last)
	}
}
