package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// A real model's context and bill, end to end (issue 23): the built agent,
// a real MCP server (the Go fixture) for its tools, and the fake model
// providers, which enforce the context window with the real APIs' errors and
// count tokens by their rules, as the model behind the config file's
// model.baseURL.

// Texts the runner puts in front of the model (gateway/runner/compact.go).
const (
	summaryAsk      = "replaced by the summary you write now"
	summaryPreamble = "This session continues from an earlier conversation that was compacted to fit the context window. A summary of it:\n\n"
)

// compactedRE matches the agent message of a compaction at the threshold and
// its sizes before and after.
var compactedRE = regexp.MustCompile(`\n\[Compacted the conversation because it neared the model's context window: .* \(about (\d+) → (\d+) tokens\)`)

// ctxBackend is one fake provider as the agent's configured model.
type ctxBackend struct {
	name string
	fake func(testing.TB, *fakemodel.Options, ...fakemodel.Turn) *fakemodel.Server
	// baseURL is model.baseURL for a fake server at url.
	baseURL func(url string) string
}

var ctxBackends = []ctxBackend{
	{"anthropic", fakemodel.NewAnthropicWith, func(url string) string { return url }},
	{"openai", fakemodel.NewOpenAIWith, func(url string) string { return url + "/v1" }},
}

// startCtxAgent runs the agent with config cfg (model, store...), written to
// a file; the fake model's API key is in FAKE_MODEL_KEY.
// restartAndLoad stops agent a, starts a new one with cfg (on the same
// store) and loads session sid in it with server.
func restartAndLoad(t *testing.T, a *agent, cfg map[string]any, sid, cwd string, server acpsdk.McpServer) *agent {
	t.Helper()
	if err := a.Stop(20 * time.Second); err != nil {
		t.Fatalf("first agent: %v", err)
	}
	b := startCtxAgent(t, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := b.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{server}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	return b
}

func startCtxAgent(t *testing.T, cfg map[string]any) *agent {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return startAgentWith(t, []string{"FAKE_MODEL_KEY=test-key"}, "--config", path)
}

// ctxModel is config "model" for a fake provider.
func ctxModel(be ctxBackend, url, name string, window int) map[string]any {
	m := map[string]any{"provider": be.name, "name": name, "baseURL": be.baseURL(url), "apiKeyEnv": "FAKE_MODEL_KEY"}
	if window > 0 {
		m["contextWindow"] = window
	}
	return m
}

// modelMsg is a message of a model request, as a scripted model reads it.
type modelMsg struct {
	role  string // user, assistant, or tool (Anthropic: a user message of tool results)
	text  string // the text blocks (of a tool message: of its results), joined
	calls []string
}

// readModelRequest reads the offered tools and the messages (system left
// out) of an Anthropic or OpenAI request body.
func readModelRequest(body map[string]any) (tools []string, msgs []modelMsg) {
	for _, t := range anySlice(body["tools"]) {
		tm, _ := t.(map[string]any)
		if f, ok := tm["function"].(map[string]any); ok {
			tm = f
		}
		name, _ := tm["name"].(string)
		tools = append(tools, name)
	}
	for _, m := range anySlice(body["messages"]) {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		msg := modelMsg{role: role}
		switch c := mm["content"].(type) {
		case string:
			msg.text = c
		case []any:
			for _, b := range c {
				bm, _ := b.(map[string]any)
				switch bm["type"] {
				case "text":
					s, _ := bm["text"].(string)
					msg.text += s
				case "tool_use":
					s, _ := bm["name"].(string)
					msg.calls = append(msg.calls, s)
				case "tool_result":
					msg.role = "tool"
					switch rc := bm["content"].(type) {
					case string:
						msg.text += rc
					case []any:
						for _, rb := range rc {
							s, _ := rb.(map[string]any)["text"].(string)
							msg.text += s
						}
					}
				}
			}
		}
		for _, tc := range anySlice(mm["tool_calls"]) {
			f, _ := tc.(map[string]any)["function"].(map[string]any)
			s, _ := f["name"].(string)
			msg.calls = append(msg.calls, s)
		}
		if msg.role != "system" {
			msgs = append(msgs, msg)
		}
	}
	return tools, msgs
}

func (m modelMsg) same(o modelMsg) bool {
	return m.role == o.role && m.text == o.text && slices.Equal(m.calls, o.calls)
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

// lastUserText is the text of the last user message that is not tool
// results, or "".
func lastUserText(msgs []modelMsg) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].role == "user" {
			return msgs[i].text
		}
	}
	return ""
}

