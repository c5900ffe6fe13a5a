package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// termEditor is an editor.Editor offering terminals only. Each terminal
// records its calls in calls, in order; wait answers terminal/wait_for_exit
// (nil: block until the request's context is done).
type termEditor struct {
	wait   func(ctx context.Context) (editor.ExitStatus, error)
	output editor.Output
	outErr error

	mu    sync.Mutex
	calls []string // "create", "wait", "kill", "output", "release"
	req   editor.TerminalRequest
	// releaseCtxErr is the error of Release's context when it was called.
	releaseCtxErr error
	// called is notified after each call is recorded.
	called testutil.Signal
}

var _ editor.Editor = (*termEditor)(nil)

func (e *termEditor) record(call string) {
	e.mu.Lock()
	e.calls = append(e.calls, call)
	e.mu.Unlock()
	e.called.Notify()
}

func (e *termEditor) Calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

func (e *termEditor) Capabilities() editor.Capabilities { return editor.Capabilities{Terminal: true} }

func (e *termEditor) ReadTextFile(context.Context, string, int, int) (string, error) {
	return "", errors.New("not offered")
}

func (e *termEditor) WriteTextFile(context.Context, string, string) error {
	return errors.New("not offered")
}

func (e *termEditor) CreateTerminal(_ context.Context, req editor.TerminalRequest) (editor.Terminal, error) {
	e.mu.Lock()
	e.req = req
	e.mu.Unlock()
	e.record("create")
	return fakeTerminal{e}, nil
}

type fakeTerminal struct{ e *termEditor }

func (t fakeTerminal) ID() string { return "term-1" }

func (t fakeTerminal) Output(context.Context) (editor.Output, error) {
	t.e.record("output")
	return t.e.output, t.e.outErr
}

func (t fakeTerminal) WaitForExit(ctx context.Context) (editor.ExitStatus, error) {
	t.e.record("wait")
	if t.e.wait != nil {
		return t.e.wait(ctx)
	}
	<-ctx.Done()
	return editor.ExitStatus{}, ctx.Err()
}

func (t fakeTerminal) Kill(context.Context) error {
	t.e.record("kill")
	return nil
}

func (t fakeTerminal) Release(ctx context.Context) error {
	t.e.mu.Lock()
	t.e.releaseCtxErr = ctx.Err()
	t.e.mu.Unlock()
	t.e.record("release")
	return nil
}

// connectOpts is connect with the server's Options and the client's.
func connectOpts(t *testing.T, ctx context.Context, opts Options, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := New(&opts).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// structured decodes a result's structured content.
func structured(t *testing.T, res *mcp.CallToolResult) RunCommandOutput {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out RunCommandOutput
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunCommand_Input(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"command": "true", "timeout_seconds": 601}, []string{"timeout_seconds 601", "between 1 and 600"}},
		{map[string]any{"command": "true", "timeout_seconds": -1}, []string{"timeout_seconds -1", "between 1 and 600"}},
		{map[string]any{"command": "  "}, []string{"command", "non-empty"}},
	} {
		got, isErr := call(t, dir, "run_command", tc.args)
		for _, w := range tc.want {
			if !isErr || !strings.Contains(got, w) {
				t.Errorf("run_command %v = %q (isError %v), want an error containing %q", tc.args, got, isErr, w)
			}
		}
	}
}

func TestRunCommand_Annotations(t *testing.T) {
	ctx := context.Background()
	cs := connect(t, ctx, t.TempDir())
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "run_command" })
	if i < 0 {
		t.Fatal("no run_command tool")
	}
	tl := res.Tools[i]
	a := tl.Annotations
	if tl.Meta[bridge.MetaToolKind] != "execute" || a.ReadOnlyHint || a.IdempotentHint || a.DestructiveHint == nil || !*a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
		t.Fatalf("run_command meta %v annotations %+v: want kind execute, destructive, open world, neither read-only nor idempotent", tl.Meta, a)
	}
}

// TestRunCommand_Local runs commands as local children: the session
// directory, the exit status (not an error), interleaved output, and an
// environment without the agent's secrets.
func TestRunCommand_Local(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-agent-secret")
	dir := t.TempDir()
	real, _ := filepath.EvalSymlinks(dir)
	got, isErr := call(t, dir, "run_command", map[string]any{"command": "pwd; echo out; echo err >&2; env; exit 3"})
	if isErr || !strings.HasPrefix(got, "Exit code: 3\nOutput:\n"+real+"\nout\nerr\n") {
		t.Fatalf("run_command = %q (isError %v)", got, isErr)
	}
	if strings.Contains(got, "sk-agent-secret") || !strings.Contains(got, "PATH=") {
		t.Errorf("the command's environment is not the baseline: %q", got)
	}
	got, isErr = call(t, dir, "run_command", map[string]any{"command": "kill -TERM $$"})
	if isErr || !strings.HasPrefix(got, "Ended by signal SIGTERM\nNo output.") {
		t.Fatalf("killed by a signal = %q (isError %v)", got, isErr)
	}
	got, isErr = call(t, dir, "run_command", map[string]any{"command": "read x; echo read $?"})
	if isErr || !strings.Contains(got, "read 1") {
		t.Fatalf("stdin is not empty: %q (isError %v)", got, isErr)
	}
}

