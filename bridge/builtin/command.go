package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
	"github.com/seed02d3eb6b/acp-agent/sandbox/process"
)

// Limits of run_command.
const (
	// DefaultCommandTimeout is how long run_command lets a command run when
	// the call gives no timeout_seconds (120 s).
	DefaultCommandTimeout = 120 * time.Second
	// MaxCommandTimeout is the largest timeout_seconds run_command accepts
	// (600 s).
	MaxCommandTimeout = 600 * time.Second
	// CallTimeout is the tool call timeout the bridge needs for this
	// server (bridge.ServerSpec.Timeouts.ToolCall): MaxCommandTimeout, plus
	// time to kill a command and collect its output. Under a shorter one
	// the bridge would cut a long command before its own timeout, and the
	// model would get no output.
	CallTimeout = MaxCommandTimeout + 30*time.Second
	// MaxCommandOutput is how much of a command's output run_command keeps
	// (64 KiB): the end, since that is where errors and summaries are.
	MaxCommandOutput = 64 << 10
)

// Shell is the shell run_command runs its command with, as Shell -c command.
const Shell = "/bin/sh"

// cleanupTimeout bounds the terminal/kill, terminal/output and
// terminal/release requests after a command ended, was cancelled or timed
// out.
const cleanupTimeout = 5 * time.Second

// RunCommandInput is run_command's arguments.
type RunCommandInput struct {
	Command        string `json:"command" jsonschema:"the shell command line, run with /bin/sh -c in the session directory"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long the command may run, in seconds, before it is killed (default 120, at most 600)"`
}

