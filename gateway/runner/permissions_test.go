package runner

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

func TestPermissions_Decide(t *testing.T) {
	ro := &gateway.Tool{Name: "mcp__fs__read", Annotations: gateway.Annotations{ReadOnlyHint: true}}
	rw := &gateway.Tool{Name: "mcp__fs__write"}
	gh := &gateway.Tool{Name: "mcp__github__create_issue"}
	tests := []struct {
		p    Permissions
		tool *gateway.Tool
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
func scripted(calls ...gateway.ToolCall) *fakeProvider {
	var n atomic.Int32
	return &fakeProvider{complete: func(context.Context, *gateway.Request, func(gateway.Event)) (*gateway.Response, error) {
		if n.Add(1) == 1 {
			return &gateway.Response{Message: gateway.Message{ToolCalls: calls}}, nil
		}
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("done")}}}, nil
	}}
}

func countingTool(name string, readOnly bool, runs *atomic.Int32) *gateway.Tool {
	return &gateway.Tool{Name: name, Annotations: gateway.Annotations{ReadOnlyHint: readOnly},
		Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
			runs.Add(1)
			return gateway.Result{Content: []gateway.Content{gateway.TextContent("ran " + name)}}, nil
		}}
}

func TestRunner_Permissions(t *testing.T) {
	var runs atomic.Int32
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{countingTool("write", false, &runs), countingTool("read", true, &runs), countingTool("banned", false, &runs)})
	var asked []string
	var answer gateway.PermissionOutcome
	ask := func(_ context.Context, req gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
		asked = append(asked, req.Call.Name)
		return answer, nil
	}
	newRunner := func() *Runner {
		return New(reg, &Options{
			Models:      []gateway.Model{{ID: "fake", Provider: scripted(gateway.ToolCall{ID: "1", Name: "write"}, gateway.ToolCall{ID: "2", Name: "read"}, gateway.ToolCall{ID: "3", Name: "banned"})}},
			Permissions: Permissions{Deny: []string{"banned"}},
		})
	}
	starts := map[string]gateway.ToolStatus{}
	run := func(r *Runner) map[string]string {
		ends := map[string]string{}
		var mu sync.Mutex
		_, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Ask: ask}, func(e gateway.Event) {
			if e.Kind == gateway.EventToolStart {
				starts[e.Call.ID] = e.Call.Status
			}
			if e.Kind == gateway.EventToolEnd {
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

	answer = gateway.PermissionReject
	ends := run(newRunner())
	if !strings.HasPrefix(ends["write"], "failed:The user declined to run write") || ends["read"] != "completed:ran read" ||
		!strings.Contains(ends["banned"], "denied by the permissions policy") {
		t.Errorf("ends = %v", ends)
	}
	if strings.Join(asked, ",") != "write" || runs.Load() != 1 {
		t.Errorf("asked %v, %d runs; want only write asked, only read run", asked, runs.Load())
	}
	// One call of the response asks: every call is announced pending.
	if starts["1"] != gateway.ToolPending || starts["2"] != gateway.ToolPending || starts["3"] != gateway.ToolPending {
		t.Errorf("starts = %v, want all pending", starts)
	}

	answer, asked = gateway.PermissionUnavailable, nil
	ends = run(newRunner())
	if !strings.HasPrefix(ends["write"], "failed:write was refused: it needs the user's permission") || !strings.Contains(ends["write"], "cannot be asked") {
		t.Errorf("no one to ask: ends = %v", ends)
	}
	if runs.Load() != 2 {
		t.Errorf("%d runs; want write not run", runs.Load())
	}

	r := newRunner()
	answer, asked = gateway.PermissionAllowAlways, nil
	run(r)
	r.opts.Models[0].Provider = scripted(gateway.ToolCall{ID: "4", Name: "write"})
	run(r) // allowed always: not asked again
	if strings.Join(asked, ",") != "write" {
		t.Errorf("asked %v, want write once (allow always)", asked)
	}
	if starts["4"] != gateway.ToolInProgress {
		t.Errorf("a call that runs at once starts %q, want in_progress", starts["4"])
	}
	r.Forget(context.Background(), "k")
	r.opts.Models[0].Provider = scripted(gateway.ToolCall{ID: "5", Name: "write"})
	run(r)
	if len(asked) != 2 {
		t.Errorf("after Forget the grant should be gone; asked %v", asked)
	}
}

func TestRunner_DeniedToolsAreNotOffered(t *testing.T) {
	var runs atomic.Int32
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{countingTool("mcp__gh__a", false, &runs), countingTool("mcp__fs__b", true, &runs)})
	var offered []string
	p := &fakeProvider{complete: func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		for _, t := range req.Tools {
			offered = append(offered, t.Name)
		}
		return &gateway.Response{}, nil
	}}
	r := New(reg, &Options{Models: []gateway.Model{{ID: "f", Provider: p}}, Permissions: Permissions{Deny: []string{"mcp__gh__*"}}})
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k"}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(offered, ",") != "mcp__fs__b" {
		t.Errorf("offered %v", offered)
	}
}

func TestRunner_ParallelToolCallsAreBounded(t *testing.T) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 6) // one per call, once it counts as running
	tool := &gateway.Tool{Name: "slow", Annotations: gateway.Annotations{ReadOnlyHint: true}, Execute: func(ctx context.Context, id string, _ map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		started <- struct{}{}
		<-release
		running.Add(-1)
		return gateway.Result{Content: []gateway.Content{gateway.TextContent("r" + id)}}, nil
	}}
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{tool})
	var calls []gateway.ToolCall
	for i := range 6 {
		calls = append(calls, gateway.ToolCall{ID: string(rune('a' + i)), Name: "slow"})
	}
	var seen []gateway.Message
	var n atomic.Int32
	p := &fakeProvider{complete: func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		if n.Add(1) == 1 {
			return &gateway.Response{Message: gateway.Message{ToolCalls: calls}}, nil
		}
		seen = req.Messages
		return &gateway.Response{}, nil
	}}
	r := New(reg, &Options{Models: []gateway.Model{{ID: "f", Provider: p}}, ParallelTools: 3})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.Run(context.Background(), gateway.SendRequest{SessionKey: "k"}, func(e gateway.Event) {
			if e.Kind == gateway.EventToolStart && e.Call.Status != gateway.ToolPending {
				t.Errorf("call %s starts %s: more calls than ParallelTools wait, so each is pending", e.Call.ID, e.Call.Status)
			}
		})
	}()
	timeout := time.After(10 * time.Second)
waiting: // until three calls run at once
	for range 3 {
		select {
		case <-started:
		case <-timeout:
			break waiting
		}
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
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{countingTool("write", false, &runs)})
	r := New(reg, &Options{Models: []gateway.Model{{ID: "f", Provider: scripted(gateway.ToolCall{ID: "1", Name: "write"})}}})
	ctx, cancel := context.WithCancel(t.Context())
	ask := func(ctx context.Context, _ gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
		cancel()
		<-ctx.Done()
		return gateway.PermissionCancelled, nil
	}
	stop, err := r.Run(ctx, gateway.SendRequest{SessionKey: "k", Ask: ask}, func(gateway.Event) {})
	if err != nil || stop != gateway.StopCancelled || runs.Load() != 0 {
		t.Errorf("Run = %s, %v, %d runs; want cancelled, nothing run", stop, err, runs.Load())
	}
	h := r.opts.History.View(context.Background(), "k").Messages
	if last := h[len(h)-1]; last.Role != gateway.RoleTool || last.Result == nil || !last.Result.IsError {
		t.Errorf("history ends with %+v; the call needs a result", last)
	}
}
