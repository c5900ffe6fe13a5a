package e2e

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
)

// writeManaged writes a managed policy file (--managed-config) in a
// temporary directory and returns its path.
func writeManaged(t *testing.T, policy string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "managed.json")
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// connCounter is a loopback listener that counts the connections made to
// it and closes them: an http server's address that must never be dialed.
type connCounter struct {
	ln   net.Listener
	mu   sync.Mutex
	n    int
	done chan struct{}
}

// listenCounter starts a connCounter, closed at the test's end.
func listenCounter(t *testing.T) *connCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &connCounter{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-c.done })
	return c
}

// url is an http server URL at the listener with path.
func (c *connCounter) url(path string) string { return fmt.Sprintf("http://%s%s", c.ln.Addr(), path) }

// count is the number of connections made so far.
func (c *connCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestManagedPolicy_RefusedServersNeverStart: the built agent with
// --managed-config. A server the policy refuses (by a deniedMcpServers
// command glob, by a URL glob, or because allowedMcpServers does not list
// it) is never started or dialed: its fixture writes no ready line, no
// process of it is under the agent, its address gets no connection. The
// message after session/new names each refused server, the policy file and
// the entry or list that refused it; the allowed server's tool works; a
// server added later with /mcp add is refused alike.
func TestManagedPolicy_RefusedServersNeverStart(t *testing.T) {
	for _, tt := range []struct {
		name   string
		policy string
		// demo and web are the refusals of the stdio server "demo" (the
		// fixture with -demo) and the http server "web".
		demo, web string
	}{
		{"denied by command and URL globs",
			`{"deniedMcpServers": [{"serverCommand": ["*/mcp-fixture", "-demo"]}, {"serverUrl": "http://127.0.0.1:*/denied/*"}]}`,
			`deniedMcpServers[0] {serverCommand: ["*/mcp-fixture", "-demo"]}`,
			`deniedMcpServers[1] {serverUrl: "http://127.0.0.1:*/denied/*"}`},
		{"not in the allowlist",
			`{"allowedMcpServers": [{"serverCommand": ["*/mcp-fixture"]}]}`,
			`its command matches no serverCommand entry`,
			`no serverName entry names it`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			managed := writeManaged(t, tt.policy)
			a := startAgentWith(t, nil, "--managed-config", managed)
			cwd := t.TempDir() // the fixtures run in workspace-write: they write in the cwd
			ready := func(name string) string { return filepath.Join(cwd, name+".ready") }
			web := listenCounter(t)
			sid := a.newSession(cwd,
				acpclient.Stdio("fixture", fixtureBin, nil, map[string]string{"FIXTURE_READY_FILE": ready("fixture")}),
				acpclient.Stdio("demo", fixtureBin, []string{"-demo"}, map[string]string{"FIXTURE_READY_FILE": ready("demo")}),
				httpServer("web", web.url("/denied/mcp"), nil))

			startup := text(a.Client.Updates())
			for name, rule := range map[string]string{"demo": tt.demo, "web": tt.web} {
				want := fmt.Sprintf(`MCP server %q failed: server %q `, name, name)
				i := strings.Index(startup, want)
				if i < 0 {
					t.Errorf("the session start does not say %q failed by the policy:\n%s", name, startup)
					continue
				}
				line, _, _ := strings.Cut(startup[i:], "\n")
				if !strings.Contains(line, "managed policy "+managed) || !strings.Contains(line, rule) {
					t.Errorf("%s: %q, want it to name the policy file %s and %q", name, line, managed, rule)
				}
			}
			if strings.Contains(startup, `"fixture" failed`) {
				t.Errorf("the allowed server failed:\n%s", startup)
			}

			if _, err := os.Stat(ready("demo")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused stdio server started: its ready file %v", err)
			}
			if data, err := os.ReadFile(ready("fixture")); err != nil || len(data) == 0 {
				t.Errorf("the allowed server wrote no ready line: %v", err)
			}
			for _, pid := range descendants(a.Cmd.Process.Pid) {
				if c := cmdline(pid); strings.Contains(c, "-demo") {
					t.Errorf("a process of the refused server runs: %d %s", pid, c)
				}
			}
			if n := web.count(); n != 0 {
				t.Errorf("the refused http server was dialed %d times", n)
			}

			_, out := a.prompt(sid, `/call mcp__fixture__echo {"message":"managed"}`)
			if got := contentText(finalToolUpdate(t, out)); got != "Echo: managed" {
				t.Errorf("the allowed server's echo = %q\n%s", got, dump(out))
			}
			_, out = a.prompt(sid, "/servers")
			if got := text(out); !strings.Contains(got, `- demo: failed (stdio): server "demo" `) || !strings.Contains(got, managed) {
				t.Errorf("/servers does not show demo refused by %s:\n%s", managed, got)
			}
			// A server added to the running session is refused alike.
			if out := a.say(sid, "/mcp add --env FIXTURE_READY_FILE="+ready("late")+" late "+fixtureBin+" -demo"); !strings.Contains(out, `MCP server "late" was not added: server "late" `) || !strings.Contains(out, managed) {
				t.Errorf("/mcp add of a refused server: %q", out)
			}
			if out := a.say(sid, "/mcp"); strings.Contains(out, "- late:") {
				t.Errorf("a refused /mcp add stays in the session: %q", out)
			}
			for _, name := range []string{"demo", "late"} {
				if _, err := os.Stat(ready(name)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the refused stdio server %s started later: %v", name, err)
				}
			}
		})
	}
}

