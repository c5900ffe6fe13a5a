package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// mcpModes are the transports of `acp-agent mcp-server`: stdio (the client
// runs the binary with mcp.CommandTransport) and Streamable HTTP (--listen
// on a loopback port, with a bearer token).
var mcpModes = []string{"stdio", "http"}

// mcpServerProc is a running `acp-agent mcp-server`.
type mcpServerProc struct {
	t      testing.TB
	mode   string
	env    []string
	args   []string
	stderr *testutil.Buffer
	cmd    *exec.Cmd
	url    string // http: the endpoint
	token  string // http: the bearer token
	client *mcpClient
}

// mcpClient is a go-sdk client session with the progress notifications and
// elicitation requests it received.
type mcpClient struct {
	*mcp.ClientSession
	t        testing.TB
	mu       sync.Mutex
	progress map[any][]*mcp.ProgressNotificationParams // by progress token
	elicited []string                                  // the messages of elicitation requests
	logged   []string                                  // the log messages: "level data"
	// received is notified after each progress or log message is recorded.
	received testutil.Signal
}

// mcpClientOptions configure a client: with elicit set, the client declares
// the elicitation capability and answers every form with it; version is the
// protocol version it asks for ("" the go-sdk's default, 2025-11-25; over
// HTTP 2026-07-28 is the stateless wire); token, over HTTP, is the server's
// bearer token ("" one made of the test's name).
type mcpClientOptions struct {
	elicit  func(*mcp.ElicitRequest) *mcp.ElicitResult
	version string
	token   string
	logs    bool // record notifications/message
}

// mcpTestConfig writes a config file with the Go fixture as the default
// server "fixture" (its calls logged to log), merged with extra keys (extra
// mcpServers are added to it).
func mcpTestConfig(t testing.TB, log string, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{"mcpServers": map[string]any{
		"fixture": map[string]any{"command": fixtureBin, "args": []string{}, "env": map[string]string{"FIXTURE_LOG": log}},
	}, // the fixture, confined to its session's directory (workspace-write), may write its log
		"servers": map[string]any{"fixture": map[string]any{"sandbox": map[string]any{"write": []string{filepath.Dir(log)}}}},
	}
	for k, v := range extra {
		if servers, ok := v.(map[string]any); ok && k == "mcpServers" {
			for name, spec := range servers {
				cfg[k].(map[string]any)[name] = spec
			}
			continue
		}
		cfg[k] = v
	}
	path := filepath.Join(t.TempDir(), "config.json")
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var listenURL = regexp.MustCompile(`mcp-server listening\s+\{"url": "(http://[^"]+)"`)

// startMCPServer runs `acp-agent mcp-server --verbose args...` in mode with
// a minimal environment plus env, and connects a plain client (p.client).
// The process is stopped at cleanup.
func startMCPServer(t testing.TB, mode string, env []string, args ...string) *mcpServerProc {
	t.Helper()
	return startMCPServerClient(t, mode, mcpClientOptions{}, env, args...)
}

// startMCPServerClient is startMCPServer with the first client's options.
func startMCPServerClient(t testing.TB, mode string, o mcpClientOptions, env []string, args ...string) *mcpServerProc {
	t.Helper()
	home := t.TempDir()
	p := &mcpServerProc{t: t, mode: mode, stderr: &testutil.Buffer{},
		env:  append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home, "XDG_STATE_HOME=" + home}, env...),
		args: append([]string{"mcp-server", "--verbose"}, args...)}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() || os.Getenv("E2E_AGENT_LOGS") != "" {
			t.Logf("mcp-server stderr:\n%s", p.stderr.String())
		}
	})
	if mode == "http" {
		p.token = o.token
		if p.token == "" {
			p.token = "e2e-token-0123456789abcdef0123456789-" + strings.ReplaceAll(t.Name(), "/", "-")
		}
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte(p.token), 0o600); err != nil {
			t.Fatal(err)
		}
		p.cmd = exec.Command(agentBin, append(p.args, "--listen", "127.0.0.1:0", "--token-file", tokenFile)...)
		p.cmd.Env, p.cmd.Stderr = p.env, p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.stderr.WaitFor(t, 60*time.Second, listenURL.MatchString,
			"mcp-server never logged its URL:\n%s", p.stderr)
		p.url = listenURL.FindStringSubmatch(p.stderr.String())[1]
	}
	p.client = p.connect(o)
	return p
}

