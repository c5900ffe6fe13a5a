package e2e

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// restartableProc runs a server process on a loopback port, and can kill it
// and start it again on the same port, as a deploy would. The first start
// takes a port the system picks (0); restarts reuse the port it got, which
// the test owns from then on.
type restartableProc struct {
	t     *testing.T
	start func(port int) (*exec.Cmd, int) // starts the process on port; it listens on the port returned
	cmd   *exec.Cmd
	port  int
}

func newRestartableProc(t *testing.T, start func(port int) (*exec.Cmd, int)) *restartableProc {
	p := &restartableProc{t: t, start: start}
	p.cmd, p.port = start(0)
	t.Cleanup(p.kill)
	return p
}

func (p *restartableProc) kill() {
	if p.cmd != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		p.cmd = nil
	}
}

func (p *restartableProc) restart() {
	p.kill()
	var port int
	p.cmd, port = p.start(p.port)
	if port != p.port {
		p.t.Fatalf("restarted on port %d, want %d", port, p.port)
	}
}

// fixtureOnPort starts the Go fixture's HTTP mode on port (0: one the system
// picks) and returns it with the port it listens on, which it prints.
func fixtureOnPort(t *testing.T) func(port int) (*exec.Cmd, int) {
	return func(port int) (*exec.Cmd, int) {
		cmd := exec.Command(fixtureBin, "-http", fmt.Sprintf("127.0.0.1:%d", port))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		_, _ = cmd.StdinPipe() // kept open: EOF on stdin ends the fixture
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("fixture -http on %d: %v", port, err)
		}
		u, err := url.Parse(strings.TrimSpace(line))
		if err != nil {
			t.Fatalf("fixture -http on %d printed %q: %v", port, line, err)
		}
		got, _ := strconv.Atoi(u.Port())
		return cmd, got
	}
}

// supergatewayOnPort starts server-filesystem behind supergateway (stateful
// Streamable HTTP, the TypeScript SDK's session handling) on port (0: one
// the system picks).
func supergatewayOnPort(t *testing.T, root string) func(port int) (*exec.Cmd, int) {
	return func(port int) (*exec.Cmd, int) {
		return runNodeServer(t, port, nil, supergateway, "--stdio", "node "+filesystem+" "+root,
			"--outputTransport", "streamableHttp", "--stateful", "--port", "{port}", "--logLevel", "none")
	}
}

// callUntil sends prompt until its tool call completes, for a generous
// deadline (a lost server is dialed again after a backoff), and returns the
// text of the call that completed.
func callUntil(t *testing.T, a *agent, sid, prompt string) string {
	t.Helper()
	var last string
	if !testutil.Eventually(60*time.Second, func() bool {
		_, out := a.prompt(sid, prompt)
		end := finalToolUpdate(t, out)
		last = contentText(end)
		return *end.Status == acpsdk.ToolCallStatusCompleted
	}) {
		t.Fatalf("%s never completed again; last: %q", prompt, last)
	}
	return last
}

// TestMCP_HTTPServerRestartedMidSession: Streamable HTTP servers (the Go
// fixture: 404 for the old session; supergateway: the TypeScript SDK's 400
// "No valid session ID") restart in the middle of a session; the next calls
// initialize a new session and work, with no restart of the session. While
// a server is down, its calls fail as tool errors and /servers says it is
// lost. The token in the fixture's URL never reaches the agent's log.
func TestMCP_HTTPServerRestartedMidSession(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "note.txt"), []byte("still here"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture := newRestartableProc(t, fixtureOnPort(t))
	gateway := newRestartableProc(t, supergatewayOnPort(t, root))

	a := startAgent(t)
	sid := a.newSession(root,
		httpServer("fixture", fmt.Sprintf("http://127.0.0.1:%d/mcp?token=e2e-url-secret", fixture.port), nil),
		httpServer("fs", fmt.Sprintf("http://127.0.0.1:%d/mcp", gateway.port), nil),
	)
	if startup := text(a.Client.Updates()); strings.Contains(startup, "failed") {
		t.Fatalf("a server failed:\n%s", startup)
	}
	echo := `/call mcp__fixture__echo {"message":"hello"}`
	read := fmt.Sprintf(`/call mcp__fs__read_text_file {"path": %q}`, filepath.Join(root, "note.txt"))
	if got := callUntil(t, a, sid, echo); !strings.Contains(got, "hello") {
		t.Fatalf("echo: %q", got)
	}
	if got := callUntil(t, a, sid, read); !strings.Contains(got, "still here") {
		t.Fatalf("read: %q", got)
	}

	// Down: a tool error, not a dead session; /servers says lost.
	fixture.kill()
	_, out := a.prompt(sid, echo)
	if end := finalToolUpdate(t, out); *end.Status != acpsdk.ToolCallStatusFailed {
		t.Errorf("a call to a server that is down: %s %q, want failed", *end.Status, contentText(end))
	}
	_, out = a.prompt(sid, "/servers")
	if got := text(out); !strings.Contains(got, "- fixture: lost (http,") || !strings.Contains(got, "?REDACTED") {
		t.Errorf("/servers while the fixture is down:\n%s", got)
	}

	// Back (a new process: none of the old sessions), and the fs server restarts too.
	fixture.restart()
	gateway.restart()
	if got := callUntil(t, a, sid, echo); !strings.Contains(got, "hello") {
		t.Errorf("echo after the restart: %q", got)
	}
	if got := callUntil(t, a, sid, read); !strings.Contains(got, "still here") {
		t.Errorf("read after the restart: %q", got)
	}
	_, out = a.prompt(sid, "/servers")
	for _, want := range []string{"- fixture: connected (http,", "- fs: connected (http,"} {
		if got := text(out); !strings.Contains(got, want) {
			t.Errorf("/servers after the restart lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(a.stderr.String(), "e2e-url-secret") {
		t.Error("the URL's token is in the agent's log")
	}
}
