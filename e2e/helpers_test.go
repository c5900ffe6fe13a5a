package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// agent is a running acp-agent process.
type agent struct {
	*acpclient.Process
	t      testing.TB
	stderr *testutil.Buffer
	// init is the agent's answer to initialize: what it advertised.
	init acpsdk.InitializeResponse
}

// startAgent runs the agent binary with a minimal environment, initialized.
// GITHUB_TOKEN is set, to prove that the agent's variables never reach a
// server. No model is configured: the session runs in direct mode.
func startAgent(t testing.TB) *agent {
	t.Helper()
	return startAgentWith(t, []string{"GITHUB_TOKEN=sk-agent-secret"})
}

// startAgentWith runs the agent with extra environment variables and
// arguments, initialized.
func startAgentWith(t testing.TB, env []string, args ...string) *agent {
	t.Helper()
	return startAgentClient(t, nil, env, args...)
}

// startAgentClient is startAgentWith with the client rec (nil: a plain
// Recorder), which advertises the fs and terminal capabilities it serves.
func startAgentClient(t testing.TB, rec *acpclient.Recorder, env []string, args ...string) *agent {
	t.Helper()
	return startAgentArgv(t, rec, env, append([]string{"--verbose"}, args...))
}

// startConnect runs "acp-agent connect" to the gateway at url as the
// editor's agent, with env and flags, initialized.
func startConnect(t testing.TB, rec *acpclient.Recorder, env []string, url string, flags ...string) *agent {
	t.Helper()
	return startAgentArgv(t, rec, env, append(append([]string{"connect", "--verbose"}, flags...), url))
}

// startAgentArgv runs the agent binary with exactly argv, initialized.
func startAgentArgv(t testing.TB, rec *acpclient.Recorder, env []string, argv []string) *agent {
	t.Helper()
	stderr := &testutil.Buffer{}
	env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	p, err := acpclient.Start(agentBin, argv, env, stderr, rec)
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{Process: p, t: t, stderr: stderr}
	t.Cleanup(func() {
		var exitErr *exec.ExitError
		if err := a.Stop(20 * time.Second); err != nil && !errors.As(err, &exitErr) { // killed by a test, or a non-zero exit: not this check's business
			t.Errorf("agent stop: %v", err)
		}
		if t.Failed() || os.Getenv("E2E_AGENT_LOGS") != "" {
			t.Logf("agent stderr:\n%s", stderr.String())
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if a.init, err = a.Initialize(ctx); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return a
}

// newSession opens a session and waits for the notifications that follow it
// (failure messages, then available_commands_update).
func (a *agent) newSession(cwd string, servers ...acpsdk.McpServer) string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.t.Context(), 60*time.Second)
	defer cancel()
	from := len(a.Client.Updates())
	if servers == nil {
		servers = []acpsdk.McpServer{}
	}
	res, err := a.Conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: servers})
	if err != nil {
		a.t.Fatalf("session/new: %v", err)
	}
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		return string(n.SessionId) == string(res.SessionId) && n.Update.AvailableCommandsUpdate != nil
	}); err != nil {
		a.t.Fatal(err)
	}
	return string(res.SessionId)
}

// promptDeadline bounds one prompt turn of a test. The longest turns (the
// context tests': tens of tool calls and a compaction of 160K tokens, all
// JSON the race detector slows eightfold) took 70 s with two `make test`
// runs and more beside them on two cores; a deadline is for a turn that
// hangs, not a measure.
const promptDeadline = 3 * time.Minute

// prompt runs one prompt turn and returns its stop reason and updates.
func (a *agent) prompt(sid, text string) (acpsdk.StopReason, []acpsdk.SessionNotification) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.t.Context(), promptDeadline)
	defer cancel()
	from := len(a.Client.Updates())
	stop, err := a.Prompt(ctx, sid, text)
	if err != nil {
		a.t.Fatalf("prompt %q: %v", text, err)
	}
	return stop, a.Client.Updates()[from:]
}

// text joins the agent message text of updates.
func text(updates []acpsdk.SessionNotification) string {
	var b strings.Builder
	for _, u := range updates {
		b.WriteString(acpclient.Text(u))
	}
	return b.String()
}

// finalToolUpdate returns the last tool_call_update with a final status.
func finalToolUpdate(t *testing.T, updates []acpsdk.SessionNotification) *acpsdk.SessionToolCallUpdate {
	t.Helper()
	for i := len(updates) - 1; i >= 0; i-- {
		u := updates[i].Update.ToolCallUpdate
		if u != nil && u.Status != nil && (*u.Status == acpsdk.ToolCallStatusCompleted || *u.Status == acpsdk.ToolCallStatusFailed) {
			return u
		}
	}
	t.Fatalf("no final tool_call_update in:\n%s", dump(updates))
	return nil
}

func dump(updates []acpsdk.SessionNotification) string {
	var b strings.Builder
	for _, u := range updates {
		b.WriteString(acpclient.Format(u) + "\n")
	}
	return b.String()
}

// contentText returns the text of the first text block of a tool update.
func contentText(u *acpsdk.SessionToolCallUpdate) string {
	for _, c := range u.Content {
		if c.Content != nil && c.Content.Content.Text != nil {
			return c.Content.Content.Text.Text
		}
	}
	return ""
}

// descendants returns every live process below pid (children, grandchildren…).
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		self, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(self); ok {
			children[ppid] = append(children[ppid], self)
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// parentOf reads the parent pid of a live (non-zombie) process.
func parentOf(pid int) (int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, false
	}
	fields := strings.Fields(s[i+2:])
	if len(fields) < 2 || fields[0] == "Z" {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// waitAllGone waits up to d for every pid to be gone and returns the survivors.
func waitAllGone(pids []int, d time.Duration) []int {
	var left []int
	testutil.Eventually(d, func() bool {
		left = nil
		for _, p := range pids {
			if testutil.Alive(p) {
				left = append(left, p)
			}
		}
		return len(left) == 0
	})
	return left
}

func cmdline(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(data), "\x00", " ")
}

// fixtureServer is the Go fixture as an mcpServers entry; its calls are
// logged to log.
func fixtureServer(name, log string) acpsdk.McpServer {
	return acpclient.Stdio(name, fixtureBin, nil, map[string]string{"FIXTURE_LOG": log})
}

func everythingServer(name string) acpsdk.McpServer {
	return acpclient.Stdio(name, "node", []string{everything, "stdio"}, nil)
}

// waitFile waits until the file at path contains want.
func waitFile(t *testing.T, path, want string, d time.Duration) {
	t.Helper()
	var data []byte
	if !testutil.Eventually(d, func() bool {
		data, _ = os.ReadFile(path)
		return strings.Contains(string(data), want)
	}) {
		t.Fatalf("%s never contained %q; it has:\n%s", filepath.Base(path), want, data)
	}
}

// toolRunning matches the tool_call_update that says a call is in progress.
func toolRunning(n acpsdk.SessionNotification) bool {
	u := n.Update.ToolCallUpdate
	return u != nil && u.Status != nil && *u.Status == acpsdk.ToolCallStatusInProgress
}

// writeConfig writes cfg as a config file in a temporary directory and
// returns its path.
func writeConfig(t testing.TB, cfg map[string]any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
