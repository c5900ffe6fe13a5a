package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// storeAgent runs the agent on the store file with the fake OpenAI model.
func storeAgent(t testing.TB, store, modelURL string, env ...string) *agent {
	return startAgentWith(t, append([]string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + modelURL + "/v1"}, env...), "--model", "openai:fake", "--store", store)
}

// transcript reduces updates to what a replay must reproduce: user and agent
// text (joined per message), thoughts, and each tool call with its final
// status, content and rawOutput. Progress and in_progress updates, and the
// notifications that follow session/new, are not part of it.
func transcript(updates []acpsdk.SessionNotification) []string {
	var out []string
	add := func(kind, s string) {
		if n := len(out); n > 0 && strings.HasPrefix(out[n-1], kind+":") && (kind == "agent" || kind == "user") {
			out[n-1] += s
			return
		}
		out = append(out, kind+":"+s)
	}
	for _, n := range updates {
		u := n.Update
		switch {
		case u.UserMessageChunk != nil:
			b, _ := json.Marshal(u.UserMessageChunk.Content)
			add("user", string(b))
		case u.AgentMessageChunk != nil:
			if strings.HasPrefix(acpclient.Text(n), "MCP server ") {
				continue // startup messages
			}
			add("agent", acpclient.Text(n))
		case u.AgentThoughtChunk != nil:
			add("thought", u.AgentThoughtChunk.Content.Text.Text)
		case u.ToolCall != nil:
			tc := u.ToolCall
			in, _ := json.Marshal(tc.RawInput)
			add("tool_call", fmt.Sprintf("%s %s %s %s", tc.ToolCallId, tc.Title, tc.Kind, in))
		case u.ToolCallUpdate != nil:
			tu := u.ToolCallUpdate
			if tu.Status == nil || (*tu.Status != acpsdk.ToolCallStatusCompleted && *tu.Status != acpsdk.ToolCallStatusFailed) {
				continue
			}
			content, _ := json.Marshal(tu.Content)
			raw, _ := json.Marshal(tu.RawOutput)
			add("tool_end", fmt.Sprintf("%s %s %s %s", tu.ToolCallId, *tu.Status, content, raw))
		}
	}
	return out
}

// userEcho is the user_message_chunk the client never receives live (it sent
// the prompt itself) but a replay contains.
func userEcho(prompt string) acpsdk.SessionNotification {
	return acpsdk.SessionNotification{Update: acpsdk.UpdateUserMessageText(prompt)}
}

func TestStore_RestartAndLoad(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "state", "sessions.db")
	fake := fakemodel.NewOpenAI(t)
	cwd := t.TempDir()
	log := filepath.Join(cwd, "fixture.log") // in the cwd: the fixture runs in workspace-write mode

	a := storeAgent(t, store, fake.URL)
	sid := a.newSession(cwd, fixtureServer("fixture", log))
	var expected []acpsdk.SessionNotification
	prompts := []string{"echo hello for me", "now add 2 and 3"}
	fake.Push(
		fakemodel.Turn{Thinking: "use echo", Text: "Calling echo.", ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "mcp__fixture__echo", Args: `{"message":"hello"}`}}},
		fakemodel.Turn{Text: "It said hello."},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_2", Name: "mcp__fixture__add", Args: `{"a":2,"b":3}`}}},
		fakemodel.Turn{Text: "The sum is 5."},
	)
	for _, p := range prompts {
		_, out := a.prompt(sid, p)
		expected = append(expected, userEcho(p))
		expected = append(expected, out...)
	}
	if err := a.Stop(20 * time.Second); err != nil {
		t.Fatalf("first agent: %v", err)
	}

	b := storeAgent(t, store, fake.URL)
	from := len(b.Client.Updates())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := b.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd,
		McpServers: []acpsdk.McpServer{fixtureServer("fixture", log)}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	replayed := b.Client.Updates()[from:] // everything sent before the response
	if !slices.ContainsFunc(replayed, func(n acpsdk.SessionNotification) bool { return n.Update.AvailableCommandsUpdate != nil }) {
		t.Error("no available_commands_update before the session/load response")
	}
	want, got := transcript(expected), transcript(replayed)
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("replayed transcript differs\n--- live ---\n%s\n--- replay ---\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	// The model continues with the restored history.
	fake.Push(fakemodel.Turn{Text: "I remember."})
	_, out := b.prompt(sid, "what did we do?")
	if text(out) != "I remember." {
		t.Errorf("follow-up: %q", text(out))
	}
	reqs := fake.Requests()
	body := string(reqs[len(reqs)-1].Body)
	for _, w := range []string{"echo hello for me", "Calling echo.", "call_1", "Echo: hello", "It said hello.", "now add 2 and 3", "The sum is 5.", "what did we do?"} {
		if !strings.Contains(body, w) {
			t.Errorf("the follow-up request lacks %q", w)
		}
	}

	// session/list shows it with the title the model wrote after the first
	// turn (the fake's answer to its one title request); an unknown id is
	// ACP's resource-not-found error.
	res, err := b.Conn.ListSessions(ctx, acpsdk.ListSessionsRequest{Cwd: &cwd})
	if err != nil || len(res.Sessions) != 1 || string(res.Sessions[0].SessionId) != sid || res.Sessions[0].Title == nil || *res.Sessions[0].Title != "Fake session title" {
		t.Errorf("session/list = %+v, %v", res, err)
	}
	if trs := fake.TitleRequests(); len(trs) != 1 || !strings.Contains(string(trs[0].Body), "echo hello for me") {
		t.Errorf("%d title requests, want 1 with the first prompt", len(trs))
	}
	_, err = b.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: "sess_nope", Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err == nil || !strings.Contains(err.Error(), "sess_nope") || !strings.Contains(err.Error(), "-32002") {
		t.Errorf("unknown id: %v", err)
	}
	// session/close keeps the record; session/resume restores without replay.
	if _, err := b.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	from = len(b.Client.Updates())
	if _, err := b.Conn.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd}); err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	if n := len(transcript(b.Client.Updates()[from:])); n != 0 {
		t.Errorf("resume replayed %d entries", n)
	}
	fake.Push(fakemodel.Turn{Text: "Still here."})
	if _, out := b.prompt(sid, "hello again"); text(out) != "Still here." {
		t.Errorf("after resume: %q", text(out))
	}
	if !strings.Contains(string(fake.Requests()[len(fake.Requests())-1].Body), "what did we do?") {
		t.Error("resume lost the history")
	}
}