// isSummaryRequest reports whether msgs are a compaction's summarization
// request.
func isSummaryRequest(msgs []modelMsg) bool {
	return len(msgs) > 0 && msgs[len(msgs)-1].role == "user" && strings.Contains(msgs[len(msgs)-1].text, summaryAsk)
}

// toolThenAnswer is a scripted model: a summarization request gets a
// numbered summary (kept in summaries); a new user message gets a call of
// tool with args, and so do its results until the turn has made perTurn
// calls; then the model answers "Done: " and the last user text it sees.
type toolThenAnswer struct {
	tool, args string

	mu        sync.Mutex
	perTurn   int      // calls a turn makes (0: 1)
	made      int      // calls the running turn made
	summaries []string // every summary written, in order
	bad       []string // requests the script did not expect
}

func (m *toolThenAnswer) respond(r fakemodel.Recorded) fakemodel.Turn {
	_, msgs := readModelRequest(r.JSON)
	m.mu.Lock()
	defer m.mu.Unlock()
	call := fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: m.tool, Args: m.args}}}
	switch {
	case isSummaryRequest(msgs):
		s := fmt.Sprintf("Summary %d: the user asked for the environment again and again and the env tool returned it (about 20 KB); nothing else is pending.", len(m.summaries)+1)
		m.summaries = append(m.summaries, s)
		return fakemodel.Turn{Text: s}
	case len(msgs) > 0 && msgs[len(msgs)-1].role == "user":
		m.made = 1
		return call
	case len(msgs) > 0 && msgs[len(msgs)-1].role == "tool" && m.made < max(m.perTurn, 1):
		m.made++
		return call
	case len(msgs) > 0 && msgs[len(msgs)-1].role == "tool":
		return fakemodel.Turn{Text: "Done: " + lastUserText(msgs)}
	}
	m.bad = append(m.bad, fmt.Sprintf("%d messages, last %+v", len(msgs), msgs[len(msgs)-1:]))
	return fakemodel.Turn{Text: "unexpected request"}
}

func (m *toolThenAnswer) setPerTurn(n int) {
	m.mu.Lock()
	m.perTurn = n
	m.mu.Unlock()
}

func (m *toolThenAnswer) lastSummary() (string, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.summaries) == 0 {
		return "", 0
	}
	return m.summaries[len(m.summaries)-1], len(m.summaries)
}

// blob is about n bytes of text in lines of 80.
func blob(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %05d of the environment blob: lorem ipsum dolor sit amet, consectetur adip\n", i)
	}
	return b.String()[:n]
}

// TestContext_LongSessionCompactsAndReloads runs a long session in which
// every turn calls a tool that returns about 20 KB of text, on a model with
// a 200,000-token window: no turn fails, every request carries the turn's
// prompt as its newest user text and fits the window (the fake refuses
// larger ones with HTTP 400), and the history is compacted on the way. A
// new agent process on the same store then loads the session and continues
// it compacted: its first request starts with the last summary, holds what
// the model saw before the restart, and ends with the new prompt.
//
// The session is 200 turns of 20 KB (eight compactions). Each request
// carries up to 160,000 tokens (640 KB) of JSON that both processes encode
// and decode, which the race detector makes about eight times slower (a
// 200-turn session: about 11 s without it, 85 to 105 s with it on 2
// cores); under -race (make test) it is therefore 40 turns of 80 KB, the
// same four windows' worth of results in a fifth of the requests. make
// bench runs the 200 turns of 20 KB in process (BenchmarkEconomy200Turns).
func TestContext_LongSessionCompactsAndReloads(t *testing.T) {
	t.Parallel()
	turns, size := 200, 20_000
	if raceEnabled {
		turns, size = 40, 80_000
	}
	for _, be := range ctxBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			longSession(t, be, turns, 1, size)
		})
	}
}

