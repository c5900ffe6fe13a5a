package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// nodeListening is the line testdata/loopback.cjs prints on stderr once the
// node server it is preloaded into listens, with the port it got.
var nodeListening = regexp.MustCompile(`loopback\.cjs: listening on 127\.0\.0\.1:(\d+)`)

// startNodeServer runs a node HTTP MCP server on a loopback port the system
// picks and returns that port; the server ends with the test.
func startNodeServer(t testing.TB, env []string, args ...string) int {
	t.Helper()
	_, port := runNodeServer(t, 0, env, args...)
	return port
}

// runNodeServer starts a node HTTP MCP server on loopback port (0: a port
// the system picks), given as PORT in its environment and in place of
// "{port}" in args, with testdata/loopback.cjs preloaded. It waits until the
// server listens, as loopback.cjs reports (they take about 2 s to start),
// and returns the process and the port it listens on. The process is killed
// when the test ends, if it has not been before.
func runNodeServer(t testing.TB, port int, env []string, args ...string) (*exec.Cmd, int) {
	t.Helper()
	loopback, _ := filepath.Abs("testdata/loopback.cjs")
	cmd := exec.Command("node", append([]string{"-r", loopback}, args...)...)
	for i, a := range cmd.Args {
		cmd.Args[i] = strings.ReplaceAll(a, "{port}", strconv.Itoa(port))
	}
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PORT=" + strconv.Itoa(port)}, env...)
	out := &testutil.Buffer{}
	cmd.Stderr, cmd.Stdout = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out.WaitFor(t, 60*time.Second, nodeListening.MatchString,
		"%v never listened on 127.0.0.1:%d:\n%s", args, port, out)
	got, _ := strconv.Atoi(nodeListening.FindStringSubmatch(out.String())[1])
	return cmd, got
}

// startFixtureHTTP runs the Go fixture in HTTP mode, with env on top of PATH,
// and returns its base URL.
func startFixtureHTTP(t testing.TB, env ...string) string {
	t.Helper()
	cmd := exec.Command(fixtureBin, "-http", "127.0.0.1:0")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("fixture -http: %v", err)
	}
	return strings.TrimSpace(line)
}

func httpServer(name, url string, headers map[string]string) acpsdk.McpServer {
	h := []acpsdk.HttpHeader{}
	for k, v := range headers {
		h = append(h, acpsdk.HttpHeader{Name: k, Value: v})
	}
	return acpsdk.McpServer{Http: &acpsdk.McpServerHttpInline{Name: name, Url: url, Headers: h}}
}

func sseServer(name, url string, headers map[string]string) acpsdk.McpServer {
	h := []acpsdk.HttpHeader{}
	for k, v := range headers {
		h = append(h, acpsdk.HttpHeader{Name: k, Value: v})
	}
	return acpsdk.McpServer{Sse: &acpsdk.McpServerSseInline{Name: name, Url: url, Headers: h}}
}

