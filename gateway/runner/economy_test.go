package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/anthropic"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// The economy of a long session, measured with the fake providers, which
// count and cache tokens by the real APIs' rules (testfixtures/fakemodel):
// a 30-turn session over 300 tools of 3 servers, each turn calling a
// different tool, run as the agent runs it (tool search, cache
// breakpoints) and naively (every tool every request, nothing cached).

// economySystem is the system prompt of the sessions: the ACP front end's.
const economySystem = "You are acp-agent, a coding assistant working inside the user's editor through the Agent Client Protocol. " +
	"The session's working directory is /work/project. Use the tools you are given (MCP servers the editor connected) when they help; " +
	"say briefly what you are doing. If a tool call fails or the user declines it, explain and adapt instead of retrying the same call."

// econTools are n GitHub-like tools of three servers (about 200 tokens of
// definition each) and eight built-in (Core) tools.
func econTools(n int, calls *atomic.Int32) []*gateway.Tool {
	verbs := []string{"create", "list", "get", "update", "delete", "search", "merge", "close", "reopen", "assign"}
	topics := []string{"issue", "pull request", "branch", "commit", "release", "workflow run", "label", "milestone", "comment", "review"}
	servers := []string{"github", "gitlab", "jira"}
	run := func(name string) func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
		return func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
			calls.Add(1)
			return gateway.Result{Content: []gateway.Content{gateway.TextContent(`{"ok":true,"tool":"` + name + `","items":[{"id":1,"title":"Fix the flaky test","state":"open"},{"id":2,"title":"Bump the SDK","state":"closed"}]}`)}}, nil
		}
	}
	var out []*gateway.Tool
	for _, b := range []string{"read_file", "write_file", "edit_file", "list_directory", "search_files", "run_command", "fetch_url", "update_plan"} {
		name := "mcp__acp__" + b
		out = append(out, &gateway.Tool{Name: name, Group: "acp", Core: true,
			Description: "Built-in tool " + b + ": works on the session's files through the editor; paths are relative to the working directory.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"A path in the working directory"},"content":{"type":"string","description":"Text to write, when the tool writes"}},"required":["path"]}`),
			Execute:     run(name)})
	}
	for i := range n {
		srv, verb, topic := servers[i%3], verbs[(i/3)%len(verbs)], topics[(i/30)%len(topics)]
		name := fmt.Sprintf("mcp__%s__%s_%s_%d", srv, verb, strings.ReplaceAll(topic, " ", "_"), i)
		desc := fmt.Sprintf("%s a %s on %s (operation %d). Use it when the user wants to %s %ss of a repository or project; "+
			"it returns JSON with the %s's fields. Requires the owner and repository; paginated with page and perPage.", verb, topic, srv, i, verb, topic, topic)
		schema := fmt.Sprintf(`{"type":"object","properties":{"owner":{"type":"string","description":"Repository owner (user or organization)"},`+
			`"repo":{"type":"string","description":"Repository name"},"%s_number":{"type":"integer","description":"The %s number"},`+
			`"page":{"type":"integer","minimum":1,"description":"Page number for pagination"},"perPage":{"type":"integer","minimum":1,"maximum":100,"description":"Results per page"},`+
			`"state":{"type":"string","enum":["open","closed","all"],"description":"Filter by state"}},"required":["owner","repo"]}`, strings.ReplaceAll(topic, " ", "_"), topic)
		out = append(out, &gateway.Tool{Name: name, Group: srv, Description: desc, InputSchema: json.RawMessage(schema), Execute: run(name)})
	}
	return out
}

