package connect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/acp/connect"
	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/bridge/builtin"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// fixtureBin is the Go MCP fixture server (testfixtures/mcpserver), built
// by TestMain: the editor's local stdio server.
var fixtureBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "acp-connect-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fixtureBin = filepath.Join(dir, "mcp-fixture")
	var stderr bytes.Buffer
	cmd := exec.Command("go", "build", "-o", fixtureBin, "../../testfixtures/mcpserver")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "go build testfixtures/mcpserver: %v\n%s", err, stderr.String())
		_ = os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// testLogger discards, unless ACP_CONNECT_TEST_LOG is set (then stderr).
func testLogger() *slog.Logger {
	if os.Getenv("ACP_CONNECT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// gateway is an in-process gateway: one session core, and a new acp.Agent
// on it for every connection dialed, as the network front end serves each
// connection with an Agent over one core.
type gateway struct {
	t    *testing.T
	core *session.Core
	// stripResume removes sessionCapabilities.resume from what the
	// gateway says, as a gateway without session/resume would.
	stripResume bool

	mu    sync.Mutex
	links []*pipeLink
	hold  chan struct{} // when set, dials wait for it to close
	fail  error         // when set, dials fail with it
	dialt chan struct{} // closed and replaced at every dial
}

// newGateway returns a gateway whose core has the built-in tools (their
// fs/* go to the editor).
func newGateway(t *testing.T) *gateway {
	core := session.NewCore(&session.CoreOptions{Logger: testLogger(), InProcess: []session.InProcessServer{{
		Name: builtin.Name, Lazy: true,
		New: func(env session.InProcessEnv) *mcp.Server {
			return builtin.New(&builtin.Options{Root: env.Cwd, Dirs: env.AdditionalDirectories, Editor: env.Editor})
		},
		Timeouts: bridge.Timeouts{ToolCall: builtin.CallTimeout},
	}}})
	g := &gateway{t: t, core: core, dialt: make(chan struct{})}
	t.Cleanup(func() {
		for _, l := range g.all() {
			_ = l.Close()
			select {
			case <-l.agentDone:
			case <-time.After(30 * time.Second):
				t.Error("a gateway connection's agent did not end")
			}
		}
		core.Shutdown()
	})
	return g
}

// dial is the Proxy's DialFunc: a new connection to a new Agent on the
// gateway's core.
func (g *gateway) dial(ctx context.Context) (connect.Link, error) {
	g.mu.Lock()
	hold, fail := g.hold, g.fail
	close(g.dialt)
	g.dialt = make(chan struct{})
	g.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	gwIn, proxyOut := io.Pipe()
	proxyIn, gwOut := io.Pipe()
	l := &pipeLink{in: proxyIn, out: proxyOut, gwOut: gwOut, stripResume: g.stripResume, agentDone: make(chan struct{})}
	l.s = acp.NewLineStream(proxyIn, proxyOut)
	agent := acp.New(g.core, &acp.Options{Version: "test", Logger: testLogger()})
	go func() { // waited for by the cleanup (agentDone)
		defer close(l.agentDone)
		_ = agent.ServeStream(context.Background(), acp.NewLineStream(gwIn, gwOut))
		_ = gwOut.Close()
	}()
	g.mu.Lock()
	g.links = append(g.links, l)
	g.mu.Unlock()
	return l, nil
}

func (g *gateway) all() []*pipeLink {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*pipeLink(nil), g.links...)
}

// last returns the newest connection.
func (g *gateway) last() *pipeLink {
	ls := g.all()
	if len(ls) == 0 {
		g.t.Fatal("no connection to the gateway was dialed")
	}
	return ls[len(ls)-1]
}

// holdDials makes the next dials wait until the returned func is called.
func (g *gateway) holdDials() (release func()) {
	ch := make(chan struct{})
	g.mu.Lock()
	g.hold = ch
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.hold = nil
		g.mu.Unlock()
		close(ch)
	}
}

// dialed returns a channel closed at the next dial.
func (g *gateway) dialed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dialt
}

