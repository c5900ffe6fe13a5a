package runner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// taskScript is a fake model for parent and children, told apart by the
// system prompt: the parent's calls are scripted by parent, each child
// answers by child.
type taskScript struct {
	mu       sync.Mutex
	requests []*gateway.Request
	parent   func(n int, req *gateway.Request) gateway.Message
	child    func(ctx context.Context, req *gateway.Request) (gateway.Message, error)
	parentN  int
}

func (s *taskScript) provider() *fakeProvider {
	return &fakeProvider{complete: func(ctx context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		s.mu.Lock()
		s.requests = append(s.requests, req)
		isParent := req.System == "parent"
		n := s.parentN
		if isParent {
			s.parentN++
		}
		s.mu.Unlock()
		usage := gateway.Usage{InputTokens: 100, OutputTokens: 10, Requests: 1}
		if isParent {
			return &gateway.Response{Message: s.parent(n, req), Usage: usage}, nil
		}
		m, err := s.child(ctx, req)
		if err != nil {
			return nil, err
		}
		return &gateway.Response{Message: m, Usage: usage}, nil
	}}
}

func (s *taskScript) childRequests() []*gateway.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(s.requests), func(r *gateway.Request) bool { return r.System == "parent" })
}

func answer(s string) gateway.Message {
	return gateway.Message{Content: []gateway.Content{gateway.TextContent(s)}}
}

func taskCall(id string, args map[string]any) gateway.ToolCall {
	return gateway.ToolCall{ID: id, Name: gateway.TaskToolName, Args: args}
}

