package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// fakeProvider is a Provider of function fields.
type fakeProvider struct {
	complete func(ctx context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error)
}

func (f *fakeProvider) Name() string { return "fake" }
func (f *fakeProvider) Complete(ctx context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
	return f.complete(ctx, req, emit)
}

var _ gateway.Provider = (*fakeProvider)(nil)

func echoTool(name string) *gateway.Tool {
	return &gateway.Tool{Name: name, Label: "srv/" + name, Group: "srv", Annotations: gateway.Annotations{ReadOnlyHint: true},
		Execute: func(_ context.Context, _ string, args map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
			s, _ := args["message"].(string)
			return gateway.Result{Content: []gateway.Content{gateway.TextContent("Echo: " + s)}}, nil
		}}
}

func collect() (*[]gateway.Event, func(gateway.Event)) {
	var mu sync.Mutex
	var evs []gateway.Event
	return &evs, func(e gateway.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }
}

func TestRunner_DirectCallReportsEveryStep(t *testing.T) {
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{echoTool("mcp__srv__echo")})
	r := New(reg, nil)
	evs, emit := collect()
	stop, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent(`/call mcp__srv__echo {"message":"hi"}`)}, Command: &gateway.Command{Name: "call", Args: `mcp__srv__echo {"message":"hi"}`}}, emit)
	if err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Run = %s, %v", stop, err)
	}
	var kinds []string
	for _, e := range *evs {
		kinds = append(kinds, e.Kind.String()+":"+string(e.Call.Status))
	}
	// Nothing to ask and one call: it is announced running, with no
	// separate in_progress update.
	if got := strings.Join(kinds, " "); got != "tool_start:in_progress tool_end:completed" {
		t.Fatalf("events = %s", got)
	}
	end := (*evs)[1].Call
	if end.Title != "srv/mcp__srv__echo" || end.Kind != gateway.ToolKindRead || end.Result.Content[0].Text != "Echo: hi" {
		t.Errorf("end = %+v", end)
	}
	// The turn is in the history with the call answered.
	h := r.opts.History.View(context.Background(), "k").Messages
	if len(h) != 3 || h[1].ToolCalls[0].Name != "mcp__srv__echo" || h[2].Role != gateway.RoleTool || h[2].Result == nil {
		t.Errorf("history = %+v", h)
	}
}

func TestRunner_ToolFailuresNeverEndTheTurn(t *testing.T) {
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{
		{Name: "broken", Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
			return gateway.Result{}, errors.New("transport closed")
		}},
		{Name: "iserr", Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
			return gateway.ErrorResult("bad input"), nil
		}},
	})
	calls := 0
	var seen []gateway.Message
	p := &fakeProvider{complete: func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		calls++
		if calls == 1 {
			return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: "1", Name: "broken"}, {ID: "2", Name: "iserr"}, {ID: "3", Name: "missing"}}}}, nil
		}
		seen = req.Messages
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("ok")}}}, nil
	}}
	r := New(reg, &Options{Models: []gateway.Model{{ID: "fake", Provider: p}}})
	evs, emit := collect()
	stop, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("go")}}, emit)
	if err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Run = %s, %v", stop, err)
	}
	var ends []string
	for _, e := range *evs {
		if e.Kind == gateway.EventToolEnd {
			ends = append(ends, string(e.Call.Status)+":"+e.Call.Result.Content[0].Text)
		}
	}
	slices.Sort(ends) // the unknown tool ends at once; the others run in parallel
	want := "failed:bad input|failed:transport closed|failed:unknown tool missing; /tools lists them"
	if got := strings.Join(ends, "|"); got != want {
		t.Errorf("ends = %s\nwant %s", got, want)
	}
	// Results go back to the model in request order.
	if len(seen) != 5 || seen[2].ToolCallID != "1" || seen[3].ToolCallID != "2" || seen[4].ToolCallID != "3" || !seen[4].Result.IsError {
		t.Errorf("model saw %+v", seen)
	}
}

