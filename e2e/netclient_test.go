package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/acp/remote"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// gatewayProc is an "acp-agent gateway" process.
type gatewayProc struct {
	cmd  *exec.Cmd
	addr string // host:port it listens on
	logs *testutil.Buffer
}

// gatewayListening is the gateway's log line saying where it listens.
var gatewayListening = regexp.MustCompile(`gateway listening\s+\{"url": "https?://([^/"]+)/acp"`)

// startGateway runs the gateway on addr ("" lets it pick a loopback port)
// and waits until it listens, as its log says. It is stopped with SIGTERM
// at cleanup, unless the test killed it.
func startGateway(t testing.TB, addr string, env []string, args ...string) *gatewayProc {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	g := &gatewayProc{addr: addr, logs: &testutil.Buffer{}}
	home := t.TempDir()
	g.cmd = exec.Command(agentBin, append([]string{"gateway", "--listen", addr, "--verbose"}, args...)...)
	g.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + home, "XDG_CONFIG_HOME=" + home}, env...)
	g.cmd.Stderr = g.logs
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = g.cmd.Process.Kill()
			t.Error("the gateway did not stop on SIGTERM")
		}
		if t.Failed() || os.Getenv("E2E_AGENT_LOGS") != "" {
			t.Logf("gateway logs:\n%s", g.logs.String())
		}
	})
	g.logs.WaitFor(t, 60*time.Second, gatewayListening.MatchString,
		"the gateway never listened on %s:\n%s", addr, g.logs)
	g.addr = gatewayListening.FindStringSubmatch(g.logs.String())[1]
	return g
}

// url is the gateway's ACP endpoint.
func (g *gatewayProc) url() string { return "http://" + g.addr + "/acp" }

// netClient is an ACP client on a gateway's network transport:
// acp-go-sdk's client side over a remote.ClientConn.
type netClient struct {
	t      testing.TB
	Conn   *acpsdk.ClientSideConnection
	Client *acpclient.Recorder
	cc     *remote.ClientConn
}

// dialGateway connects rec (nil: a plain Recorder) to url over transport
// ("": WebSocket, falling back to HTTP) with token, and initializes.
func dialGateway(t testing.TB, url, token, transport string, rec *acpclient.Recorder) *netClient {
	t.Helper()
	c, err := tryDialGateway(t, url, token, transport, rec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tryDialGateway is dialGateway returning its error.
func tryDialGateway(t testing.TB, url, token, transport string, rec *acpclient.Recorder) (*netClient, error) {
	t.Helper()
	return dialGatewayWith(t, url, &remote.DialOptions{Token: token, Transport: transport}, rec)
}

// dialGatewayWith is tryDialGateway with the dial's options.
func dialGatewayWith(t testing.TB, url string, opts *remote.DialOptions, rec *acpclient.Recorder) (*netClient, error) {
	t.Helper()
	if rec == nil {
		rec = &acpclient.Recorder{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cc, err := remote.Dial(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		for {
			m, err := cc.ReadMessage()
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := pw.Write(append(m, '\n')); err != nil {
				return
			}
		}
	}()
	c := &netClient{t: t, Client: rec, cc: cc}
	c.Conn = acpclient.NewConnection(rec, &lineWriter{cc: cc}, pr)
	t.Cleanup(func() { _ = cc.Close() })
	var caps acpsdk.ClientCapabilities
	if rec.FS != nil {
		caps.Fs = acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}
	}
	caps.Terminal = rec.Terminals != nil
	if _, err := c.Conn.Initialize(ctx, acpsdk.InitializeRequest{
		ProtocolVersion: acpsdk.ProtocolVersionNumber, ClientCapabilities: caps,
		ClientInfo: &acpsdk.Implementation{Name: "acp-agent-e2e-net", Version: "1"},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// lineWriter hands a ClientConn each line written to it.
type lineWriter struct {
	cc  *remote.ClientConn
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := w.buf[:i+1]
		if err := w.cc.WriteMessage(line); err != nil {
			return 0, err
		}
		w.buf = w.buf[i+1:]
	}
}

// newSession opens a session and waits for its available commands.
func (c *netClient) newSession(cwd string, servers ...acpsdk.McpServer) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	from := len(c.Client.Updates())
	if servers == nil {
		servers = []acpsdk.McpServer{}
	}
	res, err := c.Conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: servers})
	if err != nil {
		c.t.Fatalf("session/new: %v", err)
	}
	if _, _, err := c.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		return n.SessionId == res.SessionId && n.Update.AvailableCommandsUpdate != nil
	}); err != nil {
		c.t.Fatal(err)
	}
	return string(res.SessionId)
}

// prompt runs one turn and returns its stop reason, updates and error.
func (c *netClient) prompt(sid, text string) (acpsdk.StopReason, []acpsdk.SessionNotification, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	from := len(c.Client.Updates())
	res, err := c.Conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
	return res.StopReason, c.Client.Updates()[from:], err
}

// mustPrompt is prompt, failing the test on an error.
func (c *netClient) mustPrompt(sid, text string) (acpsdk.StopReason, []acpsdk.SessionNotification) {
	c.t.Helper()
	stop, out, err := c.prompt(sid, text)
	if err != nil {
		c.t.Fatalf("prompt %q: %v", text, err)
	}
	return stop, out
}

// gatewayTestToken is the gateway token of the e2e tests: a listener's
// token must be at least 32 characters of 8 different ones.
const gatewayTestToken = "gw-token-0123456789abcdef0123456789abcdef"

// hasText reports whether the agent messages of out contain s.
func hasText(out []acpsdk.SessionNotification, s string) bool { return strings.Contains(text(out), s) }
