package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

var allTools = []string{
	"echo", "add", "image", "audio", "resource", "resource_link", "slow", "fail",
	"crash", "spawn_grandchild", "spawn_escapee", "env", "headers", "roots", "ask_name", "sign_in", "sample", longToolName, "weather", "add_prompt", "meta",
}

// TestFixture drives the built binary over stdio with the go-sdk client, once
// per protocol version.
func TestFixture(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			testTools(t, bin, version)
		})
	}
	t.Run("demo", func(t *testing.T) {
		t.Parallel()
		testDemo(t, bin)
	})
	t.Run("ready file", func(t *testing.T) {
		t.Parallel()
		testReadyFile(t, bin)
	})
	t.Run("crash", func(t *testing.T) {
		t.Parallel()
		f := start(t, bin, "2025-11-25")
		if _, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash"}); err == nil {
			t.Fatal("crash answered")
		}
		var exit *exec.ExitError
		if err := f.cs.Close(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("Close = %v, want exit status 3", err)
		}
	})
}

// testReadyFile checks that FIXTURE_READY_FILE gets one line "<pid> <exec>
// <ready>" per start, with the fixture's pid and exec <= ready, both within
// the time the test ran it; and that nothing is written without it.
func testReadyFile(t *testing.T, bin string) {
	path := filepath.Join(t.TempDir(), "ready")
	before := time.Now()
	for range 2 {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "FIXTURE_READY_FILE="+path)
		cmd.Stdin = strings.NewReader("") // EOF: the server ends at once
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("fixture: %v\n%s", err, out)
		}
		data, _ := os.ReadFile(path)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		var pid int
		var exec, ready int64
		if _, err := fmt.Sscanf(lines[len(lines)-1], "%d %d %d", &pid, &exec, &ready); err != nil {
			t.Fatalf("ready file %q: %v", data, err)
		}
		if pid != cmd.Process.Pid || exec < before.UnixNano() || ready < exec || ready > time.Now().UnixNano() {
			t.Errorf("ready line %q: want pid %d and %d <= exec <= ready <= now", lines[len(lines)-1], cmd.Process.Pid, before.UnixNano())
		}
	}
	if data, _ := os.ReadFile(path); strings.Count(string(data), "\n") != 2 {
		t.Errorf("ready file after two starts:\n%s", data)
	}
}

// testDemo checks that -demo lists exactly demoTools and refuses a call of a
// test-only tool without running it, while a demo tool still works.
func testDemo(t *testing.T, bin string) {
	f := start(t, bin, "2025-11-25", "-demo")
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(demoTools))
	if !slices.Equal(names, want) {
		t.Errorf("-demo tools/list = %v, want %v", names, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"crash", "spawn_grandchild", "env"} {
		_, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), "test-only") {
			t.Errorf("-demo tools/call %s: err = %v, want a refusal naming it test-only", name, err)
		}
	}
	if got := textOf(t, f.call(t, "echo", map[string]any{"message": "still here"})); got != "Echo: still here" {
		t.Errorf("echo after the refusals = %q: crash ran in -demo mode?", got)
	}
}

// fixture is one running server and the client session talking to it.
type fixture struct {
	cs  *mcp.ClientSession
	cmd *exec.Cmd
	log string // FIXTURE_LOG

	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	// progressed is notified after each progress notification is recorded.
	progressed testutil.Signal
}

// start runs bin with flags and connects to it with protocol version.
func start(t *testing.T, bin, version string, flags ...string) *fixture {
	t.Helper()
	f := &fixture{log: filepath.Join(t.TempDir(), "fixture.log")}
	f.cmd = exec.Command(bin, flags...)
	f.cmd.Env = append(os.Environ(), "FIXTURE_LOG="+f.log, "FIXTURE_MARKER=42")
	f.cmd.Stderr = os.Stderr
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so spawn_grandchild's group is the server's own
	client := mcp.NewClient(&mcp.Implementation{Name: "fixture-test", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			f.mu.Lock()
			f.progress = append(f.progress, req.Params)
			f.mu.Unlock()
			f.progressed.Notify()
		},
	})
	//lint:ignore SA1019 the fixture's roots tool is tested.
	client.AddRoots(&mcp.Root{URI: "file:///tmp/one"}, &mcp.Root{URI: "file:///tmp/two"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: f.cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Errorf("negotiated %s, want %s", got, version)
	}
	t.Cleanup(func() { _ = cs.Close() }) // in case the test stops early
	f.cs = cs
	return f
}