// TestContext_LongTurnCompactsInside: one turn in which the model calls the
// 20 KB tool 45 times (about 230,000 tokens of results, more than the
// window) is compacted inside the turn: no request passes the window, the
// model keeps seeing the turn's prompt as its newest user text, and the turn
// ends normally. A new process on the same store continues from there.
func TestContext_LongTurnCompactsInside(t *testing.T) {
	t.Parallel()
	for _, be := range ctxBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			longSession(t, be, 1, 45, 20_000) // 46 requests: the runner allows 50 a turn
		})
	}
}

// cpuSlots bounds how many CPU-bound tests run at once: one a core. They
// are the long-context sessions, whose requests of up to 640 KB of JSON the
// race detector makes about eight times slower to encode and decode. make
// test runs more tests than cores at once, for the others mostly wait on
// child processes; four of these at once, beside the unit packages on two
// cores, took a turn past its 60 s deadline.
var cpuSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// cpuBound waits for a slot of cpuSlots and frees it when t ends.
func cpuBound(t *testing.T) {
	cpuSlots <- struct{}{}
	t.Cleanup(func() { <-cpuSlots })
}

// longSession runs turns prompts of calls tool calls each, every call
// returning about size bytes, then restarts the agent and continues the
// session with one more prompt of one call.
func longSession(t *testing.T, be ctxBackend, turns, calls, size int) {
	cpuBound(t)
	const window = 200_000
	start := time.Now()
	model := &toolThenAnswer{tool: "mcp__fx__env", args: `{}`, perTurn: calls}
	fake := be.fake(t, &fakemodel.Options{ContextWindow: window, Respond: model.respond})
	store := filepath.Join(t.TempDir(), "sessions.db")
	cfg := map[string]any{
		"model":       ctxModel(be, fake.URL, "fake-model", window),
		"store":       map[string]any{"path": store},
		"permissions": map[string]any{"allow": []string{"mcp__fx__env"}},
		"limits":      map[string]any{"callsPerMinute": -1}, // 200 calls in well under a minute
	}
	// The fixture's env tool returns its environment: the variable of size
	// bytes and a few lines more.
	server := acpclient.Stdio("fx", fixtureBin, nil, map[string]string{"FIXTURE_BLOB": blob(size)})
	cwd := t.TempDir()

	a := startCtxAgent(t, cfg)
	sid := a.newSession(cwd, server)
	compactions := 0
	var lastAnswer string
	for i := 1; i <= turns; i++ {
		prompt := fmt.Sprintf("Turn %d: show me the environment", i)
		lastAnswer = "Done: " + prompt
		compactions += checkTurn(t, a, fake, sid, prompt, calls, window)
	}
	reqs := fake.Requests()
	summaries, peak := 0, 0
	for _, r := range reqs {
		if _, msgs := readModelRequest(r.JSON); isSummaryRequest(msgs) {
			summaries++
		}
		peak = max(peak, r.Usage.InputTokens+r.Usage.CacheReadTokens+r.Usage.CacheWriteTokens)
	}
	lastSummary, written := model.lastSummary()
	t.Logf("%s: %d turns of %d calls, %d requests, %d compactions, %d summarization requests, largest prompt %d tokens of %d, in %s",
		be.name, turns, calls, len(reqs), compactions, summaries, peak, window, time.Since(start).Round(time.Millisecond))
	if compactions == 0 || summaries < compactions || written != summaries {
		t.Fatalf("%d compaction messages, %d summarization requests, %d summaries written: want at least one compaction, each with its summary", compactions, summaries, written)
	}
	if peak > window {
		t.Errorf("a request of %d tokens was accepted over the window of %d", peak, window)
	}
	model.mu.Lock()
	if len(model.bad) > 0 {
		t.Errorf("requests the scripted model did not expect: %v", model.bad)
	}
	model.mu.Unlock()
	_, before := readModelRequest(reqs[len(reqs)-1].JSON) // what the model saw last before the restart
	// A new process on the same store loads the session and continues it.
	b := restartAndLoad(t, a, cfg, sid, cwd, server)
	from := len(fake.Requests())
	prompt := "After the restart: show me the environment once more"
	model.setPerTurn(1)
	checkTurn(t, b, fake, sid, prompt, 1, window)
	after := fake.Requests()[from:]
	if len(after) != 2 {
		t.Errorf("%d model requests after the reload, want the call and the answer", len(after))
	}
	_, msgs := readModelRequest(after[0].JSON)
	if len(msgs) == 0 || msgs[0].role != "user" || msgs[0].text != summaryPreamble+lastSummary {
		t.Fatalf("the first request after the reload starts with %.300q, want the last summary (%q)", msgs[:min(1, len(msgs))], lastSummary)
	}
	// The model sees what it saw before the restart, the last answer, and
	// the new prompt; not what was compacted away.
	want := append(slices.Clone(before), modelMsg{role: "assistant", text: lastAnswer}, modelMsg{role: "user", text: prompt})
	if !slices.EqualFunc(msgs, want, modelMsg.same) {
		t.Errorf("after the reload the model sees %d messages, want the %d it saw before the restart, the last answer and the prompt:\nfirst: %.200q\nlast: %.200q",
			len(msgs), len(want), msgs[:min(3, len(msgs))], msgs[max(0, len(msgs)-3):])
	}
	if turns > 1 && slices.ContainsFunc(msgs, func(m modelMsg) bool { return m.text == "Turn 1: show me the environment" }) {
		t.Error("after the reload the model sees the first turn, which was compacted away")
	}
}

