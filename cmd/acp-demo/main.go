// Command acp-demo runs one real ACP session against acp-agent, as an editor
// would, and prints the stream of session updates. It is what `make demo`
// runs: the agent binary over stdio, with three real MCP servers (the Go test
// fixture over stdio and over Streamable HTTP on loopback, and the reference
// filesystem server on a temporary directory); it lists the servers and
// tools, reads a file through the filesystem server, calls the fixture's
// image tool and its HTTP echo, closes the session and checks that the
// servers' processes are gone. It exits non-zero if any step fails.
//
// The fixture runs with -demo, so only its demo-worthy tools are listed.
// Each permission question the agent asks (session/request_permission) is
// printed with its options and the answer the demo gives: "Allow once" for
// every call but the audio one, which it rejects, to show a declined call.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
	fmt.Println("\ndemo ok")
}

func run() error {
	agentBin := flag.String("agent", "bin/acp-agent", "the acp-agent binary")
	fixture := flag.String("fixture", "bin/mcp-fixture", "the Go MCP fixture server binary")
	fsServer := flag.String("fs-server", "e2e/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "server-filesystem's entry point")
	verbose := flag.Bool("verbose", false, "show the agent's logs")
	flag.Parse()
	for _, p := range []*string{agentBin, fixture, fsServer} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("%w (run `make demo`, which builds and installs everything)", err)
		}
		*p = abs
	}

	work, err := os.MkdirTemp("", "acp-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	work, _ = filepath.EvalSymlinks(work)
	note := filepath.Join(work, "hello.txt")
	if err := os.WriteFile(note, []byte("Hello from the acp-agent demo!\nThis file was read through an MCP server.\n"), 0o644); err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var logs io.Writer = io.Discard
	if *verbose {
		logs = os.Stderr
	}
	var answer atomic.Value // the PermissionOptionKind the demo picks for the current step
	answer.Store(acpsdk.PermissionOptionKindAllowOnce)
	var asked atomic.Int32 // permission questions so far
	var rec *acpclient.Recorder
	rec = &acpclient.Recorder{
		OnUpdate: func(n acpsdk.SessionNotification) {
			fmt.Println("  " + strings.ReplaceAll(acpclient.Format(n), "\n", "\n  "))
		},
		Permission: func(p acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse {
			asked.Add(1)
			// Print the question after its tool_call, which ACP's
			// notification queue may deliver after this request.
			wait, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, _, _ = rec.WaitFor(wait, 0, func(n acpsdk.SessionNotification) bool {
				return n.Update.ToolCall != nil && n.Update.ToolCall.ToolCallId == p.ToolCall.ToolCallId
			})
			return askedPermission(os.Stdout, p, answer.Load().(acpsdk.PermissionOptionKind))
		},
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work}
	agent, err := acpclient.Start(*agentBin, []string{"--verbose"}, env, logs, rec)
	if err != nil {
		return err
	}
	defer agent.Stop(10 * time.Second)

	init, err := agent.Initialize(ctx)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	fmt.Printf("▶ initialize → %s %s, protocol %d\n", init.AgentInfo.Name, init.AgentInfo.Version, init.ProtocolVersion)

	httpURL, stopHTTP, err := startHTTPFixture(*fixture)
	if err != nil {
		return err
	}
	defer stopHTTP()

	fmt.Printf("▶ session/new cwd=%s with mcpServers: fixture (Go, stdio), filesystem (node, stdio), web (Go, Streamable HTTP at %s)\n", work, httpURL)
	start := time.Now()
	sess, err := agent.Conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: work, McpServers: []acpsdk.McpServer{
		acpclient.Stdio("fixture", *fixture, []string{"-demo"}, nil),
		acpclient.Stdio("filesystem", "node", []string{*fsServer, work}, nil),
		{Http: &acpsdk.McpServerHttpInline{Name: "web", Url: httpURL, Headers: []acpsdk.HttpHeader{{Name: "Authorization", Value: "Bearer demo-token"}}}},
	}})
	if err != nil {
		return fmt.Errorf("session/new: %w", err)
	}
	sid := string(sess.SessionId)
	fmt.Printf("  session %s ready in %s (every server connected before the answer)\n", sid, time.Since(start).Round(time.Millisecond))
	if _, _, err := rec.WaitFor(ctx, 0, func(n acpsdk.SessionNotification) bool { return n.Update.AvailableCommandsUpdate != nil }); err != nil {
		return err
	}

	pids := childPids(agent.Cmd.Process.Pid)
	steps := []struct {
		prompt, want string
		answer       acpsdk.PermissionOptionKind // to a permission question, if the call asks one
	}{
		{"/servers", "filesystem: connected", ""},
		{"/tools", "mcp__filesystem__read_text_file", ""},
		{fmt.Sprintf(`/call mcp__filesystem__read_text_file {"path":%q}`, note), "Hello from the acp-agent demo!", ""},
		{`/call mcp__acp__read_file {"path":"hello.txt"}`, "Hello from the acp-agent demo!", ""}, // a built-in tool, in process
		{"/call mcp__fixture__image", "[image image/png", acpsdk.PermissionOptionKindAllowOnce},
		{"/call mcp__fixture__audio", "declined", acpsdk.PermissionOptionKindRejectOnce},
		{`/call mcp__fixture__add {"a": 2, "b": 3}`, "5", ""},
		{`/call mcp__web__echo {"message": "over Streamable HTTP"}`, "Echo: over Streamable HTTP", ""},
		{"/call mcp__web__headers", "Authorization: Bearer demo-token", acpsdk.PermissionOptionKindAllowOnce},
	}
	for _, s := range steps {
		if s.answer != "" {
			answer.Store(s.answer)
		}
		fmt.Printf("\n▶ %s\n", s.prompt)
		from, askedBefore := len(rec.Updates()), asked.Load()
		stop, err := agent.Prompt(ctx, sid, s.prompt)
		if err != nil {
			return fmt.Errorf("%s: %w", s.prompt, err)
		}
		fmt.Printf("  stopReason: %s\n", stop)
		var out strings.Builder
		for _, n := range rec.Updates()[from:] {
			out.WriteString(acpclient.Format(n) + "\n")
		}
		if !strings.Contains(out.String(), s.want) {
			return fmt.Errorf("%s: the updates do not show %q", s.prompt, s.want)
		}
		if s.answer != "" && asked.Load() == askedBefore {
			return fmt.Errorf("%s: the agent asked no permission question", s.prompt)
		}
	}

	fmt.Printf("\n▶ session/close (MCP server processes: %v)\n", pids)
	if _, err := agent.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: sess.SessionId}); err != nil {
		return fmt.Errorf("session/close: %w", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			return fmt.Errorf("process %d outlived its session", pid)
		}
	}
	fmt.Println("  every MCP server process of the session is gone")
	if err := agent.Stop(10 * time.Second); err != nil && !errors.Is(err, os.ErrProcessDone) {
		var exitErr interface{ ExitCode() int }
		if !errors.As(err, &exitErr) {
			return err
		}
	}
	return nil
}