// call calls a tool that must succeed and returns its result.
func (f *fixture) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// textOf returns the text of res's only content block, which must be text.
func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content = %v, want one text block", res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content = %T, want *mcp.TextContent", res.Content[0])
	}
	return tc.Text
}

func testTools(t *testing.T, bin, version string) {
	f := start(t, bin, version)

	t.Run("list", func(t *testing.T) {
		res, err := f.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			readOnly := tool.Annotations != nil && tool.Annotations.ReadOnlyHint
			if want := tool.Name == "echo" || tool.Name == "add" || tool.Name == "weather" || tool.Name == "meta"; readOnly != want {
				t.Errorf("%s: readOnlyHint = %v, want %v", tool.Name, readOnly, want)
			}
			if tool.Description == "" || tool.InputSchema == nil {
				t.Errorf("%s: no description or input schema", tool.Name)
			}
		}
		slices.Sort(names)
		want := slices.Sorted(slices.Values(allTools))
		if !slices.Equal(names, want) {
			t.Errorf("tools = %v, want %v", names, want)
		}
	})

	t.Run("echo", func(t *testing.T) {
		if got := textOf(t, f.call(t, "echo", map[string]any{"message": "hi"})); got != "Echo: hi" {
			t.Errorf("echo = %q", got)
		}
	})

	t.Run("meta", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "meta", Arguments: map[string]any{},
			Meta: mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "n": 1}}
		res, err := f.cs.CallTool(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		// 2026-07-28 adds its own members (protocolVersion): one a line.
		got := strings.Split(textOf(t, res), "\n")
		if !slices.Contains(got, "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") || slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "n:") }) {
			t.Errorf("meta = %q, want the traceparent line and no line for the number", got)
		}
	})

	t.Run("add", func(t *testing.T) {
		res := f.call(t, "add", map[string]any{"a": 2, "b": 3})
		if got := textOf(t, res); got != "5" {
			t.Errorf("add = %q, want 5", got)
		}
		if sc, ok := res.StructuredContent.(map[string]any); !ok || sc["sum"] != 5.0 {
			t.Errorf("structured content = %#v, want {sum: 5}", res.StructuredContent)
		}
	})

	t.Run("image", func(t *testing.T) {
		res := f.call(t, "image", nil)
		if len(res.Content) != 2 {
			t.Fatalf("content = %v, want text then image", res.Content)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "tiny image" {
			t.Errorf("content[0] = %#v", res.Content[0])
		}
		img, ok := res.Content[1].(*mcp.ImageContent)
		if !ok || img.MIMEType != "image/png" {
			t.Fatalf("content[1] = %#v, want image/png", res.Content[1])
		}
		if _, err := png.Decode(bytes.NewReader(img.Data)); err != nil {
			t.Errorf("png: %v", err)
		}
	})

	t.Run("audio", func(t *testing.T) {
		res := f.call(t, "audio", nil)
		a, ok := res.Content[0].(*mcp.AudioContent)
		if len(res.Content) != 1 || !ok || a.MIMEType != "audio/wav" {
			t.Fatalf("content = %#v, want one audio/wav block", res.Content)
		}
		if len(a.Data) <= 44 || string(a.Data[:4]) != "RIFF" || string(a.Data[8:16]) != "WAVEfmt " || string(a.Data[36:40]) != "data" {
			t.Errorf("not a WAV: %q", a.Data)
		}
	})

	t.Run("resource", func(t *testing.T) {
		res := f.call(t, "resource", nil)
		r, ok := res.Content[0].(*mcp.EmbeddedResource)
		if !ok || r.Resource.URI != "fixture://notes/hello.txt" || r.Resource.MIMEType != "text/plain" || r.Resource.Text != "hello from an embedded resource" {
			t.Errorf("content = %#v", res.Content[0])
		}
	})

	t.Run("resource_link", func(t *testing.T) {
		res := f.call(t, "resource_link", nil)
		l, ok := res.Content[0].(*mcp.ResourceLink)
		if !ok || l.URI != "fixture://files/report.pdf" || l.Name != "report.pdf" || l.Title != "Report" ||
			l.Description != "a linked file" || l.MIMEType != "application/pdf" || l.Size == nil || *l.Size != 1234 {
			t.Errorf("content = %#v", res.Content[0])
		}
	})

	t.Run("fail", func(t *testing.T) {
		for args, want := range map[string]string{"": "requested", "boom": "boom"} {
			var a any
			if args != "" {
				a = map[string]any{"message": args}
			}
			res := f.call(t, "fail", a)
			if got := textOf(t, res); !res.IsError || got != "fixture failure: "+want {
				t.Errorf("fail(%q) = %q, isError %v", args, got, res.IsError)
			}
		}
	})

	t.Run("slow reports progress", func(t *testing.T) {
		p := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 0.2, "steps": 4}}
		p.SetProgressToken("tok")
		res, err := f.cs.CallTool(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(t, res); got != "slept 0.2s" {
			t.Errorf("slow = %q", got)
		}
		// The server sends every notification before the response, but the
		// client may run its notification handler after CallTool returns.
		var got []mcp.ProgressNotificationParams
		f.progressed.Await(5*time.Second, func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			got = got[:0]
			for _, p := range f.progress {
				got = append(got, *p)
			}
			return len(got) >= 4
		})
		if len(got) != 4 || got[3].Progress != 4 || got[3].Total != 4 || got[3].ProgressToken != "tok" {
			t.Errorf("progress = %+v, want 4 steps for tok", got)
		}
	})

	t.Run("slow is cancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}}); err == nil {
			t.Fatal("slow (30s default) finished within 300ms")
		}
		var b []byte
		if !testutil.Eventually(10*time.Second, func() bool {
			b, _ = os.ReadFile(f.log)
			return strings.Contains(string(b), "called slow\n") && strings.Contains(string(b), "cancelled slow\n")
		}) {
			t.Fatalf("FIXTURE_LOG never got \"cancelled slow\":\n%s", b)
		}
		// The session outlives the cancelled call.
		if got := textOf(t, f.call(t, "echo", map[string]any{"message": "still here"})); got != "Echo: still here" {
			t.Errorf("echo after cancel = %q", got)
		}
	})

	t.Run("roots", func(t *testing.T) {
		if got := textOf(t, f.call(t, "roots", nil)); got != "file:///tmp/one\nfile:///tmp/two" {
			t.Errorf("roots = %q", got)
		}
	})

	t.Run("env", func(t *testing.T) {
		lines := strings.Split(textOf(t, f.call(t, "env", nil)), "\n")
		if !slices.IsSorted(lines) || !slices.Contains(lines, "FIXTURE_MARKER=42") {
			t.Errorf("env not sorted or without FIXTURE_MARKER=42: %q", lines)
		}
	})

	t.Run("long name", func(t *testing.T) {
		if got := textOf(t, f.call(t, longToolName, nil)); got != "long name ok" {
			t.Errorf("%s = %q", longToolName, got)
		}
	})

	t.Run("spawn_grandchild", func(t *testing.T) {
		pid, err := strconv.Atoi(textOf(t, f.call(t, "spawn_grandchild", nil)))
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(pid, syscall.SIGKILL)
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != f.cmd.Process.Pid {
			t.Errorf("grandchild %d: pgid %d (%v), want the server's %d", pid, pgid, err, f.cmd.Process.Pid)
		}
	})

	t.Run("spawn_escapee", func(t *testing.T) {
		for _, daemon := range []bool{false, true} {
			pid, err := strconv.Atoi(textOf(t, f.call(t, "spawn_escapee", map[string]any{"daemon": daemon})))
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Kill(pid, syscall.SIGKILL)
			if sid, err := unix.Getsid(pid); err != nil || sid != pid {
				t.Errorf("escapee %d (daemon %v): sid %d (%v), want its own", pid, daemon, sid, err)
			}
		}
	})

	if err := f.cs.Close(); err != nil {
		t.Errorf("close: %v (want exit status 0)", err)
	}
	b, _ := os.ReadFile(f.log)
	for _, tool := range []string{"echo", "add", "image", "fail", "roots", "env", longToolName} {
		if !strings.Contains(string(b), "called "+tool+"\n") {
			t.Errorf("FIXTURE_LOG has no \"called %s\":\n%s", tool, b)
		}
	}
}
