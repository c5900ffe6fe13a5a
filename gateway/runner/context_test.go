package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
)

// recorder is a fake model that records each request and answers with
// answer(n, req), n counting from 0; a summarization request gets a summary.
type recorder struct {
	mu     sync.Mutex
	reqs   []*gateway.Request
	answer func(n int, req *gateway.Request) (*gateway.Response, error)
}

func (r *recorder) provider() *fakeProvider {
	return &fakeProvider{complete: func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		r.mu.Lock()
		n := len(r.reqs)
		r.reqs = append(r.reqs, req)
		r.mu.Unlock()
		if isSummaryRequest(req) {
			return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent(fmt.Sprintf("summary %d", n))}},
				Usage: gateway.Usage{InputTokens: 10, OutputTokens: 5, Requests: 1}}, nil
		}
		return r.answer(n, req)
	}}
}

func (r *recorder) requests() []*gateway.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

func isSummaryRequest(req *gateway.Request) bool {
	n := len(req.Messages)
	return n > 0 && gateway.PromptText(req.Messages[n-1].Content) == summaryInstruction
}

func text(s string) []gateway.Content { return []gateway.Content{gateway.TextContent(s)} }

func say(s string, u gateway.Usage) (*gateway.Response, error) {
	return &gateway.Response{Message: gateway.Message{Content: text(s)}, Usage: u}, nil
}

// A turn's usage is priced, reported once at its end (turn, session, how
// full the context is) and stored with the turn.
func TestRunner_UsageIsReportedAndKept(t *testing.T) {
	rec := &recorder{answer: func(n int, _ *gateway.Request) (*gateway.Response, error) {
		if n == 0 {
			return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: "c1", Name: "echo", Args: map[string]any{}}}},
				Usage: gateway.Usage{InputTokens: 1000, CacheWriteTokens: 2000, OutputTokens: 50, Requests: 1}}, nil
		}
		return say("done", gateway.Usage{InputTokens: 100, CacheReadTokens: 3000, OutputTokens: 20, Requests: 1})
	}}
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{echoTool("echo")})
	hist := &gateway.MemoryHistory{}
	hist.Append(t.Context(), "k", gateway.Turn{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: text("before")}},
		Usage: gateway.Usage{InputTokens: 7, Requests: 1, Cost: 0.5}})
	price := &gateway.Pricing{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	r := New(reg, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: rec.provider(), ContextWindow: 200_000, Pricing: price}}})
	evs, emit := collect()
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("hi")}, emit); err != nil {
		t.Fatal(err)
	}
	var reports []*gateway.UsageReport
	for _, e := range *evs {
		if e.Kind == gateway.EventUsage {
			reports = append(reports, e.Usage)
		}
	}
	if len(reports) != 1 || (*evs)[len(*evs)-1].Kind != gateway.EventUsage {
		t.Fatalf("want one usage event, last; got %d", len(reports))
	}
	rep := reports[0]
	want := gateway.Usage{InputTokens: 1100, CacheReadTokens: 3000, CacheWriteTokens: 2000, OutputTokens: 70, Requests: 2}
	cost := price.Cost(want)
	if got := rep.Turn; got.InputTokens != want.InputTokens || got.CacheReadTokens != 3000 || got.CacheWriteTokens != 2000 ||
		got.OutputTokens != 70 || got.Requests != 2 || !got.CostKnown() || fmt.Sprintf("%.6f", got.Cost) != fmt.Sprintf("%.6f", cost) {
		t.Errorf("turn usage = %+v, want %+v at $%f", got, want, cost)
	}
	if rep.Session.Requests != 3 || rep.Session.InputTokens != 1107 || fmt.Sprintf("%.6f", rep.Session.Cost) != fmt.Sprintf("%.6f", cost+0.5) {
		t.Errorf("session usage = %+v", rep.Session)
	}
	if rep.Used != 3100+20 || rep.Size != 200_000 {
		t.Errorf("used %d of %d, want 3120 of 200000 (the last request's prompt and output)", rep.Used, rep.Size)
	}
	if v := hist.View(t.Context(), "k"); v.Usage.Requests != 3 || v.Usage.OutputTokens != 70 {
		t.Errorf("stored usage = %+v", v.Usage)
	}
	for _, req := range rec.requests() {
		if req.CacheKey == "" || strings.Contains(req.CacheKey, "k") && req.CacheKey == "k" {
			t.Errorf("cache key %q: want a stable key that is not the session key", req.CacheKey)
		}
	}
}

