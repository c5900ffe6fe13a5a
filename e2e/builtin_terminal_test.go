package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// startCommandAgent runs the agent with the fake OpenAI model and the
// client rec, answering permission questions from the returned queue.
// GITHUB_TOKEN is the agent's secret no command may see.
func startCommandAgent(t *testing.T, rec *acpclient.Recorder, args ...string) (*agent, *fakemodel.Server, *permissionAnswers) {
	t.Helper()
	fake := fakemodel.NewOpenAI(t)
	a := startAgentClient(t, rec, []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + fake.URL + "/v1", "GITHUB_TOKEN=sk-agent-secret"},
		append([]string{"--model", "openai:gpt-fake"}, args...)...)
	perms := &permissionAnswers{}
	a.Client.SetPermission(perms.answer)
	return a, fake, perms
}

// runCommandCall is the model's call of run_command with command.
func runCommandCall(id, command string) fakemodel.Turn {
	args := `{"command":` + strconv.Quote(command) + `}`
	return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "mcp__acp__run_command", Args: args}}}
}

// terminalShown matches a tool_call_update showing a terminal.
func terminalShown(n acpsdk.SessionNotification) bool {
	u := n.Update.ToolCallUpdate
	return u != nil && slices.ContainsFunc(u.Content, func(c acpsdk.ToolCallContent) bool { return c.Terminal != nil })
}

// terminalOf returns the terminal ID a tool call update shows, or "".
func terminalOf(u *acpsdk.SessionToolCallUpdate) string {
	for _, c := range u.Content {
		if c.Terminal != nil {
			return c.Terminal.TerminalId
		}
	}
	return ""
}

// TestBuiltinTerminal_RunsInTheEditor: with a client offering terminals,
// run_command asks permission, then runs through terminal/create,
// wait_for_exit, output and release, and the call shows the terminal.
func TestBuiltinTerminal_RunsInTheEditor(t *testing.T) {
	t.Parallel()
	terms := &acpclient.LocalTerminals{}
	t.Cleanup(terms.Close)
	a, fake, perms := startCommandAgent(t, &acpclient.Recorder{Terminals: terms})
	dir := t.TempDir()
	sid := a.newSession(dir)

	fake.Push(runCommandCall("call_cmd", "echo hello from the terminal; echo oops >&2; exit 4"), fakemodel.Turn{Text: "It failed with 4."})
	perms.queue("allow_once")
	stop, out := a.prompt(sid, "run the script")
	if stop != acpsdk.StopReasonEndTurn {
		t.Fatalf("stop = %s\n%s", stop, dump(out))
	}
	if q := perms.questions(); len(q) != 1 {
		t.Errorf("permission asked %v, want once for run_command", q)
	}
	want := []string{"terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"}
	if got := terms.Methods(); !slices.Equal(got, want) {
		t.Errorf("terminal calls %v, want %v", got, want)
	}
	// The terminal is on the agent's machine: the command runs through
	// the agent's binary, which confines it (workspace-write) and execs it.
	c := terms.Calls()[0]
	if c.Command != agentBin || !slices.Equal(c.Args, []string{"confine", "/bin/sh", "/bin/sh", "-c", "echo hello from the terminal; echo oops >&2; exit 4"}) || c.Cwd != dir || c.OutputByteLimit != 64<<10 {
		t.Errorf("terminal/create %+v", c)
	}
	end := finalToolUpdate(t, out)
	if *end.Status != acpsdk.ToolCallStatusCompleted || terminalOf(end) != c.TerminalID {
		t.Errorf("final tool_call_update %s, want completed showing terminal %s\n%s", acpclient.Format(acpsdk.SessionNotification{Update: acpsdk.SessionUpdate{ToolCallUpdate: end}}), c.TerminalID, dump(out))
	}
	reqs := fake.Requests()
	body := string(reqs[len(reqs)-1].Body)
	for _, w := range []string{"Exit code: 4", "hello from the terminal", "oops"} {
		if !strings.Contains(body, w) {
			t.Errorf("the model never saw %q in the result:\n%s", w, body)
		}
	}
}