// A tool's failure that knows what to do about it (a gateway.Remedier, such
// as a bridged server's rate limit) reaches the model with its remedy:
// the result's text is gateway.ErrorText's.
func TestRunner_ToolFailureShownWithItsRemedy(t *testing.T) {
	limited := gateway.WithRemedy(errors.New("rate limit: server gh allows 3 calls/min"), "retry in 20 s")
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{{Name: "limited", Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
		return gateway.Result{}, fmt.Errorf("calling: %w", limited)
	}}})
	r := New(reg, nil)
	evs, emit := collect()
	if stop, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/call limited")}, Command: &gateway.Command{Name: "call", Args: "limited"}}, emit); err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Run = %s, %v", stop, err)
	}
	end := (*evs)[len(*evs)-1]
	const want = "calling: rate limit: server gh allows 3 calls/min; retry in 20 s"
	if end.Kind != gateway.EventToolEnd || end.Call.Status != gateway.ToolFailed || end.Call.Result.Content[0].Text != want {
		t.Errorf("end = %+v, want failed with %q", end.Call, want)
	}
}

func TestRunner_CancelledMidTool(t *testing.T) {
	reg := &gateway.Registry{}
	started := make(chan struct{})
	reg.Set("k", []*gateway.Tool{blockingTool(started)})
	r := New(reg, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	evs, emit := collect()
	stop, err := r.Run(ctx, gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/call block")}, Command: &gateway.Command{Name: "call", Args: "block"}}, emit)
	if err != nil || stop != gateway.StopCancelled {
		t.Fatalf("Run = %s, %v; want cancelled", stop, err)
	}
	last := (*evs)[len(*evs)-1]
	if last.Kind != gateway.EventToolEnd || last.Call.Status != gateway.ToolFailed || last.Call.Result.Content[0].Text != "cancelled" {
		t.Errorf("last event = %+v", last.Call)
	}
	h := r.opts.History.View(context.Background(), "k").Messages
	if len(h) != 3 || h[2].Result == nil || !h[2].Result.IsError {
		t.Errorf("history after cancel = %+v; every call needs a result", h)
	}
}

func TestRunner_MaxTurnRequests(t *testing.T) {
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{echoTool("e")})
	p := &fakeProvider{complete: func(context.Context, *gateway.Request, func(gateway.Event)) (*gateway.Response, error) {
		return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: "x", Name: "e"}}}}, nil
	}}
	r := New(reg, &Options{Models: []gateway.Model{{ID: "fake", Provider: p}}, MaxTurnRequests: 3})
	_, emit := collect()
	if stop, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: nil}, emit); err != nil || stop != gateway.StopMaxTurnRequests {
		t.Errorf("Run = %s, %v", stop, err)
	}
}

func TestRunner_ProviderErrorIsReturned(t *testing.T) {
	p := &fakeProvider{complete: func(context.Context, *gateway.Request, func(gateway.Event)) (*gateway.Response, error) {
		return nil, errors.New("HTTP 500")
	}}
	r := New(&gateway.Registry{}, &Options{Models: []gateway.Model{{ID: "fake", Provider: p}}})
	_, emit := collect()
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: nil}, emit); err == nil || !strings.Contains(err.Error(), "fake: HTTP 500") {
		t.Errorf("err = %v", err)
	}
}