// bigHistory is a history of n turns, each a user message, a tool call and
// a result of size bytes, and an answer.
func bigHistory(t *testing.T, hist gateway.History, n, size int) {
	for i := range n {
		id := fmt.Sprintf("old%d", i)
		hist.Append(t.Context(), "k", gateway.Turn{Messages: []gateway.Message{
			{Role: gateway.RoleUser, Content: text(fmt.Sprintf("question %d", i))},
			{Role: gateway.RoleAssistant, ToolCalls: []gateway.ToolCall{{ID: id, Name: "echo", Args: map[string]any{}}}},
			{Role: gateway.RoleTool, ToolCallID: id, ToolName: "echo", Result: &gateway.Result{Content: text(strings.Repeat("x", size))}},
			{Role: gateway.RoleAssistant, Content: text(fmt.Sprintf("answer %d", i))},
		}})
	}
}

// Near the window the history is compacted before the request: the model
// sees the summary, the newest messages and the new user message; the turn
// records where the summary stops; a call and its result stay together.
func TestRunner_CompactsNearTheWindow(t *testing.T) {
	hist := &gateway.MemoryHistory{}
	bigHistory(t, hist, 20, 4000) // ~20 × 1,000 tokens
	rec := &recorder{answer: func(int, *gateway.Request) (*gateway.Response, error) { return say("ok", gateway.Usage{}) }}
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{echoTool("echo")})
	r := New(reg, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: rec.provider(), ContextWindow: 20_000}}})
	evs, emit := collect()
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("newest")}, emit); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	// Twenty turns of a 20,000-token window do not fit one summarization
	// request (summaryFit): they are summarized a part at a time.
	if len(reqs) < 2 || slices.ContainsFunc(reqs[:len(reqs)-1], func(r *gateway.Request) bool { return !isSummaryRequest(r) }) {
		t.Fatalf("want summarization requests then the turn's; got %d requests", len(reqs))
	}
	final := reqs[len(reqs)-1]
	lastSummary := fmt.Sprintf("summary %d", len(reqs)-2)
	if first := gateway.PromptText(final.Messages[0].Content); !strings.HasPrefix(first, summaryPreamble) || !strings.HasSuffix(first, lastSummary) {
		t.Errorf("first message = %.80q, want the summary", first)
	}
	if last := final.Messages[len(final.Messages)-1]; gateway.PromptText(last.Content) != "newest" {
		t.Errorf("last message = %+v, want the new user message", last)
	}
	if second := final.Messages[1]; second.Role == gateway.RoleTool {
		t.Error("the kept messages start with a tool result: a call was split from its result")
	}
	if est := requestTokens(final); est > 16_000 {
		t.Errorf("the request after compaction is still ~%d tokens of a 20,000 window", est)
	}
	// Its steps: the start, the summary in one piece (this model does not
	// stream it), the end.
	reps := compactionSteps(*evs)
	if len(reps) != 3 || reps[0].Status != gateway.CompactionInProgress || reps[0].Delta != "" ||
		reps[1].Status != gateway.CompactionInProgress || reps[1].Delta != lastSummary ||
		reps[2].Status != gateway.CompactionCompleted || reps[2].Summary != lastSummary ||
		reps[2].Reason != "threshold" || reps[2].After >= reps[2].Before || reps[2].Before != reps[0].Before || reps[2].Err != "" {
		t.Errorf("compaction reports = %+v", reps)
	}
	v := hist.View(t.Context(), "k")
	if v.Compaction == nil || v.Compaction.Summary != lastSummary || v.Base != v.Compaction.From || v.Base == 0 || v.Base%4 != 0 {
		t.Fatalf("view after the turn: compaction %+v, base %d", v.Compaction, v.Base)
	}
	// The next turn sees the same summary and no compacted message.
	rec.answer = func(int, *gateway.Request) (*gateway.Response, error) { return say("ok", gateway.Usage{}) }
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("next")}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	next := rec.requests()[len(reqs)]
	if !strings.HasSuffix(gateway.PromptText(next.Messages[0].Content), lastSummary) || slices.ContainsFunc(next.Messages, func(m gateway.Message) bool {
		return gateway.PromptText(m.Content) == "question 0"
	}) {
		t.Error("the next turn does not continue from the summary")
	}
}