// pipeLink is the proxy's side of one in-process gateway connection.
type pipeLink struct {
	s           acp.Stream
	in          *io.PipeReader // what the gateway writes
	out         *io.PipeWriter // what the gateway reads
	gwOut       *io.PipeWriter // the gateway's end of in, cut by cut
	stripResume bool
	agentDone   chan struct{}

	mu   sync.Mutex
	sent []string // the methods of the requests the proxy sent, in order
}

func (l *pipeLink) ReadMessage() ([]byte, error) {
	msg, err := l.s.ReadMessage()
	if err == nil && l.stripResume && bytes.Contains(msg, []byte(`"sessionCapabilities"`)) {
		msg = stripResume(msg)
	}
	return msg, err
}

func (l *pipeLink) WriteMessage(line []byte) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) == nil && m.Method != "" {
		l.mu.Lock()
		l.sent = append(l.sent, m.Method)
		l.mu.Unlock()
	}
	return l.s.WriteMessage(line)
}

func (l *pipeLink) Close() error {
	_ = l.out.Close()
	return l.in.Close()
}

// cut ends the connection as a network failure would: the proxy's reads
// fail with cause.
func (l *pipeLink) cut(cause error) { _ = l.gwOut.CloseWithError(cause) }

// methods returns the methods the proxy sent on l.
func (l *pipeLink) methods() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sent...)
}

// stripResume removes result.agentCapabilities.sessionCapabilities.resume.
func stripResume(msg []byte) []byte {
	var m map[string]any
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	res, _ := m["result"].(map[string]any)
	caps, _ := res["agentCapabilities"].(map[string]any)
	sc, _ := caps["sessionCapabilities"].(map[string]any)
	if sc == nil {
		return msg
	}
	delete(sc, "resume")
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// editor is the editor's side: acp-go-sdk's client over pipes to a Proxy.
type editor struct {
	t      *testing.T
	conn   *acpsdk.ClientSideConnection
	client *acpclient.Recorder
	fs     *acpclient.DirFS
	host   *acpclient.MCPHost
	proxy  *connect.Proxy
	runErr chan error
	stdin  *io.PipeWriter // the proxy's stdin, closed by end

	mu          sync.Mutex
	permissions []string // the titles of the permission requests seen
}

// startEditor runs a Proxy to g and an editor on it, and initializes.
// notices makes the editor advertise session.notices; host, if set,
// hosts MCP servers over ACP.
func startEditor(t *testing.T, g *gateway, notices bool, host *acpclient.MCPHost) *editor {
	t.Helper()
	if host == nil {
		host = &acpclient.MCPHost{}
	}
	proxyIn, stdin := io.Pipe()
	stdout, proxyOut := io.Pipe()
	e := &editor{t: t, fs: acpclient.NewDirFS("/"), host: host, runErr: make(chan error, 1), stdin: stdin}
	e.client = &acpclient.Recorder{FS: e.fs, MCP: host}
	e.client.Permission = func(r acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse {
		e.mu.Lock()
		title := ""
		if r.ToolCall.Title != nil {
			title = *r.ToolCall.Title
		}
		e.permissions = append(e.permissions, title)
		e.mu.Unlock()
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(r.Options[0].OptionId)}
	}
	e.proxy = connect.New(g.dial, &connect.Options{URL: "ws://gateway.test/acp?token=secret", Grace: time.Second, Logger: testLogger()})
	go func() { // waited for by end
		e.runErr <- e.proxy.Run(context.Background(), acp.NewLineStream(proxyIn, proxyOut))
		_ = proxyOut.Close()
	}()
	e.conn = acpclient.NewConnection(e.client, stdin, stdout)
	t.Cleanup(func() { e.end() })
	caps := map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}}
	if notices {
		caps["session"] = map[string]any{"notices": map[string]any{}}
	}
	// On the host's connection: acp-go-sdk's InitializeRequest cannot say
	// session.notices.
	if _, err := acpsdk.SendRequest[json.RawMessage](host.Conn(), e.ctx(), acpsdk.AgentMethodInitialize, map[string]any{
		"protocolVersion": acpsdk.ProtocolVersionNumber, "clientCapabilities": caps,
		"clientInfo": map[string]any{"name": "connect-test", "version": "1"},
	}); err != nil {
		t.Fatal(err)
	}
	return e
}