func TestRunner_ReadsRegistryEveryTurn(t *testing.T) {
	reg := &gateway.Registry{}
	r := New(reg, nil)
	_, emit := collect()
	evs, emit2 := collect()
	_, _ = r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/tools")}, Command: &gateway.Command{Name: "tools"}}, emit)
	reg.Set("k", []*gateway.Tool{echoTool("late")})
	_, _ = r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/tools")}, Command: &gateway.Command{Name: "tools"}}, emit2)
	if len(*evs) != 1 || !strings.Contains((*evs)[0].Text, "- late (srv)") {
		t.Errorf("second /tools = %+v", *evs)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"", "map[]", ""},
		{"  ", "map[]", ""},
		{`{"a":1}`, "map[a:1]", ""},
		{`{"a":1} `, "map[a:1]", ""},
		{`{"a":`, "", "not valid JSON"},
		{`[1]`, "", "must be a JSON object"},
		{`null`, "", "not null"},
		{`{"a":1} {"b":2}`, "", "single JSON object"},
		{`"s"`, "", "not a string"},
	}
	for _, tt := range tests {
		got, err := parseArgs(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseArgs(%q) err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("parseArgs(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestRegistry_SetIsAtomicAndCopied(t *testing.T) {
	reg := &gateway.Registry{}
	tools := []*gateway.Tool{echoTool("a"), echoTool("b")}
	reg.Set("k", tools)
	tools[0] = echoTool("mutated")
	if got := reg.Tools("k"); got[0].Name != "a" || reg.Lookup("k", "b") == nil || reg.Lookup("other", "a") != nil {
		t.Errorf("registry = %v", got)
	}
	reg.Clear("k")
	if len(reg.Tools("k")) != 0 {
		t.Error("Clear left tools")
	}
}

// ctxHistory records whether the ctx of each Append was already done.
type ctxHistory struct {
	gateway.MemoryHistory
	mu        sync.Mutex
	doneOnAdd []bool
}

func (h *ctxHistory) Append(ctx context.Context, key string, turn gateway.Turn) error {
	h.mu.Lock()
	h.doneOnAdd = append(h.doneOnAdd, ctx.Err() != nil)
	h.mu.Unlock()
	return h.MemoryHistory.Append(ctx, key, turn)
}

// A cancelled turn is stored with a context that is not cancelled, so a
// History backed by a store does not drop it.
func TestRunner_CancelledTurnIsAppendedWithALiveContext(t *testing.T) {
	reg := &gateway.Registry{}
	started := make(chan struct{})
	reg.Set("k", []*gateway.Tool{blockingTool(started)})
	hist := &ctxHistory{}
	r := New(reg, &Options{History: hist})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	_, emit := collect()
	if stop, err := r.Run(ctx, gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/call block")}, Command: &gateway.Command{Name: "call", Args: "block"}}, emit); err != nil || stop != gateway.StopCancelled {
		t.Fatalf("Run = %s, %v; want cancelled", stop, err)
	}
	hist.mu.Lock()
	defer hist.mu.Unlock()
	if len(hist.doneOnAdd) != 1 || hist.doneOnAdd[0] {
		t.Errorf("Append calls (true: ctx already done) = %v; want one with a live ctx", hist.doneOnAdd)
	}
	if h := hist.View(context.Background(), "k").Messages; len(h) != 3 {
		t.Errorf("history after cancel = %+v", h)
	}
}

// refusingHistory is a History whose Append fails, as a full disk does.
type refusingHistory struct{ gateway.MemoryHistory }

var errNoRoom = errors.New("database or disk is full")

func (*refusingHistory) Append(context.Context, string, gateway.Turn) error { return errNoRoom }

// A turn the history cannot keep fails Run with gateway.ErrTurnNotStored
// and the store's reason; a cancelled turn still ends cancelled.
func TestRunner_TurnNotStoredFailsTheTurn(t *testing.T) {
	reg := &gateway.Registry{}
	started := make(chan struct{})
	reg.Set("k", []*gateway.Tool{echoTool("echo"), blockingTool(started)})
	r := New(reg, &Options{History: &refusingHistory{}})
	_, emit := collect()
	_, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/call echo {}")}, Command: &gateway.Command{Name: "call", Args: "echo {}"}}, emit)
	if !errors.Is(err, gateway.ErrTurnNotStored) || !errors.Is(err, errNoRoom) {
		t.Errorf("Run = %v, want ErrTurnNotStored and the store's reason", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	if stop, err := r.Run(ctx, gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/call block")}, Command: &gateway.Command{Name: "call", Args: "block"}}, emit); err != nil || stop != gateway.StopCancelled {
		t.Errorf("cancelled Run = %s, %v; want cancelled", stop, err)
	}
}

// blockingTool is a tool named "block" that closes started when it runs and
// returns only when its context ends.
func blockingTool(started chan struct{}) *gateway.Tool {
	return &gateway.Tool{Name: "block", Execute: func(ctx context.Context, _ string, _ map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
		close(started)
		<-ctx.Done()
		return gateway.Result{}, ctx.Err()
	}}
}

// A tool's declared Kind is what its calls show; without one, read-only
// tools show read and the rest other.
func TestRunner_ToolKind(t *testing.T) {
	search := echoTool("mcp__srv__find")
	search.Kind = gateway.ToolKindSearch
	write := echoTool("mcp__srv__write")
	write.Annotations.ReadOnlyHint = false
	for _, tt := range []struct {
		tool *gateway.Tool
		want gateway.ToolKind
	}{
		{search, gateway.ToolKindSearch},
		{echoTool("mcp__srv__echo"), gateway.ToolKindRead},
		{write, gateway.ToolKindOther},
	} {
		reg := &gateway.Registry{}
		reg.Set("k", []*gateway.Tool{tt.tool})
		r := New(reg, &Options{Permissions: Permissions{Mode: PermissionAllow}})
		evs, emit := collect()
		if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/call " + tt.tool.Name)}, Command: &gateway.Command{Name: "call", Args: tt.tool.Name}}, emit); err != nil {
			t.Fatal(err)
		}
		if got := (*evs)[0].Call.Kind; got != tt.want {
			t.Errorf("%s: kind %q, want %q", tt.tool.Name, got, tt.want)
		}
	}
}

// turnOnlyFake is a provider that reads only the turn, as Direct does; it
// records how many messages each request held.
type turnOnlyFake struct {
	fakeProvider
	mu   sync.Mutex
	lens []int
}

func (*turnOnlyFake) turnOnly() {}

// A provider that reads only the turn (Direct) gets no copy of the
// session's history in its requests, so a /call's cost does not grow with
// the session's length; the turns still join the history.
func TestRunner_TurnOnlyProviderGetsNoHistory(t *testing.T) {
	p := &turnOnlyFake{}
	p.complete = func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		p.mu.Lock()
		p.lens = append(p.lens, len(req.Messages))
		p.mu.Unlock()
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("ok")}}}, nil
	}
	r := New(&gateway.Registry{}, &Options{Models: []gateway.Model{{ID: "fake:m", Provider: p}}})
	for range 3 {
		_, emit := collect()
		if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Model: "fake:m", Message: []gateway.Content{gateway.TextContent("hi")}}, emit); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(p.lens) != "[1 1 1]" {
		t.Errorf("request lengths %v, want [1 1 1]: the turn alone", p.lens)
	}
	if h := r.opts.History.View(t.Context(), "k").Messages; len(h) != 6 {
		t.Errorf("history has %d messages, want the 3 turns' 6", len(h))
	}
}