func TestStore_KillDuringTurnKeepsEarlierTurns(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "sessions.db")
	fake := fakemodel.NewOpenAI(t)
	cwd := t.TempDir()
	a := storeAgent(t, store, fake.URL)
	sid := a.newSession(cwd, fixtureServer("fixture", ""))
	fake.Push(fakemodel.Turn{Text: "first answer"}, fakemodel.Turn{Text: "second answer"})
	a.prompt(sid, "first")
	a.prompt(sid, "second")
	fake.Push(fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "slow", Name: "mcp__fixture__slow", Args: `{"seconds": 60}`}}})
	from := len(a.Client.Updates())
	go func() { _, _ = a.Prompt(context.Background(), sid, "third, interrupted") }()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := a.Client.WaitFor(ctx, from, toolRunning); err != nil {
		t.Fatal(err)
	}
	pids := descendants(a.Cmd.Process.Pid)
	if err := a.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait(20 * time.Second)
	for _, p := range pids { // the orphaned fixture is not the point here
		_ = syscall.Kill(p, syscall.SIGKILL)
	}

	b := storeAgent(t, store, fake.URL)
	from = len(b.Client.Updates())
	if _, err := b.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("load after kill -9: %v", err)
	}
	got := strings.Join(transcript(b.Client.Updates()[from:]), "\n")
	for _, w := range []string{"first", "first answer", "second", "second answer"} {
		if !strings.Contains(got, w) {
			t.Errorf("replay lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "interrupted") {
		t.Errorf("the killed turn was stored:\n%s", got)
	}
}

func TestStore_TwoAgentsShareTheDatabase(t *testing.T) {
	t.Parallel()
	twoAgentsShare(t, filepath.Join(t.TempDir(), "sessions.db"))
}

// twoAgentsShare runs two agents on store, each prompting two sessions at
// once, and checks each agent replays the other's sessions whole.
func twoAgentsShare(t *testing.T, store string) {
	fake := fakemodel.NewOpenAI(t)
	agents := []*agent{storeAgent(t, store, fake.URL), storeAgent(t, store, fake.URL)}
	cwd := t.TempDir() // every session's: a session reopens in its own cwd
	const prompts = 15
	for range 2 * 2 * prompts {
		fake.Push(fakemodel.Turn{Text: "ok"})
	}
	var wg sync.WaitGroup
	var sids []string
	var mu sync.Mutex
	for _, a := range agents {
		for range 2 {
			sid := a.newSession(cwd)
			mu.Lock()
			sids = append(sids, sid)
			mu.Unlock()
			wg.Go(func() {
				for i := range prompts {
					if _, err := a.Prompt(context.Background(), sid, fmt.Sprintf("prompt %d", i)); err != nil {
						t.Errorf("prompt: %v", err)
					}
				}
			})
		}
	}
	wg.Wait()
	for _, a := range agents {
		if logs := a.stderr.String(); strings.Contains(logs, "storing the turn failed") || strings.Contains(logs, "database is locked") {
			t.Errorf("a write failed:\n%s", logs)
		}
	}
	// Every session, whichever agent wrote it, has all its turns.
	res, err := agents[0].Conn.ListSessions(t.Context(), acpsdk.ListSessionsRequest{})
	if err != nil || len(res.Sessions) != 4 {
		t.Fatalf("list: %+v %v", res, err)
	}
	c := agents[1]
	for _, sid := range sids[:2] { // written by the other agent
		from := len(c.Client.Updates())
		if _, err := c.Conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(strings.Join(transcript(c.Client.Updates()[from:]), "\n"), "agent:ok"); n != prompts {
			t.Errorf("session %s replayed %d turns, want %d", sid, n, prompts)
		}
	}
}

func TestStore_NoSecretsOnDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "sessions.db")
	fixture := startFixtureHTTP(t)
	a := startAgentWith(t, nil, "--store", store)
	sid := a.newSession(t.TempDir(),
		acpclient.Stdio("fixture", fixtureBin, nil, map[string]string{"FIXTURE_TOKEN": "env-secret-4f1d9c"}),
		httpServer("web", fixture+"/mcp", map[string]string{"Authorization": "Bearer header-secret-77ab21"}))
	a.prompt(sid, "/call mcp__fixture__echo {\"message\":\"visible\"}")
	if err := a.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	var found []string
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(path)
		for _, secret := range []string{"env-secret-4f1d9c", "header-secret-77ab21"} {
			if strings.Contains(string(data), secret) {
				found = append(found, secret+" in "+filepath.Base(path))
			}
		}
		return nil
	})
	if len(found) > 0 {
		t.Errorf("secrets on disk: %v", found)
	}
	data, _ := os.ReadFile(store)
	if !strings.Contains(string(data), "visible") && !walContains(dir, "visible") {
		t.Error("the transcript itself is not in the store (the grep proves nothing)")
	}
}

func walContains(dir, s string) bool {
	data, _ := os.ReadFile(filepath.Join(dir, "sessions.db-wal"))
	return strings.Contains(string(data), s)
}