// connect connects a new client: over stdio it starts the process, so it is
// called once (by startMCPServerClient).
func (p *mcpServerProc) connect(o mcpClientOptions) *mcpClient {
	t := p.t
	t.Helper()
	c := &mcpClient{t: t, progress: map[any][]*mcp.ProgressNotificationParams{}}
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		c.mu.Lock()
		c.progress[r.Params.ProgressToken] = append(c.progress[r.Params.ProgressToken], r.Params)
		c.mu.Unlock()
		c.received.Notify()
	}}
	if o.logs {
		//lint:ignore SA1019 MCP logging is deprecated from 2026-07-28 but ask_agent still logs in its deprecation window.
		opts.LoggingMessageHandler = func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			c.logged = append(c.logged, fmt.Sprintf("%s %v", r.Params.Level, r.Params.Data))
			c.mu.Unlock()
			c.received.Notify()
		}
	}
	if o.elicit != nil {
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.elicited = append(c.elicited, r.Params.Message)
			c.mu.Unlock()
			return o.elicit(r), nil
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
	var transport mcp.Transport
	if p.mode == "stdio" {
		p.cmd = exec.Command(agentBin, p.args...)
		p.cmd.Env, p.cmd.Stderr = p.env, p.stderr
		transport = &mcp.CommandTransport{Command: p.cmd, TerminateDuration: 30 * time.Second}
	} else {
		transport = &mcp.StreamableClientTransport{Endpoint: p.url, HTTPClient: &http.Client{Transport: bearer{p.token}}}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: o.version})
	if err != nil {
		t.Fatalf("%s: connect: %v", p.mode, err)
	}
	c.ClientSession = cs
	t.Cleanup(func() { _ = cs.Close() })
	return c
}

// bearer adds the Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// stop ends the server as its client would: stdio closes stdin (the client
// closes), HTTP gets SIGTERM. It reports whether the process exited with
// status 0; it is idempotent.
func (p *mcpServerProc) stop() bool {
	if p.cmd == nil || p.cmd.Process == nil {
		return false
	}
	if p.cmd.ProcessState == nil {
		if p.mode == "stdio" {
			_ = p.client.Close() // closes stdin, waits for the exit
		} else {
			_ = p.client.Close()
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = p.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				p.t.Errorf("mcp-server did not exit within 60s of SIGTERM")
				_ = p.cmd.Process.Kill()
				<-done
			}
		}
	}
	return p.cmd.ProcessState != nil && p.cmd.ProcessState.ExitCode() == 0
}