// end closes the proxy's stdin and waits for Run's result (once).
func (e *editor) end() error {
	e.t.Helper()
	_ = e.stdin.Close()
	select {
	case err, ok := <-e.runErr:
		if !ok {
			return nil
		}
		close(e.runErr)
		return err
	case <-time.After(60 * time.Second):
		e.t.Fatal("the proxy did not end after its stdin closed")
		return nil
	}
}

// ctx is a generous deadline for one step of a test.
func (e *editor) ctx() context.Context {
	ctx, cancel := context.WithTimeout(e.t.Context(), 60*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

// newSession opens a session in cwd with servers and waits for its
// commands update (the session is announced).
func (e *editor) newSession(cwd string, servers ...acpsdk.McpServer) string {
	e.t.Helper()
	if servers == nil {
		servers = []acpsdk.McpServer{}
	}
	from := len(e.client.Updates())
	res, err := e.conn.NewSession(e.ctx(), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: servers})
	if err != nil {
		e.t.Fatal(err)
	}
	e.waitUpdate(from, func(n acpsdk.SessionNotification) bool {
		return n.SessionId == res.SessionId && n.Update.AvailableCommandsUpdate != nil
	})
	return string(res.SessionId)
}

// prompt sends text and returns the text of the turn's updates.
func (e *editor) prompt(sid, text string) (acpsdk.StopReason, string, []acpsdk.SessionNotification) {
	e.t.Helper()
	from := len(e.client.Updates())
	res, err := e.conn.Prompt(e.ctx(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
	if err != nil {
		e.t.Fatalf("prompt %q: %v", text, err)
	}
	out := e.client.Updates()[from:]
	var b strings.Builder
	for _, u := range out {
		b.WriteString(acpclient.Text(u))
	}
	return res.StopReason, b.String(), out
}

// waitUpdate waits for an update from index from that matches.
func (e *editor) waitUpdate(from int, match func(acpsdk.SessionNotification) bool) (int, acpsdk.SessionNotification) {
	e.t.Helper()
	i, n, err := e.client.WaitFor(e.ctx(), from, match)
	if err != nil {
		e.t.Fatal(err)
	}
	return i, n
}

// waitText waits for an update of session sid whose agent message or
// notice holds text, from index from.
func (e *editor) waitText(from int, sid, text string) int {
	e.t.Helper()
	i, _ := e.waitUpdate(from, func(n acpsdk.SessionNotification) bool {
		raw, _ := json.Marshal(n.Update)
		return string(n.SessionId) == sid && strings.Contains(string(raw), text)
	})
	return i
}

// fixtureEntry is the editor's stdio entry of the fixture server, named
// name, which appends "<pid> …" to readyFile when it starts.
func fixtureEntry(name, readyFile string) acpsdk.McpServer {
	return acpclient.Stdio(name, fixtureBin, nil, map[string]string{"FIXTURE_READY_FILE": readyFile, "FROM_THE_EDITOR": "yes"})
}

// readyPIDs returns the pids in the fixture's ready file, waiting (30 s at
// most) until it has n.
func readyPIDs(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	testutil.WaitFor(t, 30*time.Second, func() bool {
		pids = pids[:0]
		data, _ := os.ReadFile(path)
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				if pid, err := strconv.Atoi(f[0]); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		return len(pids) >= n
	}, "%s holds fewer than %d pids", path, n)
	return pids
}

// parentOf returns the parent pid of pid (Linux /proc).
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// lastToolUpdate returns the last tool_call_update of updates.
func lastToolUpdate(updates []acpsdk.SessionNotification) *acpsdk.SessionToolCallUpdate {
	for i := len(updates) - 1; i >= 0; i-- {
		if u := updates[i].Update.ToolCallUpdate; u != nil {
			return u
		}
	}
	return nil
}

// requestError returns err as the JSON-RPC error it is, or fails.
func requestError(t *testing.T, err error) *acpsdk.RequestError {
	t.Helper()
	var re *acpsdk.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a JSON-RPC error", err, err)
	}
	return re
}

// mustJSON returns v as JSON text.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
