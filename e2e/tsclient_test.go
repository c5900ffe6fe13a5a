package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// tsClientRun is what e2e/testdata/ts-client.mjs prints.
type tsClientRun struct {
	Initialize map[string]any   `json:"initialize"`
	NewSession map[string]any   `json:"newSession"`
	Configs    []map[string]any `json:"configs"`
	SessionID  string           `json:"sessionId"`
	Updates    []struct {
		SessionID string         `json:"sessionId"`
		Update    map[string]any `json:"update"`
	} `json:"updates"`
	// LoadUpdates are the updates of session/load's replay (tsClient.Load).
	LoadUpdates []struct {
		SessionID string         `json:"sessionId"`
		Update    map[string]any `json:"update"`
	} `json:"loadUpdates"`
	// Permissions are the session/request_permission params answered.
	Permissions []map[string]any `json:"permissions"`
	Stops       []string         `json:"stops"`
	List        map[string]any   `json:"list"`
}

// tsClient is one run of the TypeScript SDK client of
// testdata/ts-client.mjs against the agent (memory store).
type tsClient struct {
	Capabilities map[string]any   // initialize's clientCapabilities
	Servers      []map[string]any // session/new's mcpServers
	Config       []map[string]any // session/set_config_option params, less sessionId
	Prompts      []string
	AwaitNotice  string   // a notice title to wait for at the end, or ""
	AwaitTitle   string   // a session title to wait for at the end, or ""
	Env          []string // the agent's environment, beside PATH and HOME
	Args         []string // the agent's arguments, after --store memory
	Load         bool     // close the session, then session/load it
}

// run runs the client and returns what it printed.
func (c tsClient) run(t *testing.T) tsClientRun {
	t.Helper()
	if _, err := os.Stat(filepath.Join("node_modules", "@agentclientprotocol", "sdk")); err != nil {
		t.Fatalf("%v: the TypeScript ACP SDK is missing; run `make test` (it runs npm ci in e2e/)", err)
	}
	script, err := filepath.Abs("testdata/ts-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	node, err := filepath.Abs(conformanceNode) // Node 22, whatever node the machine has
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	if c.Capabilities == nil {
		c.Capabilities = map[string]any{}
	}
	if c.Servers == nil {
		c.Servers = []map[string]any{}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script, agentBin, "--store", "memory"}, c.Args...)...)
	cmd.Dir = t.TempDir() // the session's cwd
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"CLIENT_CAPABILITIES=" + enc(c.Capabilities), "MCP_SERVERS=" + enc(c.Servers), "CONFIG=" + enc(c.Config),
		"PROMPTS=" + enc(c.Prompts), "AWAIT_NOTICE=" + c.AwaitNotice, "AWAIT_TITLE=" + c.AwaitTitle}, c.Env...)
	if c.Load {
		cmd.Env = append(cmd.Env, "LOAD=1")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the TypeScript ACP client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var run tsClientRun
	if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
		t.Fatalf("client output: %v\n%s", err, stdout.String())
	}
	return run
}

// notices returns the notice updates of run.
func (r tsClientRun) notices() []map[string]any {
	var out []map[string]any
	for _, u := range r.Updates {
		if u.Update["sessionUpdate"] == "notice" {
			out = append(out, u.Update)
		}
	}
	return out
}