// scriptedModel is the fake model of the economy sessions: each user
// message names the tool the turn needs ("Turn N: use TOOL: DESCRIPTION");
// the model calls it if it is offered, else searches for it with its
// description, then calls it, then answers. A summarization request gets a
// summary.
func scriptedModel(r fakemodel.Recorded) fakemodel.Turn {
	tools, msgs := parseRequest(r.JSON)
	last := msgs[len(msgs)-1]
	if last.role == "user" && strings.Contains(last.text, "replaced by the summary you write now") {
		return fakemodel.Turn{Text: "Summary: the user asked for one tool per turn; each was found and called."}
	}
	var target, desc string
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.role == "user" && strings.HasPrefix(m.text, "Turn ") {
			_, rest, _ := strings.Cut(m.text, " use ")
			target, desc, _ = strings.Cut(rest, ": ")
			break
		}
	}
	call := func(name, args string) fakemodel.Turn {
		return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: name, Args: args}}}
	}
	switch {
	case last.role == "user" && slices.Contains(tools, target):
		return call(target, `{"owner":"acme","repo":"widgets"}`)
	case last.role == "user" && slices.Contains(tools, runner.SearchToolName):
		q, _ := json.Marshal(map[string]string{"query": desc})
		return call(runner.SearchToolName, string(q))
	case last.role == "tool" && len(msgs) > 1 && slices.Contains(msgs[len(msgs)-2].calls, runner.SearchToolName):
		if !slices.Contains(tools, target) {
			return fakemodel.Turn{Text: "NOT FOUND " + target}
		}
		return call(target, `{"owner":"acme","repo":"widgets"}`)
	}
	return fakemodel.Turn{Text: "Done: " + target + " returned two items."}
}

// reqMessage is a request's message as the scripted model reads it.
type reqMessage struct {
	role  string // user, assistant or tool (a user message of tool results, for Anthropic)
	text  string
	calls []string // the tools an assistant message called
}