// askedPermission prints a permission question, its options and the answer
// the demo gives (the option of kind want, else the first), and returns that
// answer.
func askedPermission(w io.Writer, p acpsdk.RequestPermissionRequest, want acpsdk.PermissionOptionKind) acpsdk.RequestPermissionResponse {
	title := string(p.ToolCall.ToolCallId)
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	if len(p.Options) == 0 {
		fmt.Fprintf(w, "  ? permission asked: %q, with no options → the demo cancels\n", title)
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}
	}
	pick := p.Options[0]
	var names []string
	for _, o := range p.Options {
		names = append(names, o.Name)
		if o.Kind == want && pick.Kind != want {
			pick = o
		}
	}
	fmt.Fprintf(w, "  ? permission asked: %q [%s] → the demo answers: %s\n", title, strings.Join(names, " | "), pick.Name)
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(pick.OptionId)}
}

// startHTTPFixture runs the fixture in HTTP mode on loopback and returns its
// Streamable HTTP URL.
func startHTTPFixture(bin string) (string, func(), error) {
	cmd := exec.Command(bin, "-demo", "-http", "127.0.0.1:0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = stdin.Close(); _ = cmd.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("fixture -http: %w", err)
	}
	return strings.TrimSpace(line) + "/mcp", stop, nil
}

// childPids lists the direct children of pid.
func childPids(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		var state string
		var ppid, self int
		if i < 0 {
			continue
		}
		fmt.Sscan(s[i+2:], &state, &ppid)
		fmt.Sscan(e.Name(), &self)
		if ppid == pid {
			out = append(out, self)
		}
	}
	return out
}

func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(data), ") Z ")
}