// A compaction whose summary request fails is reported with the
// provider's error and its hint, the words the front ends show; the turn
// goes on.
func TestRunner_FailedCompactionReportsTheHint(t *testing.T) {
	hist := &gateway.MemoryHistory{}
	bigHistory(t, hist, 20, 4000)
	refused := &provider.Error{Provider: "fake", Status: 500, Hint: "the provider failed, still after the retries; try again later"}
	failing := &fakeProvider{complete: func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		if isSummaryRequest(req) {
			return nil, refused
		}
		return say("ok", gateway.Usage{})
	}}
	r := New(&gateway.Registry{}, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: failing, ContextWindow: 20_000}}})
	evs, emit := collect()
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("newest")}, emit); err != nil {
		t.Fatal(err)
	}
	want := "fake: HTTP 500 Internal Server Error (the provider failed, still after the retries; try again later)"
	reps := compactionSteps(*evs)
	if len(reps) != 2 || reps[0].Status != gateway.CompactionInProgress || reps[1].Status != gateway.CompactionFailed || reps[1].Err != want {
		t.Errorf("compaction reports = %+v, want in_progress, then failed with %q", reps, want)
	}
}

// A provider's "prompt is too long" compacts and retries once.
func TestRunner_TooLongCompactsAndRetries(t *testing.T) {
	hist := &gateway.MemoryHistory{}
	bigHistory(t, hist, 10, 400)
	tooLong := &provider.Error{Provider: "fake", Status: 400, Message: "prompt is too long: 300000 tokens > 200000 maximum", TooLong: true}
	rec := &recorder{answer: func(n int, _ *gateway.Request) (*gateway.Response, error) {
		if n == 0 {
			return nil, tooLong
		}
		return say("ok", gateway.Usage{})
	}}
	r := New(&gateway.Registry{}, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: rec.provider()}}})
	stop, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("newest")}, func(gateway.Event) {})
	if err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Run = %v, %v; want end_turn after a compaction and a retry", stop, err)
	}
	reqs := rec.requests()
	if len(reqs) != 3 || !isSummaryRequest(reqs[1]) || len(reqs[2].Messages) >= len(reqs[0].Messages) {
		t.Fatalf("requests: %d (want too long, summary, retry)", len(reqs))
	}
	// Still too long after the compaction: the turn fails with the
	// provider's error, once.
	rec2 := &recorder{answer: func(int, *gateway.Request) (*gateway.Response, error) { return nil, tooLong }}
	r2 := New(&gateway.Registry{}, &Options{Models: []gateway.Model{{ID: "m", Provider: rec2.provider()}}})
	if _, err := r2.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("alone")}, func(gateway.Event) {}); !errors.Is(err, provider.ErrPromptTooLong) {
		t.Errorf("err = %v, want the too-long error", err)
	}
	if n := len(rec2.requests()); n != 1 {
		t.Errorf("%d requests with nothing to compact, want 1", n)
	}
}