func TestRunCommand_OutputCap(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connect(t, ctx, dir)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{
		"command": "echo START; i=0; while [ $i -lt 3000 ]; do echo 'line of output that fills the buffer up, é'; i=$((i+1)); done; echo END",
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, out := resultText(res), structured(t, res)
	if res.IsError || !out.Truncated || len(out.Output) > MaxCommandOutput || !strings.HasSuffix(out.Output, "é\nEND\n") || strings.Contains(out.Output, "START") {
		t.Fatalf("output of %d bytes, truncated %v, isError %v, tail %q", len(out.Output), out.Truncated, res.IsError, out.Output[max(0, len(out.Output)-40):])
	}
	if !strings.Contains(got, "the start was cut") {
		t.Errorf("the text does not say the output was cut: %q", got[:200])
	}
}

// longCommand starts a background sleep and waits on a foreground one,
// writing the shell's and the sleeps' pids to files in the cwd.
const longCommand = "echo $$ > sh.pid; sleep 300 & echo $! > bg.pid; sleep 300 & echo $! > fg.pid; wait"

func assertGone(t *testing.T, what string, ps []int) {
	t.Helper()
	for _, p := range ps {
		if !testutil.WaitGone(p, 30*time.Second) {
			t.Errorf("%s: process %d (%s) is still alive", what, p, cmdline(p))
		}
	}
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

func TestRunCommand_LocalTimeoutKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	got, isErr := call(t, dir, "run_command", map[string]any{"command": longCommand, "timeout_seconds": 1})
	if !isErr || !strings.HasPrefix(got, "Timed out after 1s: the command was killed.\nEnded by signal SIGKILL") {
		t.Fatalf("run_command = %q (isError %v)", got, isErr)
	}
	assertGone(t, "after the timeout", testutil.ReadPIDFiles(t, dir, "sh.pid", "bg.pid", "fg.pid"))
}

func TestRunCommand_LocalBackgroundEndsWithTheCommand(t *testing.T) {
	dir := t.TempDir()
	got, isErr := call(t, dir, "run_command", map[string]any{"command": "sleep 300 >/dev/null 2>&1 & echo $! > bg.pid; echo started"})
	if isErr || got != "Exit code: 0\nOutput:\nstarted\n" {
		t.Fatalf("run_command = %q (isError %v)", got, isErr)
	}
	assertGone(t, "after the command exited", testutil.ReadPIDFiles(t, dir, "bg.pid"))
}

// TestRunCommand_LocalCancel: cancelling the call (notifications/cancelled,
// as the bridge sends when the user cancels or the session closes) and
// losing the connection both kill the command and what it started.
func TestRunCommand_LocalCancel(t *testing.T) {
	for _, end := range []string{"cancel", "disconnect"} {
		t.Run(end, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c1, c2 := net.Pipe()
			ss, err := New(&Options{Root: dir}).Connect(ctx, &mcp.IOTransport{Reader: c2, Writer: c2}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ss.Close() })
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.IOTransport{Reader: c1, Writer: c1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			callCtx, cancelCall := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": longCommand}})
				done <- err
			}()
			ps := testutil.ReadPIDFiles(t, dir, "sh.pid", "bg.pid", "fg.pid")
			if end == "cancel" {
				cancelCall()
			} else {
				_ = c1.Close()
			}
			assertGone(t, end, ps)
			if err := <-done; err == nil {
				t.Fatal("the call succeeded")
			}
			cancelCall()
			_ = cs.Close()
		})
	}
}

// progressLog records the _meta of progress notifications; it is safe
// for concurrent use.
type progressLog struct {
	mu    sync.Mutex
	metas []mcp.Meta
	added testutil.Signal // notified after each add
}

func (l *progressLog) add(m mcp.Meta) {
	l.mu.Lock()
	l.metas = append(l.metas, m)
	l.mu.Unlock()
	l.added.Notify()
}

// shows returns the MetaShow values seen so far, as JSON.
func (l *progressLog) shows() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.metas {
		b, _ := json.Marshal(m[bridge.MetaShow])
		out = append(out, string(b))
	}
	return out
}

// terminalCall calls run_command with a fake editor terminal, collecting
// the progress notifications' _meta.
func terminalCall(t *testing.T, ctx context.Context, ed *termEditor, args map[string]any) (*mcp.CallToolResult, *progressLog, error) {
	t.Helper()
	log := &progressLog{}
	cs := connectOpts(t, ctx, Options{Root: t.TempDir(), Editor: ed}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			log.add(req.Params.Meta)
		},
	})
	params := &mcp.CallToolParams{Name: "run_command", Arguments: args}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(ctx, params)
	return res, log, err
}