// askResult is an ask_agent result with its structuredContent decoded.
type askResult struct {
	text    string
	isError bool
	out     struct {
		Answer     string `json:"answer"`
		SessionKey string `json:"sessionKey"`
		StopReason string `json:"stopReason"`
		ToolCalls  []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"toolCalls"`
	}
}

// askCtx calls ask_agent with message and key ("" for a new conversation);
// a non-nil progress token is sent with the call.
func (c *mcpClient) askCtx(ctx context.Context, message, key string, token any) (*askResult, error) {
	args := map[string]any{"message": message}
	if key != "" {
		args["sessionKey"] = key
	}
	params := &mcp.CallToolParams{Name: "ask_agent", Arguments: args}
	if token != nil {
		params.SetProgressToken(token)
	}
	res, err := c.CallTool(ctx, params)
	if err != nil {
		return nil, err
	}
	r := &askResult{isError: res.IsError}
	for _, b := range res.Content {
		if tc, ok := b.(*mcp.TextContent); ok {
			r.text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &r.out); err != nil {
			c.t.Errorf("structuredContent %s: %v", data, err)
		}
	}
	return r, nil
}

// ask is askCtx with a generous deadline; a protocol error fails the test.
func (c *mcpClient) ask(message, key string, token any) *askResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 90*time.Second)
	defer cancel()
	r, err := c.askCtx(ctx, message, key, token)
	if err != nil {
		c.t.Fatalf("ask_agent %q: %v", message, err)
	}
	return r
}

// progressFor returns the progress notifications received for token.
func (c *mcpClient) progressFor(token any) []*mcp.ProgressNotificationParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.progress[token])
}

func (c *mcpClient) elicitations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.elicited)
}

func (c *mcpClient) logMessages() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.logged)
}

// conversationStarted matches the log line of a conversation's start: its
// sessionKey and the stored session's ID.
var conversationStarted = regexp.MustCompile(`\tconversation started[^\n]*\{"sessionKey": "([^"]+)", "session": "([^"]+)"`)

// sessionOf is the ID of the stored session of the conversation key, from
// the server's log of its start.
func (p *mcpServerProc) sessionOf(key string) string {
	p.t.Helper()
	for _, m := range conversationStarted.FindAllStringSubmatch(p.stderr.String(), -1) {
		if m[1] == key {
			return m[2]
		}
	}
	p.t.Fatalf("the server logged no start of the conversation %q", key)
	return ""
}

// toolCalls formats a result's tool calls as "name:status" items.
func (r *askResult) toolCalls() []string {
	var out []string
	for _, c := range r.out.ToolCalls {
		out = append(out, c.Name+":"+c.Status)
	}
	return out
}

// TestMCPServer_DirectMode drives `acp-agent mcp-server` with no model, over
// stdio and Streamable HTTP: the one tool, slash commands reaching a default
// server of the config, progress, a refused plain message, cancelling a
// tool call mid-turn, and the end of the process with nothing left running.
func TestMCPServer_DirectMode(t *testing.T) {
	t.Parallel()
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "fixture.log")
			// slow and spawn_grandchild are not read-only: the policy
			// must allow them, as the client cannot be asked.
			cfg := mcpTestConfig(t, log, map[string]any{
				"permissions": map[string]any{"allow": []string{"mcp__fixture__slow", "mcp__fixture__spawn_grandchild"}},
			})
			p := startMCPServer(t, mode, nil, "--config", cfg, "--store", "memory")
			c := p.client
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			tools, err := c.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) != 1 || tools.Tools[0].Name != "ask_agent" || tools.Tools[0].OutputSchema == nil {
				t.Fatalf("tools/list: %+v, want only ask_agent with an output schema", tools.Tools)
			}
			schema, _ := json.Marshal(tools.Tools[0].InputSchema)
			if !strings.Contains(string(schema), `"message"`) || !strings.Contains(string(schema), `"sessionKey"`) {
				t.Errorf("input schema %s lacks message or sessionKey", schema)
			}

			r := c.ask("/tools", "", nil)
			if r.isError || !strings.Contains(r.text, "mcp__fixture__echo") || r.out.SessionKey == "" || r.out.StopReason != "end_turn" {
				t.Fatalf("/tools: %+v", r)
			}
			key := r.out.SessionKey

			r = c.ask(`/call mcp__fixture__echo {"message": "hi there"}`, key, "echo-progress")
			if r.isError || !strings.Contains(r.text, "Echo: hi there") || r.out.SessionKey != key {
				t.Errorf("/call echo: %+v", r)
			}
			if got := r.toolCalls(); !slices.Equal(got, []string{"mcp__fixture__echo:completed"}) {
				t.Errorf("tool calls %v, want the echo completed", got)
			}
			c.received.WaitFor(t, 30*time.Second, func() bool { return len(c.progressFor("echo-progress")) > 0 },
				"no progress notification for the token sent")
			waitFile(t, log, "called echo", 30*time.Second)

			r = c.ask("hello, who are you?", key, nil)
			if !r.isError || !strings.Contains(r.text, "no model is configured") {
				t.Errorf("a message without a model: %+v, want isError naming the missing model", r)
			}

			// Cancel a slow call mid-turn: the fixture gets
			// notifications/cancelled, and the conversation goes on.
			callCtx, cancelCall := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := c.askCtx(callCtx, `/call mcp__fixture__slow {"seconds": 300, "steps": 1}`, key, nil)
				done <- err
			}()
			waitFile(t, log, "called slow", 60*time.Second)
			cancelCall()
			waitCancelled(t, done)
			waitFile(t, log, "received notifications/cancelled", 60*time.Second)
			if r := c.ask(`/call mcp__fixture__echo {"message": "still here"}`, key, nil); r.isError || !strings.Contains(r.text, "Echo: still here") {
				t.Errorf("after the cancel: %+v", r)
			}

			// The end: the conversation is ended (not only its processes
			// killed by the sandbox's watchdog when mcp-server is gone),
			// and nothing it started is left: the fixture and its
			// grandchild (in its process group).
			if r := c.ask("/call mcp__fixture__spawn_grandchild {}", key, nil); r.isError {
				t.Fatalf("spawn_grandchild: %+v", r)
			}
			pids := descendants(p.cmd.Process.Pid)
			if len(pids) < 2 {
				t.Fatalf("processes under the server: %v, want the fixture and its grandchild", pids)
			}
			if !p.stop() {
				t.Errorf("mcp-server exited with %v, want status 0", p.cmd.ProcessState)
			}
			if want := map[string]string{"stdio": "client disconnected", "http": "stopping"}[mode]; !strings.Contains(p.stderr.String(), want) {
				t.Errorf("mcp-server did not log %q: it did not end the way its client ended it", want)
			}
			if id := p.sessionOf(key); !strings.Contains(p.stderr.String(), "\tsession ended\t{\"session\": \""+id+"\"") {
				t.Errorf("mcp-server exited without ending the conversation %s (session %s)", key, id)
			}
			for _, pid := range waitAllGone(pids, 30*time.Second) {
				t.Errorf("process %d (%s) outlived mcp-server", pid, cmdline(pid))
			}
		})
	}
}

// startMCPWithModel starts mcp-server with the fake OpenAI model and the
// fixture as a default server whose image tool the permissions policy
// allows (it is not read-only: without the rule it would need a question).
func startMCPWithModel(t *testing.T, mode string, fake *fakemodel.Server, extra map[string]any, args ...string) *mcpServerProc {
	t.Helper()
	return startMCPWithModelClient(t, mode, mcpClientOptions{}, fake, extra, args...)
}

// startMCPWithModelClient is startMCPWithModel with the client's options.
func startMCPWithModelClient(t *testing.T, mode string, o mcpClientOptions, fake *fakemodel.Server, extra map[string]any, args ...string) *mcpServerProc {
	t.Helper()
	if extra == nil {
		extra = map[string]any{"permissions": map[string]any{"allow": []string{"mcp__fixture__image"}}}
	}
	log := filepath.Join(t.TempDir(), "fixture.log")
	return startMCPServerClient(t, mode, o, []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + fake.URL + "/v1"},
		append([]string{"--config", mcpTestConfig(t, log, extra), "--model", "openai:gpt-fake"}, args...)...)
}

// lastModelRequest is the body of the fake model's latest request.
func lastModelRequest(t *testing.T, fake *fakemodel.Server) string {
	t.Helper()
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	return string(reqs[len(reqs)-1].Body)
}

// TestMCPServer_Model runs model turns through ask_agent over stdio and
// Streamable HTTP: a tool call of a default server with progress, continuity
// with a sessionKey, isolation between keys (over HTTP, of two clients), and
// a turn cancelled while the model streams.
func TestMCPServer_Model(t *testing.T) {
	t.Parallel()
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) {
			fake := fakemodel.NewOpenAI(t)
			p := startMCPWithModel(t, mode, fake, nil, "--store", "memory")
			c := p.client

			fake.Push(
				fakemodel.Turn{Text: "Let me look.", ToolCalls: []fakemodel.ToolCall{{ID: "call_img", Name: "mcp__fixture__image", Args: `{}`}}},
				fakemodel.Turn{Text: "It is a tiny image."},
			)
			r := c.ask("show me the picture", "", "picture")
			if r.isError || r.out.Answer != "Let me look.It is a tiny image." || r.out.StopReason != "end_turn" || !strings.Contains(r.text, "It is a tiny image.") {
				t.Fatalf("turn with a tool call: %+v", r)
			}
			if got := r.toolCalls(); !slices.Equal(got, []string{"mcp__fixture__image:completed"}) {
				t.Errorf("tool calls %v, want the fixture's image completed (allowed by the policy)", got)
			}
			// Text chunks and the tool call's start and end.
			c.received.WaitFor(t, 30*time.Second, func() bool { return len(c.progressFor("picture")) >= 3 },
				"progress notifications for the token: %d, want text chunks and the tool call", len(c.progressFor("picture")))
			keyA := r.out.SessionKey

			fake.Push(fakemodel.Turn{Text: "You asked for a picture."})
			if r := c.ask("what did I ask for?", keyA, nil); r.isError || r.out.Answer != "You asked for a picture." || r.out.SessionKey != keyA {
				t.Errorf("second turn: %+v", r)
			}
			if body := lastModelRequest(t, fake); !strings.Contains(body, "show me the picture") || !strings.Contains(body, "It is a tiny image.") {
				t.Errorf("the second model request lacks the first exchange: %s", body)
			}

			// Another conversation (over HTTP, from another client) never
			// sees the first one.
			other := c
			if mode == "http" {
				other = p.connect(mcpClientOptions{})
			}
			fake.Push(fakemodel.Turn{Text: "Fresh."}, fakemodel.Turn{Text: "Still fresh."})
			r = other.ask("a different conversation", "", nil)
			keyB := r.out.SessionKey
			if r.isError || keyB == "" || keyB == keyA {
				t.Fatalf("new conversation: %+v (first key %s)", r, keyA)
			}
			if body := lastModelRequest(t, fake); strings.Contains(body, "show me the picture") {
				t.Errorf("a new conversation's request holds the other one's history: %s", body)
			}
			other.ask("and again", keyB, nil)
			body := lastModelRequest(t, fake)
			if !strings.Contains(body, "a different conversation") || strings.Contains(body, "show me the picture") {
				t.Errorf("key B's second request: %s", body)
			}

			// Cancel while the model streams; the conversation goes on.
			fake.Push(fakemodel.Turn{Text: strings.Repeat("slowly streaming words ", 100), Delay: 200 * time.Millisecond})
			callCtx, cancelCall := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := c.askCtx(callCtx, "write a long answer", keyA, "slow")
				done <- err
			}()
			c.received.WaitFor(t, 60*time.Second, func() bool { return len(c.progressFor("slow")) > 0 }, "the slow turn never streamed")
			cancelCall()
			waitCancelled(t, done)
			fake.Push(fakemodel.Turn{Text: "Back again."})
			if r := c.ask("are you there?", keyA, nil); r.isError || r.out.Answer != "Back again." || r.out.StopReason != "end_turn" {
				t.Errorf("after the cancel: %+v", r)
			}
			if !p.stop() {
				t.Errorf("mcp-server exited with %v, want status 0", p.cmd.ProcessState)
			}
		})
	}
}

// TestMCPServer_RestartKeepsConversation: a sessionKey continues its
// conversation after the server restarts on the same store file.
func TestMCPServer_RestartKeepsConversation(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	store := filepath.Join(t.TempDir(), "sessions.db")
	p := startMCPWithModel(t, "stdio", fake, nil, "--store", store)
	fake.Push(fakemodel.Turn{Text: "I will remember it."})
	r := p.client.ask("remember the word zebra", "", nil)
	if r.isError || r.out.SessionKey == "" {
		t.Fatalf("first turn: %+v", r)
	}
	if !p.stop() {
		t.Fatalf("mcp-server exited with %v", p.cmd.ProcessState)
	}

	p = startMCPWithModel(t, "stdio", fake, nil, "--store", store)
	fake.Push(fakemodel.Turn{Text: "The word was zebra."})
	if r := p.client.ask("which word?", r.out.SessionKey, nil); r.isError || r.out.Answer != "The word was zebra." {
		t.Errorf("after the restart: %+v", r)
	}
	if body := lastModelRequest(t, fake); !strings.Contains(body, "remember the word zebra") || !strings.Contains(body, "I will remember it.") {
		t.Errorf("the request after the restart lacks the first exchange: %s", body)
	}
}

// TestMCPServer_Permissions: a tool call the policy asks about goes to a
// client with the elicitation capability as a question, and is refused,
// saying so, for a client without it.
func TestMCPServer_Permissions(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	p := startMCPWithModel(t, "stdio", fake, map[string]any{})
	imageTurn := fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "mcp__fixture__image", Args: `{}`}}}

	fake.Push(imageTurn, fakemodel.Turn{Text: "Refused, then."})
	r := p.client.ask("show me the picture", "", nil)
	if got := r.toolCalls(); !slices.Equal(got, []string{"mcp__fixture__image:failed"}) || !strings.Contains(r.text, "Refused") {
		t.Errorf("without elicitation: %+v, want the image refused and the result saying so", r)
	}

	p.stop()
	p = startMCPWithModelClient(t, "stdio", mcpClientOptions{elicit: func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}
	}}, fake, map[string]any{})
	c := p.client
	fake.Push(imageTurn, fakemodel.Turn{Text: "Here it is."})
	r = c.ask("show me the picture", "", nil)
	if got := r.toolCalls(); r.isError || !slices.Equal(got, []string{"mcp__fixture__image:completed"}) {
		t.Errorf("allowed by elicitation: %+v", r)
	}
	if q := c.elicitations(); len(q) != 1 || !strings.Contains(q[0], "mcp__fixture__image") {
		t.Errorf("elicitations %q, want one about the image", q)
	}
}

// TestMCPServer_HTTPRules checks the Streamable HTTP endpoint's guards: the
// bearer token, browser origins and the Host header on a loopback listener.
func TestMCPServer_HTTPRules(t *testing.T) {
	t.Parallel()
	p := startMCPServer(t, "http", nil, "--store", "memory", "--allowed-origins", "https://ide.example")
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	tests := []struct {
		name         string
		auth, origin string
		host         string
		want         int
	}{
		{"no token", "", "", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", "", "", http.StatusUnauthorized},
		{"token", "Bearer " + p.token, "", "", http.StatusOK},
		{"foreign origin", "Bearer " + p.token, "https://evil.example", "", http.StatusForbidden},
		{"allowed origin", "Bearer " + p.token, "https://ide.example", "", http.StatusOK},
		{"DNS rebinding", "Bearer " + p.token, "", "evil.example", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.url, strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

// TestMCPServer_StartupErrors: a bad --listen is a startup error naming the
// flag and the rule; --version prints the version on stdout.
func TestMCPServer_StartupErrors(t *testing.T) {
	t.Parallel()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", ":0"}, `--listen ":0" has no host and would bind every interface`},
		{[]string{"--listen", "0.0.0.0:0"}, `--listen "0.0.0.0:0" is not a loopback address: set a token (--token-file or ACP_AGENT_MCP_TOKEN) first`},
		{[]string{"--bogus"}, "unknown flag --bogus (see acp-agent mcp-server --help)"},
		{[]string{"--listn", "127.0.0.1:0"}, "unknown flag --listn: did you mean --listen?"},
	} {
		cmd := exec.Command(agentBin, append([]string{"mcp-server"}, tt.args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 || !strings.Contains(string(out), tt.want) {
			t.Errorf("%v: %v, output %q; want exit 1 saying %q", tt.args, err, out, tt.want)
		}
	}
	cmd := exec.Command(agentBin, "mcp-server", "--version")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "acp-agent ") {
		t.Errorf("--version: %q, %v", out, err)
	}
}

// TestMCPServer_StdioSIGTERM: SIGTERM ends the stdio server like stdin EOF
// does: its conversations ended, nothing left running, exit status 0.
func TestMCPServer_StdioSIGTERM(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "fixture.log")
	p := startMCPServer(t, "stdio", nil, "--config", mcpTestConfig(t, log, nil), "--store", "memory")
	r := p.client.ask("/tools", "", nil)
	if r.isError {
		t.Fatalf("/tools: %+v", r)
	}
	pids := descendants(p.cmd.Process.Pid)
	if len(pids) == 0 {
		t.Fatal("no fixture process is running under the server")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.stderr.WaitFor(t, 60*time.Second, func(stderr string) bool { return strings.Contains(stderr, "\tstopped") },
		"mcp-server did not stop after SIGTERM")
	if !p.stop() {
		t.Errorf("mcp-server exited with %v, want status 0", p.cmd.ProcessState)
	}
	if s := p.stderr.String(); !strings.Contains(s, "terminated") || !strings.Contains(s, "\tsession ended\t{\"session\": \""+r.out.SessionKey+"\"") {
		t.Errorf("mcp-server did not end the conversation on SIGTERM")
	}
	for _, pid := range waitAllGone(pids, 30*time.Second) {
		t.Errorf("process %d (%s) outlived mcp-server", pid, cmdline(pid))
	}
}

// waitCancelled waits for the result of a call whose context was cancelled:
// context.Canceled, within a minute.
func waitCancelled(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the cancelled call never returned")
	}
}

// TestMCPServer_ClientKeys: a sessionKey of the client's own starts its
// conversation on the first call and continues it on the next, also after a
// restart on the same store; over HTTP a conversation belongs to the bearer
// token: under another token the same key is another conversation, and the
// first token finds its own again. The store holds neither key nor token.
func TestMCPServer_ClientKeys(t *testing.T) {
	t.Parallel()
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) {
			fake := fakemodel.NewOpenAI(t)
			dir := t.TempDir()
			store := filepath.Join(dir, "sessions.db")
			tokenA, tokenB := "e2e-token-A-0123456789abcdef0123456789", "e2e-token-B-0123456789abcdef0123456789"
			const key = "user-123-conversation"
			p := startMCPWithModelClient(t, mode, mcpClientOptions{token: tokenA}, fake, nil, "--store", store)
			fake.Push(fakemodel.Turn{Text: "Noted: zebra."}, fakemodel.Turn{Text: "It was zebra."})
			if r := p.client.ask("remember the word zebra", key, nil); r.isError || r.out.SessionKey != key || r.out.Answer != "Noted: zebra." {
				t.Fatalf("first use of the key: %+v", r)
			}
			if r := p.client.ask("which word?", key, nil); r.isError || r.out.SessionKey != key {
				t.Fatalf("second call: %+v", r)
			}
			if body := lastModelRequest(t, fake); !strings.Contains(body, "remember the word zebra") || !strings.Contains(body, "Noted: zebra.") {
				t.Errorf("the second request lacks the first exchange: %s", body)
			}
			if r := p.client.ask("/help", "bad key", nil); !r.isError || !strings.Contains(r.text, "sessionKey") {
				t.Errorf("a key with a space: %+v, want an error about the sessionKey", r)
			}
			if !p.stop() {
				t.Fatalf("mcp-server exited with %v", p.cmd.ProcessState)
			}
			if mode == "http" {
				p = startMCPWithModelClient(t, mode, mcpClientOptions{token: tokenB}, fake, nil, "--store", store)
				fake.Push(fakemodel.Turn{Text: "A fresh start."})
				if r := p.client.ask("which word?", key, nil); r.isError || r.out.Answer != "A fresh start." {
					t.Fatalf("the key under another token: %+v", r)
				}
				if body := lastModelRequest(t, fake); strings.Contains(body, "zebra") {
					t.Errorf("another token's call with the key reached the first token's conversation: %s", body)
				}
				p.stop()
			}
			p = startMCPWithModelClient(t, mode, mcpClientOptions{token: tokenA}, fake, nil, "--store", store)
			fake.Push(fakemodel.Turn{Text: "Still zebra."})
			if r := p.client.ask("and after the restart?", key, nil); r.isError || r.out.Answer != "Still zebra." {
				t.Fatalf("after the restart: %+v", r)
			}
			if body := lastModelRequest(t, fake); !strings.Contains(body, "remember the word zebra") || strings.Contains(body, "A fresh start.") {
				t.Errorf("after the restart the key's request does not hold its own history: %s", body)
			}
			p.stop()
			files, _ := filepath.Glob(store + "*")
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, secret := range []string{key, tokenA, tokenB} {
					if strings.Contains(string(data), secret) {
						t.Errorf("the store file %s holds %q", f, secret)
					}
				}
			}
		})
	}
}

// TestMCPServer_Stateless: a client of protocol 2026-07-28 over --listen
// is served statelessly (server/discover, no Mcp-Session-Id): an ask_agent
// turn with progress and log messages whose tool call the policy asks
// about (an input-required result, answered by the go-sdk client's retried
// call), its conversation continued by the sessionKey, a key of the
// client's own, and a call whose HTTP request the client abandons, which
// cancels its turn.
func TestMCPServer_Stateless(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	accept := func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}
	}
	p := startMCPWithModelClient(t, "http", mcpClientOptions{version: "2026-07-28", elicit: accept, logs: true}, fake, map[string]any{}, "--store", "memory")
	c := p.client
	if v := c.InitializeResult().ProtocolVersion; v != "2026-07-28" || c.ID() != "" {
		t.Fatalf("protocol %s, session %q: want 2026-07-28 without a session", v, c.ID())
	}
	//lint:ignore SA1019 MCP logging is deprecated from 2026-07-28 but ask_agent still logs in its deprecation window.
	if caps := c.InitializeResult().Capabilities; caps.Tools == nil || caps.Tools.ListChanged || caps.Logging == nil || caps.Completions != nil {
		t.Errorf("capabilities %+v: want tools (no list changes) and logging, no completions", caps)
	}

	fake.Push(fakemodel.Turn{Text: "Let me look.", ToolCalls: []fakemodel.ToolCall{{ID: "call_img", Name: "mcp__fixture__image", Args: `{}`}}},
		fakemodel.Turn{Text: "Here it is."})
	//lint:ignore SA1019 MCP logging is deprecated from 2026-07-28 but ask_agent still logs in its deprecation window.
	params := &mcp.CallToolParams{Name: "ask_agent", Arguments: map[string]any{"message": "show me the picture"}, Meta: mcp.Meta{mcp.MetaKeyLogLevel: "info"}}
	params.SetProgressToken("picture")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		SessionKey string `json:"sessionKey"`
		ToolCalls  []struct{ Name, Status string }
	}
	data, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(data, &out)
	if res.IsError || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "completed" || out.SessionKey == "" {
		t.Fatalf("turn with a permitted tool call: %+v %s", res, data)
	}
	if q := c.elicitations(); len(q) != 1 || !strings.Contains(q[0], "mcp__fixture__image") {
		t.Errorf("questions %q, want one about the image", q)
	}
	c.received.WaitFor(t, 30*time.Second, func() bool { return len(c.progressFor("picture")) > 0 }, "no progress for the token")
	c.received.WaitFor(t, 30*time.Second, func() bool {
		return strings.Contains(strings.Join(c.logMessages(), "|"), "info map[message:tool mcp__fixture__image: started")
	}, "log messages %q: want the tool call's", c.logMessages())

	fake.Push(fakemodel.Turn{Text: "You asked for a picture."}, fakemodel.Turn{Text: "Mine."})
	if r := c.ask("what did I ask for?", out.SessionKey, nil); r.isError || r.out.Answer != "You asked for a picture." {
		t.Errorf("continued by key: %+v", r)
	}
	if body := lastModelRequest(t, fake); !strings.Contains(body, "show me the picture") {
		t.Errorf("the continued turn lacks the first: %s", body)
	}
	if r := c.ask("start mine", "my-own-key", nil); r.isError || r.out.SessionKey != "my-own-key" {
		t.Errorf("a key of the client's own: %+v", r)
	}

	// The client gives up while the model streams: its HTTP request ends,
	// and so does the turn.
	fake.Push(fakemodel.Turn{Text: strings.Repeat("slowly streaming words ", 100), Delay: 200 * time.Millisecond})
	callCtx, cancelCall := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.askCtx(callCtx, "write a long answer", "my-own-key", "slow")
		done <- err
	}()
	c.received.WaitFor(t, 60*time.Second, func() bool { return len(c.progressFor("slow")) > 0 }, "the slow turn never streamed")
	cancelCall()
	waitCancelled(t, done)
	p.stderr.WaitFor(t, 30*time.Second, func(stderr string) bool { return strings.Contains(stderr, "ask_agent cancelled by the client") },
		"the server did not cancel the abandoned turn")
	fake.Push(fakemodel.Turn{Text: "Back again."})
	if r := c.ask("are you there?", "my-own-key", nil); r.isError || r.out.Answer != "Back again." {
		t.Errorf("after the cancel: %+v", r)
	}
	if strings.Contains(p.stderr.String(), "rejecting request with protocol version") {
		t.Error("the server refused a 2026-07-28 request")
	}
}