// checkTurn sends prompt to a, whose model makes calls calls of the env
// tool, and checks the turn: it ends normally with the model's answer, every
// call completes, one usage_update reports the last request, and every model
// request of the turn was accepted (it fit the window) and, but for
// summarization requests, has prompt as its newest user text. It returns how
// many compactions the turn told of, each checked to have shrunk the context
// under the threshold.
func checkTurn(t *testing.T, a *agent, fake *fakemodel.Server, sid, prompt string, calls, window int) int {
	t.Helper()
	from := len(fake.Requests())
	stop, out := a.prompt(sid, prompt)
	reply := text(out)
	if stop != acpsdk.StopReasonEndTurn || strings.Contains(reply, "The turn failed") || strings.Contains(reply, "could not be compacted") {
		t.Fatalf("%s: stop %s, text %q", prompt, stop, reply)
	}
	if !strings.HasSuffix(reply, "Done: "+prompt) {
		t.Fatalf("%s: the turn's text ends %q, want the model's answer to the prompt", prompt, reply[max(0, len(reply)-200):])
	}
	done := 0
	for _, u := range out {
		if tu := u.Update.ToolCallUpdate; tu != nil && tu.Status != nil && *tu.Status != acpsdk.ToolCallStatusInProgress && *tu.Status != acpsdk.ToolCallStatusPending {
			if *tu.Status != acpsdk.ToolCallStatusCompleted || !strings.Contains(contentText(tu), "FIXTURE_BLOB=line 00000") {
				t.Fatalf("%s: the env tool: %s", prompt, acpclient.Format(u))
			}
			done++
		}
	}
	if done != calls {
		t.Fatalf("%s: %d calls completed, want %d", prompt, done, calls)
	}
	compactions := 0
	for _, m := range compactedRE.FindAllStringSubmatch(reply, -1) {
		compactions++
		before, _ := strconv.Atoi(m[1])
		after, _ := strconv.Atoi(m[2])
		if after >= before || after > window*8/10 {
			t.Errorf("%s: compacted from about %d to %d tokens, want fewer and under the threshold", prompt, before, after)
		}
	}
	reqs := fake.Requests()[from:]
	last := reqs[len(reqs)-1].Usage
	if uu := usageUpdates(out); len(uu) != 1 || uu[0].Update.UsageUpdate.Size != window ||
		uu[0].Update.UsageUpdate.Used != last.InputTokens+last.CacheReadTokens+last.CacheWriteTokens+last.OutputTokens {
		t.Fatalf("%s: %d usage_update, want one of the last request's %+v in a window of %d:\n%s", prompt, len(uu), last, window, dump(uu))
	}
	for j, r := range reqs {
		if r.Status != 200 {
			t.Fatalf("%s, request %d: HTTP %d: %.300s", prompt, j, r.Status, r.Body)
		}
		if _, msgs := readModelRequest(r.JSON); !isSummaryRequest(msgs) && lastUserText(msgs) != prompt {
			t.Fatalf("%s, request %d: the last user text is %.200q, want the turn's prompt", prompt, j, lastUserText(msgs))
		}
	}
	return compactions
}