// TestNotices_TypeScriptClient: an editor on the official TypeScript SDK
// (the current schema, which validates every update it gets) that
// advertises session.notices hears of a server that failed to start, and
// later of one that stopped, as warning notices naming the server, and no
// agent message about either; a tool_call names its tool beside its
// title.
func TestNotices_TypeScriptClient(t *testing.T) {
	t.Parallel()
	run := tsClient{
		Capabilities: map[string]any{"session": map[string]any{"notices": map[string]any{}}},
		Servers: []map[string]any{
			{"name": "broken", "command": "/nonexistent/acp-agent-e2e-server", "args": []string{}, "env": []any{}},
			{"name": "everything", "command": "node", "args": []string{everything, "stdio"}, "env": []any{}},
			{"name": "fixture", "command": fixtureBin, "args": []string{}, "env": []any{}},
		},
		Prompts:     []string{`/call mcp__everything__echo {"message":"hi"}`, "/call mcp__fixture__crash"},
		AwaitNotice: "stopped",
	}.run(t)

	ns := run.notices()
	if len(ns) != 2 {
		t.Fatalf("%d notices, want 2 (broken failed, fixture stopped): %+v", len(ns), ns)
	}
	if ns[0]["severity"] != "warning" || ns[0]["title"] != `MCP server "broken" failed` || !strings.Contains(ns[0]["description"].(string), "/nonexistent/acp-agent-e2e-server") {
		t.Errorf("first notice = %+v, want broken failed, with why", ns[0])
	}
	if ns[1]["severity"] != "warning" || ns[1]["title"] != `MCP server "fixture" stopped` {
		t.Errorf("second notice = %+v, want fixture stopped", ns[1])
	}
	var named bool
	for _, u := range run.Updates {
		switch u.Update["sessionUpdate"] {
		case "agent_message_chunk":
			if text, _ := u.Update["content"].(map[string]any)["text"].(string); strings.Contains(text, "broken") {
				t.Errorf("an agent message about the failed server besides the notice: %q", text)
			}
		case "tool_call":
			if u.Update["title"] == "Echo Tool (everything)" {
				named = u.Update["name"] == "mcp__everything__echo"
			}
		}
	}
	if !named {
		t.Errorf("no tool_call titled \"Echo Tool (everything)\" with name mcp__everything__echo in %+v", run.Updates)
	}
}

// TestConfigOptions_TypeScriptClient: to an editor on the TypeScript SDK
// that advertises session.configOptions.boolean, a session with an
// Anthropic model offers extended thinking (off: none is configured) and
// tool search (on) as boolean options; turning thinking on makes the next
// model request think, and its thoughts stream as agent_thought_chunk.
func TestConfigOptions_TypeScriptClient(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewAnthropic(t, fakemodel.Turn{Thinking: "step by step", Text: "42"})
	cfg := fakeAnthropicConfig(t, fake.URL)
	run := tsClient{
		Capabilities: map[string]any{"session": map[string]any{"configOptions": map[string]any{"boolean": map[string]any{}}}},
		Config:       []map[string]any{{"configId": "thinking", "type": "boolean", "value": true}},
		Prompts:      []string{"think"},
		Env:          []string{"FAKE_ANTHROPIC_KEY=test-key"},
		Args:         []string{"--config", cfg},
	}.run(t)
	options := func(v any) map[string]any {
		out := map[string]any{}
		list, _ := v.([]any)
		for _, o := range list {
			m, _ := o.(map[string]any)
			out[fmt.Sprint(m["id"])] = fmt.Sprintf("%v:%v", m["type"], m["currentValue"])
		}
		return out
	}
	if got := options(run.NewSession["configOptions"]); got["thinking"] != "boolean:false" || got["tool_search"] != "boolean:true" || got["model"] == nil {
		t.Errorf("session/new configOptions = %v, want model, thinking off, tool_search on", got)
	}
	if got := options(run.Configs[0]["configOptions"]); got["thinking"] != "boolean:true" {
		t.Errorf("after turning thinking on: %v", got)
	}
	rs := fake.Requests()
	if len(rs) != 1 {
		t.Fatalf("%d model requests, want 1", len(rs))
	}
	if th, _ := rs[0].JSON["thinking"].(map[string]any); th["type"] != "enabled" {
		t.Errorf("the model request's thinking = %v, want enabled", rs[0].JSON["thinking"])
	}
	thought := false
	for _, u := range run.Updates {
		if u.Update["sessionUpdate"] == "agent_thought_chunk" {
			thought = true
		}
	}
	if !thought || len(run.Stops) != 1 || run.Stops[0] != "end_turn" {
		t.Errorf("thought chunks %v, stops %v; want thoughts and end_turn", thought, run.Stops)
	}
}

