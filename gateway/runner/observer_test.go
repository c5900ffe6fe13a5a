package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// observed is a gateway.Observer that records what it is told, one line
// per call.
type observed struct {
	mu    sync.Mutex
	lines []string
}

var _ gateway.Observer = (*observed)(nil)

func (o *observed) add(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, fmt.Sprintf(format, args...))
}

func (o *observed) ModelRequest(model string, u gateway.Usage, d time.Duration, err error) {
	o.add("request %s in=%d out=%d cost=%g err=%v", model, u.InputTokens, u.OutputTokens, u.Cost, err)
}

func (o *observed) TurnEnded(model string, stop gateway.StopReason, d time.Duration, err error) {
	o.add("turn %s %s err=%v", model, stop, err)
}

func (o *observed) ToolCallEnded(server, tool, outcome string, d time.Duration) {
	o.add("tool %s/%s %s", server, tool, outcome)
}

func (o *observed) PermissionDecided(decision string) { o.add("permission %s", decision) }

func TestRunner_Observer(t *testing.T) {
	reg := &gateway.Registry{}
	fail := &gateway.Tool{Name: "mcp__srv__fail", Group: "srv", Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
		return gateway.ErrorResult("bad input"), nil
	}}
	reg.Set("k", []*gateway.Tool{echoTool("mcp__srv__echo"), fail})
	n := 0
	p := &fakeProvider{complete: func(context.Context, *gateway.Request, func(gateway.Event)) (*gateway.Response, error) {
		n++
		u := gateway.Usage{InputTokens: 100, OutputTokens: 10, Requests: 1}
		if n == 1 {
			return &gateway.Response{Usage: u, Message: gateway.Message{ToolCalls: []gateway.ToolCall{
				{ID: "1", Name: "mcp__srv__echo"}, {ID: "2", Name: "mcp__srv__fail"}, {ID: "3", Name: "nosuch"}}}}, nil
		}
		return &gateway.Response{Usage: u, Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("done")}}}, nil
	}}
	obs := &observed{}
	asked := 0
	r := New(reg, &Options{Models: []gateway.Model{{ID: "m1", Provider: p, Pricing: &gateway.Pricing{Input: 1, Output: 10}}}, Observer: obs})
	ask := func(context.Context, gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
		asked++
		return gateway.PermissionAllowOnce, nil
	}
	stop, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Model: "m1", Message: []gateway.Content{gateway.TextContent("go")}, Ask: ask}, func(gateway.Event) {})
	if err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Run = %s, %v", stop, err)
	}
	got := slices.Clone(obs.lines)
	slices.Sort(got) // the calls run in parallel
	want := []string{
		"permission allow",      // echo: read-only, allowed by the policy
		"permission allow_once", // fail: asked
		"request m1 in=100 out=10 cost=0.0002 err=<nil>",
		"request m1 in=100 out=10 cost=0.0002 err=<nil>",
		"tool / refused", // no such tool: no server, no tool name (the model named it)
		"tool srv/mcp__srv__echo ok",
		"tool srv/mcp__srv__fail error",
		"turn m1 end_turn err=<nil>",
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("observed:\n%q\nwant:\n%q", got, want)
	}
	if asked != 1 {
		t.Errorf("asked %d times, want 1", asked)
	}
}

func TestRunner_ObserverFailedTurnAndDenied(t *testing.T) {
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{echoTool("mcp__srv__echo")})
	obs := &observed{}
	p := &fakeProvider{complete: func(context.Context, *gateway.Request, func(gateway.Event)) (*gateway.Response, error) {
		return nil, errors.New("overloaded")
	}}
	r := New(reg, &Options{Models: []gateway.Model{{ID: "m1", Provider: p}}, Observer: obs})
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Model: "m1", Message: []gateway.Content{gateway.TextContent("go")}}, func(gateway.Event) {}); err == nil {
		t.Fatal("Run succeeded; want the provider's error")
	}
	want := []string{"request m1 in=0 out=0 cost=0 err=overloaded", "turn m1  err=fake: overloaded"}
	if !slices.Equal(obs.lines, want) {
		t.Errorf("observed %q, want %q", obs.lines, want)
	}

	obs = &observed{}
	r = New(reg, &Options{Permissions: Permissions{Mode: PermissionDeny}, Observer: obs})
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/call mcp__srv__echo {}")}, Command: &gateway.Command{Name: "call", Args: "mcp__srv__echo {}"}}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(obs.lines, "permission deny") || !slices.Contains(obs.lines, "tool srv/mcp__srv__echo refused") {
		t.Errorf("observed %q; want a deny and a refused call", obs.lines)
	}
}