func toolNames(tools []*gateway.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

func newTaskRunner(s *taskScript, sub *Subagents, tools ...*gateway.Tool) *Runner {
	reg := &gateway.Registry{}
	reg.Set("k", tools)
	if sub == nil {
		sub = &Subagents{}
	}
	return New(reg, &Options{Models: []gateway.Model{{ID: "fake", Provider: s.provider()}}, Subagents: sub,
		Permissions: Permissions{Mode: PermissionAllow}})
}

func prompt(s string) gateway.SendRequest {
	return gateway.SendRequest{SessionKey: "k", System: "parent", Message: []gateway.Content{gateway.TextContent(s)}}
}

func TestTask_ChildHasAFreshContextAndItsAnswerIsTheResult(t *testing.T) {
	s := &taskScript{
		parent: func(n int, req *gateway.Request) gateway.Message {
			switch n {
			case 0:
				return answer("earlier answer")
			case 1:
				return gateway.Message{ToolCalls: []gateway.ToolCall{taskCall("t1", map[string]any{"description": "Find the bug", "prompt": "look at main.go"})}}
			}
			return answer("the child said: " + req.Messages[len(req.Messages)-1].Result.Content[0].Text)
		},
		child: func(_ context.Context, req *gateway.Request) (gateway.Message, error) {
			if len(req.Messages) == 1 {
				return gateway.Message{ToolCalls: []gateway.ToolCall{{ID: "c1", Name: "echo", Args: map[string]any{"message": "x"}}}}, nil
			}
			return answer("REPORT: it is on line 3"), nil
		},
	}
	r := newTaskRunner(s, nil, echoTool("echo"))
	if _, err := r.Run(t.Context(), prompt("first, secret history"), func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	evs, emit := collect()
	stop, err := r.Run(t.Context(), prompt("delegate"), emit)
	if err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Run = %s, %v", stop, err)
	}
	// The child's first request: its own system prompt and the task alone,
	// the parent's tools but task.
	first := s.childRequests()[0]
	if first.System != DefaultSubagentPrompt || len(first.Messages) != 1 || gateway.PromptText(first.Messages[0].Content) != "look at main.go" {
		t.Errorf("child's first request: system %q, messages %+v", first.System, first.Messages)
	}
	for _, req := range s.childRequests() {
		for _, m := range req.Messages {
			if strings.Contains(gateway.PromptText(m.Content), "secret history") || strings.Contains(gateway.PromptText(m.Content), "earlier answer") {
				t.Errorf("a child's request holds the parent's history: %+v", m)
			}
		}
	}
	if got := toolNames(first.Tools); !slices.Equal(got, []string{"echo"}) {
		t.Errorf("child's tools = %v, want [echo]", got)
	}
	// The parent was offered task, and got the child's answer alone.
	view := r.opts.History.View(context.Background(), "k")
	last := view.Messages[len(view.Messages)-1]
	if gateway.PromptText(last.Content) != "the child said: REPORT: it is on line 3" {
		t.Errorf("parent's answer = %q", gateway.PromptText(last.Content))
	}
	res := view.Messages[len(view.Messages)-2].Result
	if res == nil || res.Subagent == nil || res.Subagent.Name != "task-t1" || res.Subagent.Title != "Find the bug" || len(res.Subagent.Turn.Messages) != 4 {
		t.Fatalf("task result = %+v", res)
	}
	// Usage: the parent's 2 requests and the child's 2, in the turn and
	// the session's report.
	var report *gateway.UsageReport
	var sub []string
	for _, e := range *evs {
		switch e.Kind {
		case gateway.EventUsage:
			report = e.Usage
		case gateway.EventSubagent:
			k := string(e.Subagent.State)
			if e.Subagent.Event != nil {
				k = e.Subagent.Event.Kind.String()
			}
			sub = append(sub, k+"|"+e.Subagent.Progress)
		}
	}
	if report == nil || report.Turn.Requests != 4 || report.Turn.InputTokens != 400 || report.Session.Requests != 5 {
		t.Errorf("usage = %+v", report)
	}
	want := []string{"running|working: no tool calls yet", "tool_start|1 tool call; now: srv/echo", "tool_end|1 tool call", "usage|1 tool call", "done|1 tool call"}
	if !slices.Equal(sub, want) {
		t.Errorf("subagent events:\n%s\nwant\n%s", strings.Join(sub, "\n"), strings.Join(want, "\n"))
	}
}

func TestTask_ToolsSubsetAndAgents(t *testing.T) {
	var calls []gateway.ToolCall
	s := &taskScript{
		parent: func(n int, req *gateway.Request) gateway.Message {
			if n == 0 {
				return gateway.Message{ToolCalls: calls}
			}
			return answer("done")
		},
		child: func(context.Context, *gateway.Request) (gateway.Message, error) { return answer("ok"), nil },
	}
	sub := &Subagents{Agents: []Agent{{Name: "reader", Description: "Reads files. Never writes.", Prompt: "you read", Tools: []string{"mcp__fs__read*"}}}}
	r := newTaskRunner(s, sub, echoTool("echo"), echoTool("mcp__fs__read_file"), echoTool("mcp__fs__write_file"))
	calls = []gateway.ToolCall{
		taskCall("a", map[string]any{"description": "d", "prompt": "p", "tools": []any{"echo"}}),
		taskCall("b", map[string]any{"description": "d", "prompt": "p", "subagent_type": "reader"}),
		taskCall("c", map[string]any{"description": "d", "prompt": "p", "tools": []any{"nope"}}),
		taskCall("d", map[string]any{"description": "d", "prompt": "p", "subagent_type": "writer"}),
	}
	evs, emit := collect()
	if _, err := r.Run(t.Context(), prompt("go"), emit); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, req := range s.childRequests() {
		got[req.System] = toolNames(req.Tools)
	}
	if !slices.Equal(got[DefaultSubagentPrompt], []string{"echo"}) || !slices.Equal(got["you read"], []string{"mcp__fs__read_file"}) || len(got) != 2 {
		t.Errorf("children's tools = %v", got)
	}
	ends := map[string]string{}
	for _, e := range *evs {
		if e.Kind == gateway.EventToolEnd {
			ends[e.Call.ID] = e.Call.Result.Content[0].Text
		}
	}
	if !strings.Contains(ends["c"], "no tool nope") || !strings.Contains(ends["d"], `no subagent_type "writer"`) {
		t.Errorf("bad calls' results = %q", ends)
	}
	// The description lists the agents, and the schema names them.
	tool := r.taskTool(&turnState{})
	if !strings.Contains(tool.Description, "reader: Reads files.") || !strings.Contains(string(tool.InputSchema), `"enum":["reader"]`) {
		t.Errorf("task tool = %s\n%s", tool.Description, tool.InputSchema)
	}
	// It is in every request: keep it small (about 160 tokens without
	// agents, by the runner's estimate of 4 bytes a token).
	bare := New(&gateway.Registry{}, &Options{Subagents: &Subagents{}}).taskTool(&turnState{})
	if n := toolsTokens([]*gateway.Tool{bare}); n > 200 {
		t.Errorf("the task tool costs %d tokens a request, want at most 200", n)
	}
}

func TestTask_ChildrenRunInParallelAndCancelWithTheParent(t *testing.T) {
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	s := &taskScript{
		parent: func(n int, req *gateway.Request) gateway.Message {
			return gateway.Message{ToolCalls: []gateway.ToolCall{
				taskCall("a", map[string]any{"description": "one", "prompt": "p1"}),
				taskCall("b", map[string]any{"description": "two", "prompt": "p2"}),
			}}
		},
		child: func(ctx context.Context, req *gateway.Request) (gateway.Message, error) {
			started.Done()
			<-ctx.Done() // only the parent's cancellation ends it
			return gateway.Message{}, ctx.Err()
		},
	}
	r := newTaskRunner(s, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		select {
		case <-both: // both children are running at once
		case <-time.After(time.Minute):
			t.Error("the two children did not run at once")
		}
		cancel()
	}()
	evs, emit := collect()
	stop, err := r.Run(ctx, prompt("go"), emit)
	if err != nil || stop != gateway.StopCancelled {
		t.Fatalf("Run = %s, %v", stop, err)
	}
	n := 0
	for _, e := range *evs {
		if e.Kind == gateway.EventToolEnd {
			n++
			if !e.Call.Result.IsError || !strings.Contains(e.Call.Result.Content[0].Text, "cancelled") || e.Call.Result.Subagent == nil {
				t.Errorf("end = %+v", e.Call.Result)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d task calls ended, want 2", n)
	}
}

func TestTask_OneLevelDeepBudgetAndPermissionsNameTheChild(t *testing.T) {
	s := &taskScript{
		parent: func(n int, req *gateway.Request) gateway.Message {
			if n == 0 {
				return gateway.Message{ToolCalls: []gateway.ToolCall{taskCall("a", map[string]any{"description": "Edit it", "prompt": "p"})}}
			}
			return answer("done")
		},
		child: func(_ context.Context, req *gateway.Request) (gateway.Message, error) {
			// Always more calls: the token budget ends it.
			return gateway.Message{Content: []gateway.Content{gateway.TextContent("step")}, ToolCalls: []gateway.ToolCall{
				{ID: NewToolCallID(), Name: "write"}, {ID: NewToolCallID(), Name: gateway.TaskToolName, Args: map[string]any{"description": "d", "prompt": "p"}},
			}}, nil
		},
	}
	write := &gateway.Tool{Name: "write", Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
		return gateway.Result{Content: []gateway.Content{gateway.TextContent("written")}}, nil
	}}
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{write})
	r := New(reg, &Options{Models: []gateway.Model{{ID: "fake", Provider: s.provider()}}, Subagents: &Subagents{MaxTokens: 250}})
	var mu sync.Mutex
	var asked []gateway.PermissionRequest
	req := prompt("go")
	req.Ask = func(_ context.Context, pr gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, pr)
		return gateway.PermissionAllowAlways, nil
	}
	evs, emit := collect()
	if _, err := r.Run(t.Context(), req, emit); err != nil {
		t.Fatal(err)
	}
	// Asked once (allow always), naming the child.
	if len(asked) != 1 || asked[0].Call.Title != "Edit it: write" || asked[0].Subagent != "task-a" {
		t.Errorf("asked %+v", asked)
	}
	for _, req := range s.childRequests() {
		if slices.Contains(toolNames(req.Tools), gateway.TaskToolName) {
			t.Errorf("a child was offered task: %v", toolNames(req.Tools))
		}
	}
	var end *gateway.SubagentEvent
	for _, e := range *evs {
		if e.Kind == gateway.EventSubagent && e.Subagent.State == gateway.SubagentDone {
			end = e.Subagent
		}
		if e.Kind == gateway.EventSubagent && e.Subagent.Event != nil && e.Subagent.Event.Kind == gateway.EventToolEnd && e.Subagent.Event.Call.Name == gateway.TaskToolName {
			if !strings.Contains(e.Subagent.Event.Call.Result.Content[0].Text, "unknown tool") {
				t.Errorf("a child's task call = %+v", e.Subagent.Event.Call.Result)
			}
		}
	}
	// 110 tokens a request: the third is over 250.
	if end == nil || end.Stop != gateway.StopMaxTokens || end.Usage.Requests != 3 {
		t.Errorf("end = %+v", end)
	}
}