// TestTitles_TypeScriptClient: with a model, the session's title is the
// one the model writes after the first turn, from the first prompt, in one
// small request apart from the turn's (no tools, at most 32 tokens out);
// the editor gets it as a session_info_update and session/list shows it.
func TestTitles_TypeScriptClient(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewAnthropicWith(t, &fakemodel.Options{Title: "Parser refactoring"}, fakemodel.Turn{Text: "Done."}, fakemodel.Turn{Text: "You're welcome."})
	cfg := fakeAnthropicConfig(t, fake.URL)
	run := tsClient{
		Prompts:    []string{"please refactor the parser in parse.go\nit has grown too long", "thanks"},
		AwaitTitle: "Parser refactoring",
		Env:        []string{"FAKE_ANTHROPIC_KEY=test-key"},
		Args:       []string{"--config", cfg},
	}.run(t)
	titles := run.titles()
	if len(titles) == 0 || titles[len(titles)-1] != "Parser refactoring" {
		t.Errorf("session_info_update titles %q, want the model's last", titles)
	}
	sessions, _ := run.List["sessions"].([]any)
	if len(sessions) != 1 || sessions[0].(map[string]any)["title"] != "Parser refactoring" {
		t.Errorf("session/list = %v, want the model's title", run.List)
	}
	trs := fake.TitleRequests()
	if len(trs) != 1 {
		t.Fatalf("%d title requests, want 1", len(trs))
	}
	tr := trs[0]
	if tools, _ := tr.JSON["tools"].([]any); len(tools) != 0 || tr.JSON["max_tokens"] != float64(32) || !strings.Contains(string(tr.Body), "please refactor the parser") || strings.Contains(string(tr.Body), "thanks") {
		t.Errorf("title request: %s", tr.Body)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("%d turn requests, want 2 (the title's is apart)", n)
	}
	first := fake.Requests()[0].Usage
	t.Logf("title request: %d input tokens, %d output tokens; the first turn's request: %d input (%d of them written to the cache), %d output",
		tr.Usage.InputTokens, tr.Usage.OutputTokens, first.InputTokens+first.CacheWriteTokens+first.CacheReadTokens, first.CacheWriteTokens, first.OutputTokens)
}

// TestTitles_EscapesNeverReachTheEditor: a model's title, and the first
// prompt's words a session is titled by until then, reach the editor
// (session_info_update, session/list) as one line of visible text: no
// terminal escape sequences (which set a terminal's title or clear its
// screen), no bidirectional overrides or zero-width characters.
func TestTitles_EscapesNeverReachTheEditor(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewAnthropicWith(t, &fakemodel.Options{Title: "\u001b]0;PWNED\u0007\u001b[2J… \u202egnp.exe\u200b"}, fakemodel.Turn{Text: "Done."}, fakemodel.Turn{Text: "You're welcome."})
	cfg := fakeAnthropicConfig(t, fake.URL)
	run := tsClient{
		Prompts:    []string{"\u001b]2;PWNED\u0007please \u001b[31mrefactor\u001b[0m \u2066it\u2069\nmore", "thanks"},
		AwaitTitle: "… gnp.exe",
		Env:        []string{"FAKE_ANTHROPIC_KEY=test-key"},
		Args:       []string{"--config", cfg},
	}.run(t)
	titles := run.titles()
	if len(titles) < 2 || titles[0] != "please refactor it" || titles[len(titles)-1] != "… gnp.exe" {
		t.Errorf("session_info_update titles %q, want the first prompt's visible words, then the model's visible title", titles)
	}
	sessions, _ := run.List["sessions"].([]any)
	if len(sessions) != 1 || sessions[0].(map[string]any)["title"] != "… gnp.exe" {
		t.Errorf("session/list = %v, want the model's visible title", run.List)
	}
	for _, title := range titles {
		if strings.ContainsAny(title, "\u001b\u0007\u202e\u200b\u2066") {
			t.Errorf("a title reached the editor with hidden characters: %q", title)
		}
	}
}

// fakeAnthropicConfig writes a config file whose model is the fake
// Anthropic API at url (its key in FAKE_ANTHROPIC_KEY), with the model keys
// of extra (such as contextWindow) besides, and returns its path.
func fakeAnthropicConfig(t *testing.T, url string, extra ...map[string]any) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.json")
	model := map[string]any{"provider": "anthropic", "name": "claude-fake", "baseURL": url, "apiKeyEnv": "FAKE_ANTHROPIC_KEY"}
	for _, e := range extra {
		maps.Copy(model, e)
	}
	data, _ := json.Marshal(map[string]any{"model": model})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// titles are the titles of the run's session_info_update notifications, in
// order.
func (r tsClientRun) titles() []string {
	var titles []string
	for _, u := range r.Updates {
		if u.Update["sessionUpdate"] == "session_info_update" {
			if title, ok := u.Update["title"].(string); ok {
				titles = append(titles, title)
			}
		}
	}
	return titles
}