// parseRequest reads the offered tools and the messages of an Anthropic or
// OpenAI request body.
func parseRequest(body map[string]any) (tools []string, msgs []reqMessage) {
	for _, t := range asSlice(body["tools"]) {
		tm := t.(map[string]any)
		if f, ok := tm["function"].(map[string]any); ok {
			tm = f
		}
		tools = append(tools, tm["name"].(string))
	}
	for _, m := range body["messages"].([]any) {
		mm := m.(map[string]any)
		msg := reqMessage{role: mm["role"].(string)}
		switch c := mm["content"].(type) {
		case string:
			msg.text = c
		case []any:
			for _, b := range c {
				bm := b.(map[string]any)
				switch bm["type"] {
				case "text":
					msg.text += bm["text"].(string)
				case "tool_use":
					msg.calls = append(msg.calls, bm["name"].(string))
				case "tool_result":
					msg.role = "tool"
				}
			}
		}
		for _, tc := range asSlice(mm["tool_calls"]) {
			msg.calls = append(msg.calls, tc.(map[string]any)["function"].(map[string]any)["name"].(string))
		}
		if msg.role == "system" {
			continue
		}
		msgs = append(msgs, msg)
	}
	return tools, msgs
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// economy is what one session cost.
type economy struct {
	requests   int
	usage      fakemodel.Usage // summed over the requests
	firstTools int             // tokens of the first request's tool definitions
	reached    int             // turns whose tool ran
	failed     int             // turns that failed
}

// billed is the billed-equivalent input tokens: uncached ×1, cache write
// ×1.25, cache read ×0.1.
func (e economy) billed() float64 { return e.usage.Billed() }

// prompt is every prompt token, as if nothing were cached.
func (e economy) prompt() int {
	return e.usage.InputTokens + e.usage.CacheReadTokens + e.usage.CacheWriteTokens
}

// runEconomy runs the 30-turn session on api ("anthropic" or "openai") with
// tool search set to search.
func runEconomy(tb testing.TB, api string, search runner.ToolSearch, turns int) economy {
	var calls atomic.Int32
	tools := econTools(300, &calls)
	var srv *fakemodel.Server
	var prov gateway.Provider
	model := gateway.Model{ID: api}
	switch api {
	case "anthropic":
		srv = fakemodel.NewAnthropicWith(tb, &fakemodel.Options{ContextWindow: 200_000, Respond: scriptedModel})
		prov = anthropic.New(&provider.Options{Model: "claude-sonnet-4-5", APIKey: "test", BaseURL: srv.URL, MaxRetries: -1})
		model.ContextWindow = 200_000
	default:
		srv = fakemodel.NewOpenAIWith(tb, &fakemodel.Options{ContextWindow: 1_047_576, Respond: scriptedModel})
		prov = openai.New(&provider.Options{Model: "gpt-4.1", APIKey: "test", BaseURL: srv.URL + "/v1", MaxRetries: -1})
		model.ContextWindow = 1_047_576
	}
	model.Provider = prov
	gw := runner.NewLocal(&runner.Options{Models: []gateway.Model{model}, ToolSearch: search, Permissions: runner.Permissions{Mode: runner.PermissionAllow}})
	_ = gw.SetExtraTools(context.Background(), "econ", tools)
	order := rand.New(rand.NewPCG(23, 30)).Perm(300)
	var e economy
	for i := range turns {
		target := tools[8+order[i]]
		before := calls.Load()
		msg := fmt.Sprintf("Turn %d: use %s: %s", i+1, target.Name, target.Description)
		_, err := gw.Send(context.Background(), gateway.SendRequest{SessionKey: "econ", System: economySystem,
			Message: []gateway.Content{gateway.TextContent(msg)}}, func(gateway.Event) {})
		switch {
		case err != nil:
			e.failed++
			tb.Logf("turn %d failed: %v", i+1, err)
		case calls.Load() > before:
			e.reached++
		}
	}
	reqs := srv.Requests()
	if testing.Verbose() && search == runner.ToolSearchAuto {
		for i, r := range reqs {
			tb.Logf("req %d: in %d read %d write %d tools %d msgs %d", i, r.Usage.InputTokens, r.Usage.CacheReadTokens, r.Usage.CacheWriteTokens, len(asSlice(r.JSON["tools"])), len(asSlice(r.JSON["messages"])))
		}
	}
	e.requests = len(reqs)
	for _, r := range reqs {
		e.usage.InputTokens += r.Usage.InputTokens
		e.usage.CacheReadTokens += r.Usage.CacheReadTokens
		e.usage.CacheWriteTokens += r.Usage.CacheWriteTokens
		e.usage.OutputTokens += r.Usage.OutputTokens
	}
	if len(reqs) > 0 {
		b, _ := json.Marshal(reqs[0].JSON["tools"])
		e.firstTools = (len(b) + 3) / 4
	}
	return e
}

// TestEconomy_ToolSearchAndCaching checks the yes/no of the 30-turn session
// on both providers: every scripted tool is reached, the billed input is at
// most 15 % of the naive session's, and the first request's tool
// definitions at most 10 % of all 300 schemas.
func TestEconomy_ToolSearchAndCaching(t *testing.T) {
	t.Parallel()
	for _, api := range []string{"anthropic", "openai"} {
		t.Run(api, func(t *testing.T) {
			agent := runEconomy(t, api, runner.ToolSearchAuto, 30)
			naive := runEconomy(t, api, runner.ToolSearchOff, 30)
			if agent.reached != 30 || agent.failed != 0 || naive.reached != 30 {
				t.Errorf("tools reached: %d of 30 (%d failed turns); naive %d", agent.reached, agent.failed, naive.reached)
			}
			ratio := agent.billed() / float64(naive.prompt())
			t.Logf("%s: billed-equivalent input %.0f tokens vs naive %d (%.1f%%); first-request tool definitions %d vs %d tokens (%.1f%%); %d vs %d requests",
				api, agent.billed(), naive.prompt(), 100*ratio, agent.firstTools, naive.firstTools, 100*float64(agent.firstTools)/float64(naive.firstTools), agent.requests, naive.requests)
			if ratio > 0.15 {
				t.Errorf("billed-equivalent input is %.1f%% of the naive session's, want at most 15%%", 100*ratio)
			}
			if agent.firstTools*10 > naive.firstTools {
				t.Errorf("first-request tool definitions are %d tokens, over 10%% of all (%d)", agent.firstTools, naive.firstTools)
			}
		})
	}
}

// BenchmarkEconomy30Turns reports the 30-turn session's tokens per
// provider, as the agent sends it and naively: billed-input (uncached ×1,
// cache write ×1.25, cache read ×0.1), naive-input (every prompt token at
// full price, tool search off), billed-% (the first of the second), and the
// first request's tool-definition tokens against all 300 schemas.
func BenchmarkEconomy30Turns(b *testing.B) {
	for _, api := range []string{"anthropic", "openai"} {
		b.Run(api, func(b *testing.B) {
			var agent, naive economy
			for b.Loop() {
				agent = runEconomy(b, api, runner.ToolSearchAuto, 30)
				naive = runEconomy(b, api, runner.ToolSearchOff, 30)
			}
			b.ReportMetric(agent.billed(), "billed-input")
			b.ReportMetric(float64(naive.prompt()), "naive-input")
			b.ReportMetric(100*agent.billed()/float64(naive.prompt()), "billed-%")
			b.ReportMetric(float64(agent.usage.CacheReadTokens), "cache-read")
			b.ReportMetric(float64(agent.usage.CacheWriteTokens), "cache-write")
			b.ReportMetric(float64(agent.usage.InputTokens), "uncached")
			b.ReportMetric(float64(agent.firstTools), "first-tool-defs")
			b.ReportMetric(float64(naive.firstTools), "all-tool-defs")
			b.ReportMetric(float64(agent.reached), "tools-reached")
		})
	}
}

// A model whose window is not known learns it from its provider (once):
// Anthropic's Models API here, and the runner compacts before the window.
func TestReportedWindow_CompactsBeforeIt(t *testing.T) {
	var calls atomic.Int32
	srv := fakemodel.NewAnthropicWith(t, &fakemodel.Options{ContextWindow: 30_000, Respond: scriptedModel})
	model := gateway.Model{ID: "anthropic:claude-unlisted", Provider: anthropic.New(&provider.Options{Model: "claude-unlisted", APIKey: "test", BaseURL: srv.URL, MaxRetries: -1})}
	tools := econTools(10, &calls)
	gw := runner.NewLocal(&runner.Options{Models: []gateway.Model{model}, Permissions: runner.Permissions{Mode: runner.PermissionAllow}})
	_ = gw.SetExtraTools(t.Context(), "w", tools)
	for i := range 40 {
		target := tools[8+i%10]
		msg := fmt.Sprintf("Turn %d: use %s: %s %s", i+1, target.Name, target.Description, strings.Repeat("padding ", 400))
		if _, err := gw.Send(t.Context(), gateway.SendRequest{SessionKey: "w", Message: []gateway.Content{gateway.TextContent(msg)}}, func(gateway.Event) {}); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
	}
	if n := srv.ModelInfoRequests(); n != 1 {
		t.Errorf("the model's window was asked %d times, want once", n)
	}
	summaries := 0
	for _, r := range srv.Requests() {
		if r.Status != 200 {
			t.Errorf("a request got HTTP %d: the window was passed", r.Status)
		}
		if _, msgs := parseRequest(r.JSON); strings.Contains(msgs[len(msgs)-1].text, "replaced by the summary you write now") {
			summaries++
		}
	}
	if summaries == 0 {
		t.Error("40 long turns in a 30,000-token window and no compaction")
	}
}

// An OpenAI-compatible server's model list gives the window (vLLM's
// max_model_len).
func TestReportedWindow_OpenAICompatible(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"other","object":"model","created":0,"owned_by":"x","max_model_len":1},{"id":"qwen2.5","object":"model","created":0,"owned_by":"vllm","max_model_len":32768}]}`))
	}))
	t.Cleanup(srv.Close)
	p := openai.New(&provider.Options{Model: "qwen2.5", APIKey: "x", BaseURL: srv.URL + "/v1", MaxRetries: -1})
	if n, err := p.ReportedWindow(t.Context()); err != nil || n != 32768 {
		t.Errorf("ReportedWindow = %d, %v; want 32768", n, err)
	}
}

// longSession is what a long session of big tool results did.
type longSession struct {
	turns, failed int
	compactions   int // the agent's summarization requests
	server        int // the provider's compactions (EventCompaction "server")
	answered      int // turns that ended with the model's answer after the tool ran
	maxPrompt     int // the largest prompt sent, in tokens (a compacting request's iterations summed)
	lostNewest    int // requests (not summaries) whose last user text was not the turn's message
	usage         fakemodel.Usage
}

// runLongSession runs turns turns on api, each calling a tool that returns
// size bytes of text, in a window of 200,000 tokens, with the agent's
// compaction alone.
func runLongSession(tb testing.TB, api string, turns, size int) longSession {
	return runLongSessionWith(tb, api, gateway.ContextAgent, 200_000, turns, size)
}

// runLongSessionWith is runLongSession under a context strategy, in a
// window of window tokens.
func runLongSessionWith(tb testing.TB, api string, strategy gateway.ContextStrategy, window, turns, size int) longSession {
	var calls atomic.Int32
	var srv *fakemodel.Server
	var prov gateway.Provider
	switch api {
	case "anthropic":
		srv = fakemodel.NewAnthropicWith(tb, &fakemodel.Options{ContextWindow: window, Respond: scriptedModel})
		prov = anthropic.New(&provider.Options{Model: "claude-sonnet-4-5", APIKey: "test", BaseURL: srv.URL, MaxRetries: -1})
	default:
		srv = fakemodel.NewOpenAIWith(tb, &fakemodel.Options{ContextWindow: window, Respond: scriptedModel})
		prov = openai.New(&provider.Options{Model: "gpt-4.1", APIKey: "test", BaseURL: srv.URL + "/v1", MaxRetries: -1})
	}
	tool := &gateway.Tool{Name: "mcp__logs__tail", Group: "logs", Description: "Tail the build log.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(_ context.Context, id string, _ map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
			calls.Add(1)
			line := "2026-11-26T08:00:00Z build step " + id + " ok: compiled package and ran its tests\n"
			return gateway.Result{Content: []gateway.Content{gateway.TextContent(strings.Repeat(line, size/len(line)+1)[:size])}}, nil
		}}
	model := gateway.Model{ID: api, Provider: prov, ContextWindow: int64(window)}
	gw := runner.NewLocal(&runner.Options{Models: []gateway.Model{model}, Permissions: runner.Permissions{Mode: runner.PermissionAllow}, Context: strategy})
	_ = gw.SetExtraTools(context.Background(), "long", []*gateway.Tool{tool})
	var s longSession
	for i := range turns {
		msg := fmt.Sprintf("Turn %d: use %s: %s", i+1, tool.Name, tool.Description)
		seen := len(srv.Requests())
		var text strings.Builder
		stop, err := gw.Send(context.Background(), gateway.SendRequest{SessionKey: "long", System: economySystem,
			Message: []gateway.Content{gateway.TextContent(msg)}}, func(e gateway.Event) {
			switch {
			case e.Kind == gateway.EventTextDelta:
				text.WriteString(e.Text)
			case e.Kind == gateway.EventCompaction && e.Compaction.Reason == "server":
				s.server++
			}
		})
		s.turns++
		if err != nil || stop != gateway.StopEndTurn {
			s.failed++
			tb.Logf("turn %d: %s %v", i+1, stop, err)
		}
		if strings.HasPrefix(text.String(), "Done: "+tool.Name) {
			s.answered++
		}
		for _, r := range srv.Requests()[seen:] {
			_, msgs := parseRequest(r.JSON)
			last := ""
			for _, m := range msgs {
				if m.role == "user" {
					last = m.text
				}
			}
			if strings.Contains(last, "replaced by the summary you write now") {
				s.compactions++
				continue
			}
			if last != msg {
				s.lostNewest++
			}
		}
	}
	for _, r := range srv.Requests() {
		u := r.Usage
		s.usage.InputTokens += u.InputTokens
		s.usage.CacheReadTokens += u.CacheReadTokens
		s.usage.CacheWriteTokens += u.CacheWriteTokens
		s.usage.OutputTokens += u.OutputTokens
		if r.Status != http.StatusOK {
			s.failed++
		}
		s.maxPrompt = max(s.maxPrompt, u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens)
	}
	return s
}

// TestEconomy_LongSessionNeverFails: 40 turns of 80 KB results in a
// 200,000-token window (about 4 times what it holds; make bench runs 200
// turns of 20 KB): no turn fails, no request passes the window, the newest
// user message is in every request.
func TestEconomy_LongSessionNeverFails(t *testing.T) {
	t.Parallel()
	for _, api := range []string{"anthropic", "openai"} {
		t.Run(api, func(t *testing.T) {
			s := runLongSession(t, api, 40, 80_000)
			t.Logf("%s: %d turns, %d failed, %d compactions, largest prompt %d tokens, billed-equivalent input %.0f (%.0f a turn)",
				api, s.turns, s.failed, s.compactions, s.maxPrompt, s.usage.Billed(), s.usage.Billed()/float64(s.turns))
			if s.failed != 0 || s.lostNewest != 0 || s.compactions == 0 || s.maxPrompt > 200_000 {
				t.Errorf("failed turns %d, requests without the newest message %d, compactions %d, largest prompt %d", s.failed, s.lostNewest, s.compactions, s.maxPrompt)
			}
		})
	}
}

// Under each context strategy, a long session on Anthropic (30 turns of
// 20 KB results in an 80,000-token window: about twice what it holds)
// stays within the window and the model answers every turn: with
// clear_tool_uses the API clears old results and with server_compaction it
// compacts, so the agent's own compaction, the backstop, is never needed;
// with the agent's strategy it compacts itself.
func TestEconomy_ContextStrategies(t *testing.T) {
	t.Parallel()
	const window = 80_000
	for _, strategy := range []gateway.ContextStrategy{gateway.ContextAgent, gateway.ContextClearToolUses, gateway.ContextServerCompaction} {
		t.Run(string(strategy), func(t *testing.T) {
			t.Parallel()
			s := runLongSessionWith(t, "anthropic", strategy, window, 30, 20_000)
			t.Logf("%s: %d turns answered of %d, %d failed, agent compactions %d, server compactions %d, largest prompt %d; uncached %d, cache read %d, cache write %d, output %d",
				strategy, s.answered, s.turns, s.failed, s.compactions, s.server, s.maxPrompt, s.usage.InputTokens, s.usage.CacheReadTokens, s.usage.CacheWriteTokens, s.usage.OutputTokens)
			if s.failed != 0 || s.answered != s.turns || s.lostNewest != 0 {
				t.Errorf("failed %d, answered %d of %d, requests without the newest message %d", s.failed, s.answered, s.turns, s.lostNewest)
			}
			switch strategy {
			case gateway.ContextAgent:
				if s.compactions == 0 || s.server != 0 {
					t.Errorf("agent: %d compactions by the agent, %d by the server", s.compactions, s.server)
				}
			case gateway.ContextClearToolUses:
				if s.compactions != 0 || s.server != 0 || s.maxPrompt > window/2 {
					t.Errorf("clear_tool_uses: %d compactions by the agent, %d by the server, largest prompt %d (want the cleared prompts, near the trigger at half the window)", s.compactions, s.server, s.maxPrompt)
				}
			case gateway.ContextServerCompaction:
				if s.compactions != 0 || s.server == 0 {
					t.Errorf("server_compaction: %d compactions by the agent, %d by the server", s.compactions, s.server)
				}
			}
		})
	}
}

// BenchmarkEconomy200Turns reports the 200-turn session of 20 KB results:
// failed turns, compactions, the largest prompt against the window, and
// the billed-equivalent input per turn.
func BenchmarkEconomy200Turns(b *testing.B) {
	for _, api := range []string{"anthropic", "openai"} {
		b.Run(api, func(b *testing.B) {
			var s longSession
			for b.Loop() {
				s = runLongSession(b, api, 200, 20_000)
			}
			b.ReportMetric(float64(s.failed), "failed-turns")
			b.ReportMetric(float64(s.compactions), "compactions")
			b.ReportMetric(float64(s.maxPrompt), "max-prompt")
			b.ReportMetric(200_000, "window")
			b.ReportMetric(s.usage.Billed()/float64(s.turns), "billed-input/turn")
			b.ReportMetric(float64(s.lostNewest), "newest-missing")
		})
	}
}

// BenchmarkEconomyContext compares the context strategies on the same
// 200-turn Anthropic session of 20 KB results (claude-sonnet-4-5, a
// 200,000-token window): uncached, cache-read and cache-write input
// tokens, output tokens, and the cost in USD at the model's list price
// (provider.KnownModel), with the compactions by the agent and by the
// API, the largest prompt, and the turns answered.
func BenchmarkEconomyContext(b *testing.B) {
	spec, _ := provider.KnownModel("claude-sonnet-4-5")
	for _, strategy := range []gateway.ContextStrategy{gateway.ContextAgent, gateway.ContextClearToolUses, gateway.ContextServerCompaction} {
		b.Run(string(strategy), func(b *testing.B) {
			var s longSession
			for b.Loop() {
				s = runLongSessionWith(b, "anthropic", strategy, 200_000, 200, 20_000)
			}
			u := s.usage
			cost := spec.Pricing.Cost(gateway.Usage{InputTokens: int64(u.InputTokens), CacheReadTokens: int64(u.CacheReadTokens),
				CacheWriteTokens: int64(u.CacheWriteTokens), OutputTokens: int64(u.OutputTokens)})
			b.ReportMetric(float64(u.InputTokens), "uncached")
			b.ReportMetric(float64(u.CacheReadTokens), "cache-read")
			b.ReportMetric(float64(u.CacheWriteTokens), "cache-write")
			b.ReportMetric(float64(u.OutputTokens), "output")
			b.ReportMetric(cost, "USD")
			b.ReportMetric(float64(s.compactions), "agent-compactions")
			b.ReportMetric(float64(s.server), "server-compactions")
			b.ReportMetric(float64(s.maxPrompt), "max-prompt")
			b.ReportMetric(float64(s.answered), "answered")
			b.ReportMetric(float64(s.failed), "failed-turns")
		})
	}
}