func TestRunCommand_Terminal(t *testing.T) {
	code := 2
	ed := &termEditor{
		wait:   func(context.Context) (editor.ExitStatus, error) { return editor.ExitStatus{Code: &code}, nil },
		output: editor.Output{Text: "ran\n", Exit: &editor.ExitStatus{Code: &code}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, metas, err := terminalCall(t, ctx, ed, map[string]any{"command": "make test"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ed.Calls(); !slices.Equal(got, []string{"create", "wait", "output", "release"}) {
		t.Errorf("terminal calls %v, want create, wait, output, release", got)
	}
	ed.mu.Lock()
	r := ed.req
	ed.mu.Unlock()
	if r.Command != "/bin/sh" || !slices.Equal(r.Args, []string{"-c", "make test"}) || r.OutputByteLimit != MaxCommandOutput || r.Cwd == "" {
		t.Errorf("terminal/create %+v", r)
	}
	got := resultText(res)
	if res.IsError || got != "Exit code: 2\nRan in the editor's terminal term-1.\nOutput:\nran\n" {
		t.Errorf("result %q (isError %v)", got, res.IsError)
	}
	if sh, _ := json.Marshal(res.Meta[bridge.MetaShow]); string(sh) != `{"terminals":["term-1"]}` {
		t.Errorf("result _meta show = %s", sh)
	}
	// The progress notification showing the terminal may trail the result.
	metas.added.WaitFor(t, 10*time.Second, func() bool { return slices.Contains(metas.shows(), `{"terminals":["term-1"]}`) },
		"no progress notification showed the terminal")
}

// TestRunCommand_TerminalCancel: a cancelled call kills the terminal, reads
// its output and releases it, with a context that is not cancelled.
func TestRunCommand_TerminalCancel(t *testing.T) {
	ed := &termEditor{output: editor.Output{Text: "partial"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	callCtx, cancelCall := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, _, err := terminalCall(t, callCtx, ed, map[string]any{"command": "sleep 300"})
		done <- err
	}()
	ed.called.WaitFor(t, 10*time.Second, func() bool { return slices.Contains(ed.Calls(), "wait") }, "terminal/wait_for_exit never came")
	cancelCall()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	ed.called.WaitFor(t, 10*time.Second, func() bool { return slices.Contains(ed.Calls(), "release") }, "the terminal was never released: %v", ed.Calls())
	if got := ed.Calls(); !slices.Equal(got, []string{"create", "wait", "kill", "output", "release"}) {
		t.Errorf("terminal calls %v, want create, wait, kill, output, release", got)
	}
	ed.mu.Lock()
	defer ed.mu.Unlock()
	if ed.releaseCtxErr != nil {
		t.Errorf("terminal/release ran with a done context: %v", ed.releaseCtxErr)
	}
}

// TestRunCommand_TerminalTimeout: the timeout kills the terminal; the result
// is an error that says so, with the output.
func TestRunCommand_TerminalTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ed := &termEditor{output: editor.Output{Text: "tick\n"}}
		tl := &tools{root: t.TempDir(), editor: ed}
		start := time.Now()
		res, out, err := tl.runCommand(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}}, RunCommandInput{Command: "sleep 300", TimeoutSeconds: 5})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("timed out after %v, want 5s", d)
		}
		if !res.IsError || !out.TimedOut || resultText(res) != "Timed out after 5s: the command was killed.\nRan in the editor's terminal term-1.\nOutput:\ntick\n" {
			t.Errorf("result %q (isError %v), %+v", resultText(res), res.IsError, out)
		}
		if got := ed.Calls(); !slices.Equal(got, []string{"create", "wait", "kill", "output", "release"}) {
			t.Errorf("terminal calls %v", got)
		}
	})
}

// TestRunCommand_TerminalFailures: an editor that fails wait_for_exit or
// output still gets its terminal killed and released; the call is an error
// naming the step.
func TestRunCommand_TerminalFailures(t *testing.T) {
	code := 0
	for _, tc := range []struct {
		name  string
		ed    *termEditor
		want  string
		calls []string
	}{
		{"wait fails", &termEditor{wait: func(context.Context) (editor.ExitStatus, error) {
			return editor.ExitStatus{}, errors.New("connection lost")
		}},
			"waiting for the command in the editor's terminal term-1: connection lost", []string{"create", "wait", "kill", "release"}},
		{"output fails", &termEditor{wait: func(context.Context) (editor.ExitStatus, error) { return editor.ExitStatus{Code: &code}, nil }, outErr: errors.New("unknown terminal")},
			"reading the output of the editor's terminal term-1: unknown terminal", []string{"create", "wait", "output", "release"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, _, err := terminalCall(t, ctx, tc.ed, map[string]any{"command": "true"})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(res); !res.IsError || got != tc.want {
				t.Errorf("result %q (isError %v), want %q", got, res.IsError, tc.want)
			}
			if got := tc.ed.Calls(); !slices.Equal(got, tc.calls) {
				t.Errorf("terminal calls %v, want %v", got, tc.calls)
			}
		})
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 4}
	for _, s := range []string{"ab", "cde", "f", "ghijkl", "m"} {
		_, _ = b.Write([]byte(s))
	}
	if s, n := b.tail(); s != "jklm" || n != 13 {
		t.Fatalf("tail = %q, %d; want \"jklm\", 13", s, n)
	}
	if got := cleanText("\x80\xbfé", true); got != "é" {
		t.Errorf("cleanText dropped %q", got)
	}
}