// RunCommandOutput is run_command's structured result. ExitCode is set when
// the command exited, Signal (such as "SIGKILL") when a signal ended it.
type RunCommandOutput struct {
	ExitCode  *int   `json:"exitCode,omitempty"`
	Signal    string `json:"signal,omitempty"`
	TimedOut  bool   `json:"timedOut,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
	// Output is stdout and stderr interleaved, its end when Truncated.
	Output    string `json:"output"`
	Truncated bool   `json:"truncated,omitempty"`
	// TerminalID is the editor terminal the command ran in, if any.
	TerminalID string `json:"terminalId,omitempty"`
	// mode is the session mode the command ran under.
	mode confine.Mode
}

// addRunCommand adds run_command to s.
func addRunCommand(s *mcp.Server, t *tools) {
	yes := true
	desc := "Run a shell command line with /bin/sh -c in the session directory, stdin empty, and return its exit status and output " +
		"(stdout and stderr interleaved; only the last 64 KiB are kept). It is killed, with every process it started, after timeout_seconds " +
		"(default 120, at most 600) or when the call is cancelled; background processes do not outlive it. A non-zero exit status is " +
		"reported in the result, not as a failure of the tool. When the editor offers terminals, the command runs in one and the user sees it live."
	if t.editorOnly {
		desc = "Run a shell command line with /bin/sh -c in the session directory, in the editor's terminal (the user sees it live), and return " +
			"its exit status and output (only the last 64 KiB are kept). It is killed after timeout_seconds (default 120, at most 600) or when " +
			"the call is cancelled. A non-zero exit status is reported in the result, not as a failure of the tool. It fails when the editor " +
			"offers no terminals."
	}
	meta := kind("execute")
	if !t.editorOnly && confine.Supported().ABI >= 1 {
		// Its commands run confined by the session's mode, also in the
		// editor's terminal (on this machine): read-only mode lets it run.
		meta[bridge.MetaConfined] = true
	}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "run_command",
		Meta:        meta,
		Description: desc,
		Annotations: &mcp.ToolAnnotations{Title: "Run command", DestructiveHint: &yes, OpenWorldHint: &yes},
	}, t.runCommand)
}

// commandTimeout returns the timeout of timeout_seconds s (0: the default),
// or an error naming the field and the rule.
func commandTimeout(s int) (time.Duration, error) {
	most := int(MaxCommandTimeout / time.Second)
	switch {
	case s == 0:
		return DefaultCommandTimeout, nil
	case s < 0 || s > most:
		return 0, fmt.Errorf("timeout_seconds %d: must be between 1 and %d (default %d)", s, most, int(DefaultCommandTimeout/time.Second))
	}
	return time.Duration(s) * time.Second, nil
}

// runCommand runs in.Command in an editor terminal when the editor offers
// them, else as a local child (with editorOnly, never: needEditor's error). A command that ran is a result whatever its
// exit status (the model reads the status); a timeout is an error result,
// with what the command printed; a command that could not start is an error.
func (t *tools) runCommand(ctx context.Context, req *mcp.CallToolRequest, in RunCommandInput) (*mcp.CallToolResult, RunCommandOutput, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, RunCommandOutput{}, errors.New("command: must be a non-empty shell command line")
	}
	if strings.ContainsRune(in.Command, 0) {
		return nil, RunCommandOutput{}, errors.New("command: must not contain NUL")
	}
	timeout, err := commandTimeout(in.TimeoutSeconds)
	if err != nil {
		return nil, RunCommandOutput{}, err
	}
	if err := t.needEditor("run the command", methodTerminal); err != nil {
		return nil, RunCommandOutput{}, err
	}
	var out RunCommandOutput
	if t.editor != nil && t.editor.Capabilities().Terminal {
		out, err = t.runInTerminal(ctx, req, in.Command, timeout)
	} else {
		out, err = t.runLocal(ctx, in.Command, timeout)
	}
	if err != nil {
		return nil, RunCommandOutput{}, err
	}
	body := commandText(out, timeout)
	if out.ExitCode != nil && *out.ExitCode != 0 || out.Signal != "" {
		if note := bridge.DeniedNote(out.mode, "", confine.Server{}, out.Output); note != "" {
			body += "\n\n" + note
		}
	}
	res := text(body)
	res.IsError = out.TimedOut || out.Cancelled
	if out.TerminalID != "" {
		res.Meta = mcp.Meta{bridge.MetaShow: gateway.Show{Terminals: []string{out.TerminalID}}}
	}
	return res, out, nil
}

// commandText is the result text of a command: how it ended, then its
// output.
func commandText(out RunCommandOutput, timeout time.Duration) string {
	var sb strings.Builder
	switch {
	case out.TimedOut:
		fmt.Fprintf(&sb, "Timed out after %s: the command was killed.\n", timeout)
	case out.Cancelled:
		sb.WriteString("Cancelled: the command was killed.\n")
	}
	switch {
	case out.ExitCode != nil:
		fmt.Fprintf(&sb, "Exit code: %d\n", *out.ExitCode)
	case out.Signal != "":
		fmt.Fprintf(&sb, "Ended by signal %s\n", out.Signal)
	}
	if out.TerminalID != "" {
		fmt.Fprintf(&sb, "Ran in the editor's terminal %s.\n", out.TerminalID)
	}
	switch {
	case out.Output == "":
		sb.WriteString("No output.")
	case out.Truncated:
		fmt.Fprintf(&sb, "Output (the start was cut: only the last %d bytes are kept):\n%s", MaxCommandOutput, out.Output)
	default:
		sb.WriteString("Output:\n" + out.Output)
	}
	return sb.String()
}

// cleanupContext is the context of the requests that end a terminal: it
// outlives ctx (a cancelled call must still kill and release its
// terminal), bounded by cleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// runInTerminal runs command in a new editor terminal: terminal/create,
// a progress notification showing the terminal at once, then
// terminal/wait_for_exit bounded by timeout and ctx; on timeout or
// cancellation terminal/kill; then terminal/output, and always
// terminal/release. An error means the terminal could not be created or
// waited for.
func (t *tools) runInTerminal(ctx context.Context, req *mcp.CallToolRequest, command string, timeout time.Duration) (RunCommandOutput, error) {
	tr := editor.TerminalRequest{Command: Shell, Args: []string{"-c", command}, Cwd: t.root, OutputByteLimit: MaxCommandOutput}
	var mode confine.Mode
	if !t.editorOnly { // the terminal runs on the agent's machine: confine it as a local child
		var err error
		tr.Command, tr.Args, tr.Env, mode, err = t.confine.Terminal(t.workspace(), Shell, []string{Shell, "-c", command})
		if err != nil {
			return RunCommandOutput{}, err
		}
	}
	term, err := t.editor.CreateTerminal(ctx, tr)
	if err != nil {
		return RunCommandOutput{}, fmt.Errorf("running the command in the editor's terminal: %w", err)
	}
	out := RunCommandOutput{TerminalID: term.ID(), mode: mode}
	defer func() {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		_ = term.Release(cctx) // nothing more to do: the editor owns its terminal
	}()
	notifyShow(ctx, req, gateway.Show{Terminals: []string{term.ID()}}, "running in the editor's terminal "+term.ID())

	wctx, cancelWait := context.WithTimeout(ctx, timeout)
	st, waitErr := term.WaitForExit(wctx)
	timedOut := wctx.Err() != nil && ctx.Err() == nil
	cancelWait()
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	switch {
	case waitErr == nil:
		out.ExitCode, out.Signal = st.Code, st.Signal
	case timedOut || ctx.Err() != nil:
		out.TimedOut, out.Cancelled = timedOut, !timedOut
		_ = term.Kill(cctx) // terminal/release kills it too, should this fail
	default:
		_ = term.Kill(cctx)
		return RunCommandOutput{}, fmt.Errorf("waiting for the command in the editor's terminal %s: %w", term.ID(), waitErr)
	}
	o, err := term.Output(cctx)
	if err != nil {
		if waitErr != nil {
			return out, nil // killed: what it printed is lost, the result says why it ended
		}
		return RunCommandOutput{}, fmt.Errorf("reading the output of the editor's terminal %s: %w", term.ID(), err)
	}
	out.Output, out.Truncated = o.Text, o.Truncated
	if len(out.Output) > MaxCommandOutput { // an editor that ignores outputByteLimit
		out.Output, out.Truncated = out.Output[len(out.Output)-MaxCommandOutput:], true
	}
	out.Output = cleanText(out.Output, out.Truncated)
	if out.ExitCode == nil && out.Signal == "" && o.Exit != nil {
		out.ExitCode, out.Signal = o.Exit.Code, o.Exit.Signal
	}
	return out, nil
}

// notifyShow sends a progress notification whose _meta shows sh, when the
// caller asked for progress (a progress token). It is best effort.
func notifyShow(ctx context.Context, req *mcp.CallToolRequest, sh gateway.Show, msg string) {
	if req == nil || req.Session == nil || req.Params == nil {
		return
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return
	}
	_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: tok, Message: msg, Meta: mcp.Meta{bridge.MetaShow: sh},
	})
}

// runLocal runs command as a child of the agent, under the sandbox: in the
// session directory, with the baseline environment only (no variable of
// the agent's beyond environ.Baseline, so no API key), stdin empty, in
// a process group of its own. When the command exits, times out, or ctx is
// done, the group and every descendant left are killed
// (process.Process.Kill), so nothing it started outlives the call; the
// agent's death kills it too (parent-death signal and watchdog).
func (t *tools) runLocal(ctx context.Context, command string, timeout time.Duration) (RunCommandOutput, error) {
	env, _ := (&environ.Policy{}).ChildEnv(nil)
	cmd := process.Command(context.WithoutCancel(ctx), Shell, []string{"-c", command}, t.root, env)
	mode, err := t.confine.Apply(cmd, t.workspace(), confine.Server{})
	if err != nil {
		return RunCommandOutput{}, err
	}
	buf := &tailBuffer{max: MaxCommandOutput}
	cmd.Stdout, cmd.Stderr = buf, buf // one pipe: the streams stay interleaved
	p, err := process.Start(cmd)
	if err != nil {
		return RunCommandOutput{}, fmt.Errorf("starting %s in %s: %w", Shell, t.root, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	out := RunCommandOutput{mode: mode}
	select {
	case <-p.Done():
	case <-timer.C:
		out.TimedOut = true
	case <-ctx.Done():
		out.Cancelled = true
	}
	p.Kill() // after an exit too: what it left in the background ends with it
	if ps := cmd.ProcessState; ps != nil {
		out.ExitCode, out.Signal = exitStatus(ps)
	}
	s, total := buf.tail()
	out.Truncated = total > int64(len(s))
	out.Output = cleanText(s, out.Truncated)
	return out, nil
}

// workspace returns the session's workspace for run_command: the
// confinement's, or the tools' directories without one.
func (t *tools) workspace() confine.Workspace {
	if t.confine != nil && t.confine.Workspace.Cwd != "" {
		return t.confine.Workspace
	}
	return confine.Workspace{Cwd: t.root, Dirs: t.dirs}
}

// exitStatus is how a local command ended: its exit code, or the name of the
// signal that ended it.
func exitStatus(ps *os.ProcessState) (*int, string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return nil, unix.SignalName(ws.Signal())
	}
	code := ps.ExitCode()
	return &code, ""
}

// cleanText makes output valid UTF-8; when its start was cut, it first
// drops the bytes of a character cut in two.
func cleanText(s string, cut bool) string {
	if cut {
		for i := 0; i < 3 && len(s) > 0 && s[0]&0xC0 == 0x80; i++ {
			s = s[1:] // a UTF-8 continuation byte
		}
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// tailBuffer is an io.Writer that keeps the last max bytes written to it and
// counts them all. It is safe for concurrent use.
type tailBuffer struct {
	max int

	mu    sync.Mutex
	buf   []byte // the bytes kept; at most 2*max, of which the last max count
	total int64  // every byte written
}

// Write keeps the end of p; it never fails.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return len(p), nil
	}
	if len(b.buf)+len(p) > 2*b.max { // drop what no longer counts, amortized
		keep := b.buf[len(b.buf)-(b.max-len(p)):]
		b.buf = append(b.buf[:0], keep...)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// tail returns the last max bytes written and how many were written in all.
func (b *tailBuffer) tail() (string, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf
	if len(s) > b.max {
		s = s[len(s)-b.max:]
	}
	return string(s), b.total
}