// releasingTerminals is the test client's LocalTerminals, with released
// notified after each terminal/release it served.
type releasingTerminals struct {
	*acpclient.LocalTerminals
	released testutil.Signal
}

func (r *releasingTerminals) ReleaseTerminal(ctx context.Context, p acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	defer r.released.Notify()
	return r.LocalTerminals.ReleaseTerminal(ctx, p)
}

// TestBuiltinTerminal_CancelKillsTheTerminal: session/cancel during a long
// command in the editor's terminal kills it; the turn ends cancelled and the
// terminal is released.
func TestBuiltinTerminal_CancelKillsTheTerminal(t *testing.T) {
	t.Parallel()
	terms := &releasingTerminals{LocalTerminals: &acpclient.LocalTerminals{}}
	t.Cleanup(terms.Close)
	a, fake, perms := startCommandAgent(t, &acpclient.Recorder{Terminals: terms})
	sid := a.newSession(t.TempDir())

	fake.Push(runCommandCall("call_long", "sleep 300"))
	perms.queue("allow_once")
	// The terminal is shown while the command runs (progress), before the
	// result.
	cancelDuring(t, a, sid, "run the long command", terminalShown)
	terms.released.WaitFor(t, 30*time.Second, func() bool { return slices.Contains(terms.Methods(), "terminal/release") },
		"the terminal was never released; calls: %v", terms.Methods())
	// wait_for_exit is sent before kill, but the client handles each request
	// in a goroutine of its own: the two may be recorded in either order.
	got := terms.Methods()
	if len(got) != 5 || got[0] != "terminal/create" || !slices.Equal(got[3:], []string{"terminal/output", "terminal/release"}) ||
		!slices.Contains(got[1:3], "terminal/wait_for_exit") || !slices.Contains(got[1:3], "terminal/kill") {
		t.Errorf("terminal calls %v, want create, wait_for_exit and kill, output, release", got)
	}
	pid := terms.Calls()[0].Pid
	if !testutil.WaitGone(pid, 30*time.Second) {
		t.Errorf("the terminal's command %d (%s) still runs", pid, cmdline(pid))
	}
	if !testutil.Eventually(30*time.Second, func() bool { return syscall.Kill(-pid, 0) == syscall.ESRCH }) {
		t.Errorf("the terminal's process group %d still has members", pid)
	}
	// The session goes on.
	fake.Push(fakemodel.Turn{Text: "Stopped."})
	if stop, out := a.prompt(sid, "and now?"); stop != acpsdk.StopReasonEndTurn || text(out) != "Stopped." {
		t.Errorf("after the cancel: %s %q", stop, text(out))
	}
}

// longLocalCommand writes the pids of its shell and of a background and a
// foreground sleep to files in the cwd, then waits.
const longLocalCommand = "echo $$ > sh.pid; sleep 300 & echo $! > bg.pid; sleep 300 & echo $! > fg.pid; wait"

// readPids waits for the pid files of longLocalCommand in dir.
func readPids(t *testing.T, dir string) []int {
	t.Helper()
	return testutil.ReadPIDFiles(t, dir, "sh.pid", "bg.pid", "fg.pid")
}