// TestRunner_ToolTitleIsOneVisibleLine: a tool call's title reaches the
// editor as one line of visible text, at most gateway.MaxToolTitle
// characters, whether it is a server's label or the name of an unknown
// tool the model made up.
func TestRunner_ToolTitleIsOneVisibleLine(t *testing.T) {
	escaped := echoTool("mcp__srv__echo")
	escaped.Label = "\u001b]0;PWNED\u0007\u001b[2JEcho \u202egnp.exe\u200b\n(srv)"
	long := echoTool("mcp__srv__long")
	long.Label = strings.Repeat("é", 300)
	for _, tt := range []struct {
		tool *gateway.Tool
		call string
		want string
	}{
		{escaped, "mcp__srv__echo", "Echo gnp.exe (srv)"},
		{long, "mcp__srv__long", strings.Repeat("é", gateway.MaxToolTitle-1) + "…"},
		{nil, "made\u001b[2Jup\u202e", "madeup"},
	} {
		reg := &gateway.Registry{}
		if tt.tool != nil {
			reg.Set("k", []*gateway.Tool{tt.tool})
		}
		r := New(reg, &Options{Permissions: Permissions{Mode: PermissionAllow}})
		evs, emit := collect()
		if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/call " + tt.call)}, Command: &gateway.Command{Name: "call", Args: tt.call}}, emit); err != nil {
			t.Fatal(err)
		}
		calls := 0
		for _, e := range *evs {
			if e.Call != nil {
				calls++
				if e.Call.Title != tt.want {
					t.Errorf("%q: %s title %q, want %q", tt.call, e.Kind, e.Call.Title, tt.want)
				}
			}
		}
		if calls == 0 {
			t.Errorf("%q: no tool call events", tt.call)
		}
	}
}
