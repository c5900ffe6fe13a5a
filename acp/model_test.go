package acp

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// scriptProvider is a model that replays responses, one per request, and
// records the requests; a request for the session's title gets "Script
// title", apart.
type scriptProvider struct {
	mu        sync.Mutex
	responses []gateway.Response
	requests  []*gateway.Request
}

func (p *scriptProvider) Name() string { return "script" }
func (p *scriptProvider) Complete(ctx context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
	if req.Purpose == gateway.PurposeTitle { // the session's title, after its first turn: not scripted
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("Script title")}}}, nil
	}
	p.mu.Lock()
	p.requests = append(p.requests, req)
	if len(p.responses) == 0 {
		p.mu.Unlock()
		return &gateway.Response{}, nil
	}
	r := p.responses[0]
	p.responses = p.responses[1:]
	p.mu.Unlock()
	if t := gateway.PromptText(r.Message.Content); t != "" {
		for _, chunk := range strings.SplitAfter(t, " ") {
			emit(gateway.Event{Kind: gateway.EventTextDelta, Text: chunk})
		}
	}
	return &r, nil
}

func say(text string) gateway.Response {
	return gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent(text)}}}
}

func callTool(id, name string, args map[string]any) gateway.Response {
	return gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: id, Name: name, Args: args}}}}
}

func TestAgent_ModelTurnWithPermissions(t *testing.T) {
	p := &scriptProvider{responses: []gateway.Response{
		callTool("c1", "mcp__mem__image", nil), say("the user said no"),
		callTool("c2", "mcp__mem__image", nil), say("here is the image"),
		callTool("c3", "mcp__mem__image", nil), say("again, without asking"),
	}}
	gw := runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "script:1", Label: "Script", Provider: p}}})
	h := startAgentWith(t, testOptions{Gateway: gw})
	var asked []string
	var mu sync.Mutex
	answer := "reject_once"
	h.client.SetPermission(func(req acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, string(req.ToolCall.ToolCallId))
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(acpsdk.PermissionOptionId(answer))}
	})
	res, err := h.conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{acpclient.Stdio("mem", "x", nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ConfigOptions) != 2 || res.ConfigOptions[1].Select.CurrentValue != "script:1" {
		t.Errorf("configOptions = %+v, want the model selector on script:1", res.ConfigOptions)
	}
	sid := string(res.SessionId)

	stop, out := h.prompt(t.Context(), sid, "show me an image")
	if stop != acpsdk.StopReasonEndTurn || joinText(out) != "the user said no" {
		t.Errorf("turn 1: %s %q", stop, joinText(out))
	}
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusFailed || !strings.Contains(end.Content[0].Content.Content.Text.Text, "declined") {
		t.Errorf("rejected call: %+v", end)
	}
	mu.Lock()
	answer = "allow_always"
	mu.Unlock()
	_, out = h.prompt(t.Context(), sid, "please, show it")
	// Asked: announced pending, in_progress once allowed.
	if got := toolStatuses(out); got != "tool_call:pending tool_call_update:in_progress tool_call_update:completed" {
		t.Errorf("asked call: %s", got)
	}
	_, out = h.prompt(t.Context(), sid, "once more")
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted {
		t.Errorf("allowed call: %+v", end)
	}
	// Nothing to ask: announced running, no separate in_progress.
	if got := toolStatuses(out); got != "tool_call:in_progress tool_call_update:completed" {
		t.Errorf("call allowed always: %s", got)
	}
	mu.Lock()
	if strings.Join(asked, ",") != "c1,c2" {
		t.Errorf("asked for %v, want c1 and c2 (allow always covers c3)", asked)
	}
	mu.Unlock()
	// The model saw the whole history, with the declined call answered.
	p.mu.Lock()
	last := p.requests[len(p.requests)-1]
	p.mu.Unlock()
	if len(last.Messages) < 9 || !strings.Contains(last.System, "working directory") {
		t.Errorf("last request: %d messages, system %q", len(last.Messages), last.System)
	}
}