// TestBuiltinTerminal_LocalWithoutTerminal: with a client that offers no
// terminal, run_command runs the command as the agent's child, without the
// agent's secrets; cancelling a long command, or closing the session during
// one, leaves no process behind.
func TestBuiltinTerminal_LocalWithoutTerminal(t *testing.T) {
	t.Parallel()
	a, fake, perms := startCommandAgent(t, nil)
	dir := t.TempDir()
	sid := a.newSession(dir)

	fake.Push(runCommandCall("call_local", "pwd; echo token=${GITHUB_TOKEN:-none}; exit 2"), fakemodel.Turn{Text: "Ran it."})
	perms.queue("allow_once")
	stop, out := a.prompt(sid, "run it here")
	end := finalToolUpdate(t, out)
	if got := contentText(end); stop != acpsdk.StopReasonEndTurn || *end.Status != acpsdk.ToolCallStatusCompleted || got != "Exit code: 2\nOutput:\n"+dir+"\ntoken=none\n" {
		t.Fatalf("stop %s, result %q\n%s", stop, got, dump(out))
	}
	if terminalOf(end) != "" {
		t.Errorf("a local command shows a terminal: %+v", end.Content)
	}

	// Cancel during a long command.
	fake.Push(runCommandCall("call_long", longLocalCommand))
	perms.queue("allow_once")
	done := make(chan acpsdk.StopReason, 1)
	go func() {
		stop, err := a.Prompt(context.Background(), sid, "run the long one")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		done <- stop
	}()
	pids := readPids(t, dir)
	for _, p := range pids {
		if !slices.Contains(descendants(a.Cmd.Process.Pid), p) {
			t.Errorf("process %d is not the agent's descendant", p)
		}
	}
	if err := a.Conn.Cancel(t.Context(), acpsdk.CancelNotification{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	select {
	case stop := <-done:
		if stop != acpsdk.StopReasonCancelled {
			t.Errorf("stopReason %s, want cancelled", stop)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the turn did not end after session/cancel")
	}
	for _, p := range waitAllGone(pids, 30*time.Second) {
		t.Errorf("process %d (%s) outlived the cancelled command", p, cmdline(p))
	}

	// Close the session during a long command.
	for _, n := range []string{"sh.pid", "bg.pid", "fg.pid"} {
		_ = os.Remove(filepath.Join(dir, n))
	}
	fake.Push(runCommandCall("call_long2", longLocalCommand))
	perms.queue("allow_once")
	go func() { done <- mustPrompt(t, a, sid, "run it again") }()
	pids = readPids(t, dir)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := a.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	for _, p := range waitAllGone(pids, 30*time.Second) {
		t.Errorf("process %d (%s) outlived the closed session", p, cmdline(p))
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Error("the prompt was not answered after session/close")
	}
}

// mustPrompt sends a prompt and returns its stop reason, reporting an error.
func mustPrompt(t *testing.T, a *agent, sid, text string) acpsdk.StopReason {
	stop, err := a.Prompt(context.Background(), sid, text)
	if err != nil {
		t.Errorf("prompt %q: %v", text, err)
	}
	return stop
}

// TestBuiltinTerminal_OwnTimeoutWins: run_command's timeout_seconds, not the
// agent's tool call timeout (here 2 s), bounds a command: the model gets
// run_command's timeout report with the output so far.
func TestBuiltinTerminal_OwnTimeoutWins(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"timeouts": {"toolCall": "2s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, fake, perms := startCommandAgent(t, nil, "--config", cfg)
	sid := a.newSession(t.TempDir())
	call := fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_slow", Name: "mcp__acp__run_command",
		Args: `{"command": "echo before; sleep 300", "timeout_seconds": 4}`}}}
	fake.Push(call, fakemodel.Turn{Text: "Too slow."})
	perms.queue("allow_once")
	_, out := a.prompt(sid, "run the slow one")
	end := finalToolUpdate(t, out)
	if got := contentText(end); *end.Status != acpsdk.ToolCallStatusFailed || got != "Timed out after 4s: the command was killed.\nEnded by signal SIGKILL\nOutput:\nbefore\n" {
		t.Errorf("status %s, result %q", *end.Status, got)
	}
}

// TestBuiltinTerminal_LocalEndsWithTheAgent: an editor that quits (stdin
// EOF) during a local command leaves no process behind.
func TestBuiltinTerminal_LocalEndsWithTheAgent(t *testing.T) {
	t.Parallel()
	a, fake, perms := startCommandAgent(t, nil)
	dir := t.TempDir()
	sid := a.newSession(dir)
	fake.Push(runCommandCall("call_long", longLocalCommand))
	perms.queue("allow_once")
	go func() { _, _ = a.Prompt(context.Background(), sid, "run the long one") }() // answered or cut by the exit
	pids := readPids(t, dir)
	if err := a.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(30 * time.Second); err != nil {
		t.Errorf("agent exit: %v", err)
	}
	for _, p := range waitAllGone(pids, 30*time.Second) {
		t.Errorf("process %d (%s) outlived the agent", p, cmdline(p))
	}
}