// A result over the budget reaches the model as its head and a note; the
// whole result stays in the history, and read_tool_result pages to its end.
func TestRunner_ResultBudgetAndPaging(t *testing.T) {
	big := strings.Repeat("line of text\n", 80_000) // 1 MiB
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{{Name: "dump", Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
		return gateway.Result{Content: text(big)}, nil
	}}})
	var pages []string
	offset := -1
	rec := &recorder{}
	rec.answer = func(n int, req *gateway.Request) (*gateway.Response, error) {
		if n == 0 {
			return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: "d1", Name: "dump", Args: map[string]any{}}}}}, nil
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role != gateway.RoleTool {
			t.Fatalf("request %d ends with %s", n, last.Role)
		}
		res := gateway.PromptText(last.Result.Content)
		if n > 1 {
			pages = append(pages, res)
		}
		if strings.Contains(res, "the end of the result") {
			return say("read it all", gateway.Usage{})
		}
		var next int
		if i := strings.LastIndex(res, "offset"); i >= 0 {
			fmt.Sscanf(strings.TrimLeft(res[i+len("offset"):], "\": "), "%d", &next)
		}
		if next <= offset {
			t.Fatalf("paging does not advance: %d after %d", next, offset)
		}
		offset = next
		return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: fmt.Sprintf("r%d", n), Name: ReadResultToolName, Args: map[string]any{"toolCallId": "d1", "offset": float64(next), "limit": float64(1 << 20)}}}}}, nil
	}
	hist := &gateway.MemoryHistory{}
	r := New(reg, &Options{History: hist, MaxTurnRequests: 100, Models: []gateway.Model{{ID: "m", Provider: rec.provider(), ContextWindow: 1_000_000}}})
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("dump it")}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	second := reqs[1]
	if shown := messageTokens(second.Messages[len(second.Messages)-1]); shown > DefaultResultBudget+100 {
		t.Errorf("a 1 MiB result reaches the model as ~%d tokens, over the budget of %d (and its note)", shown, DefaultResultBudget)
	}
	if findTool(second.Tools, ReadResultToolName) == nil || findTool(reqs[0].Tools, ReadResultToolName) != nil {
		t.Error("read_tool_result should be offered once a result was cut, not before")
	}
	var whole strings.Builder
	whole.WriteString(second.Messages[len(second.Messages)-1].Result.Content[0].Text)
	for _, p := range pages {
		whole.WriteString(p[:strings.LastIndex(p, "\n[characters")])
	}
	if whole.String() != big {
		t.Errorf("the pages put together are %d bytes, want the %d of the result", whole.Len(), len(big))
	}
	stored := hist.View(t.Context(), "k").Messages[2].Result
	if gateway.PromptText(stored.Content) != big {
		t.Error("the history does not keep the whole result")
	}
}

// A tool's _meta budget (MaxResultChars) wins over the runner's.
func TestBudgeted_ToolLimitAndMedia(t *testing.T) {
	res := &gateway.Result{Content: []gateway.Content{gateway.TextContent(strings.Repeat("a", 1000)), {Type: gateway.ContentImage, MIMEType: "image/png", Data: []byte("not really a png")}}}
	out, cut := budgeted(res, 100, "c")
	if !cut || len(out.Content) != 2 || len(out.Content[0].Text) != 400 || !strings.Contains(out.Content[1].Text, "1 blocks after them left out") {
		t.Errorf("budgeted = %+v", out)
	}
	if out, cut := budgeted(res, 2000, "c"); cut || out != res {
		t.Error("a result within the budget must be passed as is")
	}
	r := New(&gateway.Registry{}, nil)
	if got := r.resultLimit(&gateway.Tool{MaxResultChars: 400_000}); got != 100_000 {
		t.Errorf("resultLimit = %d", got)
	}
}