func TestAgent_SwitchModel(t *testing.T) {
	a := &scriptProvider{responses: []gateway.Response{say("from a")}}
	b := &scriptProvider{responses: []gateway.Response{say("from b")}}
	gw := runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "a", Label: "A", Provider: a}, {ID: "b", Label: "B", Provider: b}}})
	h := startAgentWith(t, testOptions{Gateway: gw})
	sid := h.newSession()
	if _, out := h.prompt(t.Context(), sid, "hi"); joinText(out) != "from a" {
		t.Errorf("default model: %q", joinText(out))
	}
	res, err := h.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
		SessionId: acpsdk.SessionId(sid), ConfigId: "model", Value: "b"}})
	if err != nil || res.ConfigOptions[1].Select.CurrentValue != "b" {
		t.Fatalf("set model: %+v %v", res, err)
	}
	if _, out := h.prompt(t.Context(), sid, "hi"); joinText(out) != "from b" {
		t.Errorf("switched model: %q", joinText(out))
	}
	if len(b.requests[0].Messages) != 3 { // hi, from a, hi: the history moved along
		t.Errorf("model b saw %d messages", len(b.requests[0].Messages))
	}
	_, err = h.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
		SessionId: acpsdk.SessionId(sid), ConfigId: "model", Value: "nope"}})
	if err == nil || !strings.Contains(err.Error(), `unknown model \"nope\"`) {
		t.Errorf("unknown model: %v", err)
	}
}

// A provider that fails ends the turn with a message naming it; the session
// goes on.
func TestAgent_ProviderErrorEndsTheTurnOnly(t *testing.T) {
	failing := &failProvider{}
	gw := runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "f", Provider: failing}}})
	h := startAgentWith(t, testOptions{Gateway: gw})
	sid := h.newSession()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	stop, out := h.prompt(ctx, sid, "hi")
	if stop != acpsdk.StopReasonEndTurn || !strings.Contains(joinText(out), "The turn failed: anthropic: HTTP 401 Unauthorized (set ANTHROPIC_API_KEY to a valid API key)") {
		t.Errorf("%s %q", stop, joinText(out))
	}
}

// A turn that fails with an error that knows its remedy (here: a lost
// lease) ends with a message saying what happened and what to do; the
// session goes on.
func TestAgent_FailedTurnSaysWhatToDo(t *testing.T) {
	gw := &lostGateway{Gateway: runner.NewLocal(nil)}
	h := startAgentWith(t, testOptions{Gateway: gw})
	sid := h.newSession()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	stop, out := h.prompt(ctx, sid, "hi")
	want := "\nThe turn failed: the lease of session s1 was lost (the connection to the session store that holds it broke): the turn was stopped; send the prompt again: it runs once the session store can be reached\n"
	if stop != acpsdk.StopReasonEndTurn || !strings.Contains(joinText(out), want) {
		t.Errorf("%s %q\nwant %q", stop, joinText(out), want)
	}
}

// lostGateway is a gateway whose turns are cut by a lost lease.
type lostGateway struct{ gateway.Gateway }

func (lostGateway) Send(context.Context, gateway.SendRequest, func(gateway.Event)) (gateway.StopReason, error) {
	return "", &session.LeaseLostError{ID: "s1"}
}

type failProvider struct{}

func (failProvider) Name() string { return "fail" }
func (failProvider) Complete(context.Context, *gateway.Request, func(gateway.Event)) (*gateway.Response, error) {
	return nil, &provider.Error{Provider: "anthropic", Status: 401, Hint: "set ANTHROPIC_API_KEY to a valid API key"}
}

// toolStatuses lists the tool call updates of out as kind:status.
func toolStatuses(out []acpsdk.SessionNotification) string {
	var got []string
	for _, n := range out {
		switch u := n.Update; {
		case u.ToolCall != nil:
			got = append(got, "tool_call:"+string(u.ToolCall.Status))
		case u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil:
			got = append(got, "tool_call_update:"+string(*u.ToolCallUpdate.Status))
		}
	}
	return strings.Join(got, " ")
}