// TestManagedPolicy_Notices: to an editor that takes notices (the
// TypeScript SDK's client), each refused server is a warning notice naming
// it, the policy file and the entry that refused it, and an http server's
// notice does not offer /login, which cannot change the policy's answer.
func TestManagedPolicy_Notices(t *testing.T) {
	t.Parallel()
	managed := writeManaged(t, `{"deniedMcpServers": [{"serverName": "demo"}, {"serverUrl": "http://127.0.0.1:*/denied/*"}]}`)
	web := listenCounter(t)
	run := tsClient{
		Capabilities: map[string]any{"session": map[string]any{"notices": map[string]any{}}},
		Servers: []map[string]any{
			{"name": "fixture", "command": fixtureBin, "args": []string{}, "env": []any{}},
			{"name": "demo", "command": fixtureBin, "args": []string{"-demo"}, "env": []any{}},
			{"type": "http", "name": "web", "url": web.url("/denied/mcp"), "headers": []any{}},
		},
		Prompts: []string{`/call mcp__fixture__echo {"message":"hi"}`},
		Args:    []string{"--managed-config", managed},
	}.run(t)

	ns := run.notices()
	want := map[string]string{
		`MCP server "demo" failed`: `server "demo" is refused by the managed policy ` + managed + `: deniedMcpServers[0] {serverName: "demo"}. Its tools are not in this session.`,
		`MCP server "web" failed`:  `server "web" is refused by the managed policy ` + managed + `: deniedMcpServers[1] {serverUrl: "http://127.0.0.1:*/denied/*"}. Its tools are not in this session.`,
	}
	if len(ns) != len(want) {
		t.Fatalf("%d notices, want %d: %+v", len(ns), len(want), ns)
	}
	for _, n := range ns {
		title, _ := n["title"].(string)
		if desc, _ := n["description"].(string); n["severity"] != "warning" || want[title] == "" || desc != want[title] {
			t.Errorf("notice %+v\nwant one of %q", n, want)
		}
	}
	if len(run.Stops) != 1 || run.Stops[0] != string(acpsdk.StopReasonEndTurn) {
		t.Errorf("the allowed server's call: stops %v", run.Stops)
	}
	if n := web.count(); n != 0 {
		t.Errorf("the refused http server was dialed %d times", n)
	}
}