// manyTools are n deferrable tools whose names and descriptions differ.
func manyTools(n int) []*gateway.Tool {
	topics := []string{"issue", "pull request", "branch", "commit", "release", "workflow", "label", "milestone", "comment", "review"}
	verbs := []string{"create", "list", "get", "update", "delete", "search", "merge", "close", "reopen", "assign"}
	out := make([]*gateway.Tool, n)
	for i := range n {
		topic, verb := topics[i%len(topics)], verbs[(i/len(topics))%len(verbs)]
		name := fmt.Sprintf("mcp__s%d__%s_%s_%d", i%3, verb, strings.ReplaceAll(topic, " ", "_"), i)
		out[i] = &gateway.Tool{Name: name, Group: fmt.Sprintf("s%d", i%3),
			Description: fmt.Sprintf("%s a %s in the repository (variant %d)", verb, topic, i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"number":{"type":"integer"}}}`),
			Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
				return gateway.Result{Content: text("ran " + name)}, nil
			}}
	}
	return out
}

// Over the threshold, tools are deferred: the model gets the core tools and
// search_tools; a found tool is offered from the next request on, at the
// end of the list, and stays; each request's tool list starts with the
// previous one's.
func TestRunner_ToolSearchDefersAndLoads(t *testing.T) {
	tools := append([]*gateway.Tool{{Name: "mcp__acp__read_file", Core: true, Group: "acp", Execute: echoTool("x").Execute}}, manyTools(300)...)
	reg := &gateway.Registry{}
	reg.Set("k", tools)
	target := tools[42].Name
	rec := &recorder{}
	rec.answer = func(n int, req *gateway.Request) (*gateway.Response, error) {
		switch n {
		case 0:
			return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: "s1", Name: SearchToolName, Args: map[string]any{"query": tools[42].Description}}}}}, nil
		case 1:
			return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: "t1", Name: target, Args: map[string]any{}}}}}, nil
		}
		return say("done", gateway.Usage{})
	}
	hist := &gateway.MemoryHistory{}
	r := New(reg, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: rec.provider(), ContextWindow: 200_000}}})
	evs, emit := collect()
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("do it")}, emit); err != nil {
		t.Fatal(err)
	}
	names := func(ts []*gateway.Tool) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	reqs := rec.requests()
	if got := names(reqs[0].Tools); !slices.Equal(got, []string{"mcp__acp__read_file", SearchToolName}) {
		t.Errorf("first request offers %v, want the core tools and search_tools", got)
	}
	if got := names(reqs[1].Tools); len(got) < 3 || !slices.Equal(got[:2], names(reqs[0].Tools)) || !slices.Contains(got, target) {
		t.Errorf("after the search the tools are %v; want the first list, then the found ones (with %s)", got, target)
	}
	if tokens := toolsTokens(reqs[0].Tools); tokens*10 > toolsTokens(tools) {
		t.Errorf("first-request tool definitions ~%d tokens: over 10%% of all (%d)", tokens, toolsTokens(tools))
	}
	ended := false
	for _, e := range *evs {
		if e.Kind == gateway.EventToolEnd && e.Call.Name == target && e.Call.Status == gateway.ToolCompleted {
			ended = true
		}
	}
	if !ended {
		t.Errorf("%s did not run", target)
	}
	// The next turn still offers it, in the same place.
	rec.answer = func(int, *gateway.Request) (*gateway.Response, error) { return say("ok", gateway.Usage{}) }
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("again")}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	if got, prev := names(rec.requests()[3].Tools), names(reqs[2].Tools); !slices.Equal(got, prev) {
		t.Errorf("next turn's tools %v, want the last request's %v", got, prev)
	}
	// ToolSearchOff offers everything.
	off := New(reg, &Options{ToolSearch: ToolSearchOff, Models: []gateway.Model{{ID: "m", Provider: rec.provider(), ContextWindow: 200_000}}})
	if _, err := off.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("x")}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	all := rec.requests()
	if got := names(all[len(all)-1].Tools); !slices.Equal(got, names(tools)) {
		t.Errorf("with tool search off the model is offered %d tools, want all %d", len(got), len(tools))
	}
	// A session's toggle overrides the configuration either way: off
	// offers everything, on defers as "auto" does.
	no, yes := false, true
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("x"), Toggles: gateway.Toggles{ToolSearch: &no}}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	all = rec.requests()
	if got := names(all[len(all)-1].Tools); !slices.Contains(got, tools[299].Name) || slices.Contains(got, SearchToolName) {
		t.Errorf("toggled off, the model is offered %d tools (search_tools among them: %v), want all", len(got), slices.Contains(got, SearchToolName))
	}
	if _, err := off.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("x"), Toggles: gateway.Toggles{ToolSearch: &yes}}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	all = rec.requests()
	if got := names(all[len(all)-1].Tools); !slices.Contains(got, SearchToolName) || len(got) > 10 {
		t.Errorf("toggled on over ToolSearchOff, the model is offered %v, want search_tools and few others", got)
	}
}

func TestRankTools(t *testing.T) {
	tools := manyTools(300)
	for _, i := range []int{0, 42, 123, 299} {
		got := rankTools(tools, tools[i].Description, 5)
		if len(got) == 0 || got[0] != tools[i] {
			t.Errorf("query %q: best is %v, want %s", tools[i].Description, got, tools[i].Name)
		}
	}
	if got := rankTools(tools, "merge pull request", 3); len(got) != 3 || !strings.Contains(got[0].Name, "merge_pull_request") {
		t.Errorf("merge pull request → %s", got[0].Name)
	}
	if got := rankTools(tools, "zebra", 5); len(got) != 0 {
		t.Errorf("an unknown word matched %d tools", len(got))
	}
	if w := words("get_PullRequest-v2"); !slices.Equal(w, []string{"get", "pull", "request", "v2"}) {
		t.Errorf("words = %v", w)
	}
}

// /usage and /compact are answered by the runner.
func TestRunner_UsageAndCompactCommands(t *testing.T) {
	hist := &gateway.MemoryHistory{}
	bigHistory(t, hist, 3, 100)
	hist.Append(t.Context(), "k", gateway.Turn{Usage: gateway.Usage{InputTokens: 1234, OutputTokens: 56, Requests: 2, Cost: 0.01}})
	rec := &recorder{answer: func(int, *gateway.Request) (*gateway.Response, error) { return say("ok", gateway.Usage{}) }}
	r := New(&gateway.Registry{}, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: rec.provider(), ContextWindow: 100_000}}})
	answer := func(cmd string) string {
		evs, emit := collect()
		if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("/" + cmd), Command: &gateway.Command{Name: cmd}}, emit); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, e := range *evs {
			if e.Kind == gateway.EventTextDelta {
				b.WriteString(e.Text)
			}
		}
		return b.String()
	}
	if got := answer("usage"); !strings.Contains(got, "2 model requests") || !strings.Contains(got, "1,234 uncached") || !strings.Contains(got, "$0.0100") || !strings.Contains(got, "of 100,000") {
		t.Errorf("/usage = %q", got)
	}
	if len(rec.requests()) != 0 {
		t.Error("/usage asked the model")
	}
	if got := answer("compact"); !strings.Contains(got, "Compacted") {
		t.Errorf("/compact = %q", got)
	}
	v := hist.View(t.Context(), "k")
	if v.Compaction == nil || gateway.PromptText(v.Messages[0].Content) != "/compact" {
		t.Errorf("after /compact the model sees %d messages from %q", len(v.Messages), gateway.PromptText(v.Messages[0].Content))
	}
	direct := New(&gateway.Registry{}, &Options{History: hist})
	evs, emit := collect()
	if _, err := direct.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("/compact"), Command: &gateway.Command{Name: "compact"}}, emit); err != nil {
		t.Fatal(err)
	}
	if got := (*evs)[0].Text; !strings.Contains(got, "needs a model") {
		t.Errorf("/compact in direct mode = %q", got)
	}
}

// A session's thinking toggle reaches every model request of its turn.
func TestRunner_ThinkingToggle(t *testing.T) {
	rec := &recorder{}
	rec.answer = func(int, *gateway.Request) (*gateway.Response, error) { return say("ok", gateway.Usage{}) }
	r := New(&gateway.Registry{}, &Options{Models: []gateway.Model{{ID: "m", Provider: rec.provider()}}})
	on := true
	for _, tg := range []gateway.Toggles{{}, {Thinking: &on}} {
		if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("x"), Toggles: tg}, func(gateway.Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := rec.requests()
	if reqs[0].Thinking != nil || reqs[1].Thinking == nil || !*reqs[1].Thinking {
		t.Errorf("thinking per request = %v, %v; want nil, then on", reqs[0].Thinking, reqs[1].Thinking)
	}
}