// TestHTTP_RealServers connects Streamable HTTP and SSE servers on loopback:
// server-everything in both modes, server-filesystem behind supergateway
// (stateful Streamable HTTP), and the Go fixture, which echoes the headers
// it received.
func TestHTTP_RealServers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "note.txt"), []byte("over streamable http"), 0o644); err != nil {
		t.Fatal(err)
	}
	evHTTP := startNodeServer(t, nil, everything, "streamableHttp")
	evSSE := startNodeServer(t, nil, everything, "sse")
	fsHTTP := startNodeServer(t, nil, supergateway, "--stdio", "node "+filesystem+" "+root,
		"--outputTransport", "streamableHttp", "--stateful", "--port", "{port}", "--logLevel", "none")
	fixture := startFixtureHTTP(t)

	a := startAgent(t)
	auth := map[string]string{"Authorization": "Bearer e2e-token", "X-Team": "blue"}
	sid := a.newSession(root,
		httpServer("evhttp", fmt.Sprintf("http://127.0.0.1:%d/mcp", evHTTP), nil),
		sseServer("evsse", fmt.Sprintf("http://127.0.0.1:%d/sse", evSSE), nil),
		httpServer("fs", fmt.Sprintf("http://localhost:%d/mcp", fsHTTP), nil),
		httpServer("fixture", fixture+"/mcp", auth),
		sseServer("fixturesse", fixture+"/sse", auth),
	)
	if startup := text(a.Client.Updates()); strings.Contains(startup, "failed") {
		t.Fatalf("a server failed:\n%s", startup)
	}

	_, out := a.prompt(sid, "/servers")
	for _, want := range []string{"- evhttp: connected (http,", "- evsse: connected (sse,", "- fs: connected (http,", "- fixture: connected (http,", "- fixturesse: connected (sse,"} {
		if !strings.Contains(text(out), want) {
			t.Errorf("/servers lacks %q:\n%s", want, text(out))
		}
	}
	_, out = a.prompt(sid, "/tools")
	for _, want := range []string{"mcp__evhttp__echo", "mcp__evsse__get-sum", "mcp__fs__read_text_file", "mcp__fixture__headers"} {
		if !strings.Contains(text(out), want) {
			t.Errorf("/tools lacks %q", want)
		}
	}

	calls := []struct{ prompt, want string }{
		{`/call mcp__evhttp__echo {"message":"over http"}`, "Echo: over http"},
		{`/call mcp__evsse__echo {"message":"over sse"}`, "Echo: over sse"},
		{`/call mcp__evhttp__get-sum {"a": 2, "b": 40}`, "42"},
		{fmt.Sprintf(`/call mcp__fs__read_text_file {"path": %q}`, filepath.Join(root, "note.txt")), "over streamable http"},
		{"/call mcp__fixture__headers", "Authorization: Bearer e2e-token"},
		{"/call mcp__fixturesse__headers", "X-Team: blue"},
	}
	for _, c := range calls {
		_, out := a.prompt(sid, c.prompt)
		end := finalToolUpdate(t, out)
		if *end.Status != acpsdk.ToolCallStatusCompleted || !strings.Contains(contentText(end), c.want) {
			t.Errorf("%s: %s %q, want %q", c.prompt, *end.Status, contentText(end), c.want)
		}
	}
	_, out = a.prompt(sid, "/call mcp__evhttp__get-tiny-image")
	if end := finalToolUpdate(t, out); len(end.Content) < 2 || end.Content[1].Content.Content.Image == nil {
		t.Errorf("image over http:\n%s", dump(out))
	}
}

// TestHTTP_PolicyAndHeaders checks the URL policy and the header rules end to
// end: a refused URL fails only its server, with the rule; a forbidden header
// is invalid_params naming the server and the header.
func TestHTTP_PolicyAndHeaders(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	a.newSession(t.TempDir(),
		httpServer("metadata", "http://169.254.169.254/latest/meta-data", nil),
		httpServer("plain", "http://example.com/mcp", nil),
		everythingServer("everything"))
	startup := text(a.Client.Updates())
	for _, want := range []string{`MCP server "metadata" failed: URL "http://169.254.169.254/latest/meta-data" refused`, `MCP server "plain" failed: URL "http://example.com/mcp" refused`} {
		if !strings.Contains(startup, want) {
			t.Errorf("startup lacks %q:\n%s", want, startup)
		}
	}
	if strings.Contains(startup, `"everything" failed`) {
		t.Errorf("a refused URL failed another server:\n%s", startup)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := a.Conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{
		httpServer("web", "https://example.com/mcp", map[string]string{"Host": "evil.example"}),
	}})
	if err == nil || !strings.Contains(err.Error(), `mcpServers[0] (\"web\") headers: header \"Host\"`) {
		t.Errorf("Host header: err = %v", err)
	}
}

// TestEnv_AgentSecretsNeverReachAServer checks the child environment end to
// end with server-everything's get-env.
func TestEnv_AgentSecretsNeverReachAServer(t *testing.T) {
	t.Parallel()
	stderr := &testutil.Buffer{}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPENAI_API_KEY=sk-test-secret", "ACP_AGENT_GATEWAY_TOKEN=x"}
	p, err := acpclient.Start(agentBin, []string{"--verbose"}, env, stderr, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{Process: p, t: t, stderr: stderr}
	t.Cleanup(func() { _ = a.Stop(20 * time.Second) })
	if _, err := a.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	sid := a.newSession(t.TempDir(), acpclient.Stdio("everything", "node", []string{everything, "stdio"},
		map[string]string{"FOO": "bar", "LD_PRELOAD": "/nonexistent/inject.so"}))
	_, out := a.prompt(sid, "/call mcp__everything__get-env")
	got := contentText(finalToolUpdate(t, out))
	if !strings.Contains(got, `"FOO": "bar"`) {
		t.Errorf("the client's FOO is missing:\n%s", got)
	}
	for _, leak := range []string{"sk-test-secret", "OPENAI_API_KEY", "ACP_AGENT_GATEWAY_TOKEN", "LD_PRELOAD"} {
		if strings.Contains(got, leak) {
			t.Errorf("%s reached the server:\n%s", leak, got)
		}
	}
	if !strings.Contains(stderr.String(), "LD_PRELOAD") {
		t.Errorf("no warning logged for the dropped LD_PRELOAD:\n%s", stderr.String())
	}
}
