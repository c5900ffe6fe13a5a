package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/mcpserver"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// wait bounds every wait of these tests (a loaded 2-core machine).
const wait = 30 * time.Second

// kit is the in-process MCP server of the tests' sessions: echo
// (read-only), touch (needs permission under the "ask" policy) and slow
// (blocks until cancelled).
type kit struct {
	touched     atomic.Int32
	slowStarted chan struct{} // closed when slow starts
	slowEnded   chan struct{} // closed when slow's context is cancelled
	once        sync.Once
}

func newKit() *kit { return &kit{slowStarted: make(chan struct{}), slowEnded: make(chan struct{})} }

type textArgs struct {
	Text string `json:"text"`
}

func (k *kit) server(session.InProcessEnv) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "kit", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text", Annotations: ro},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "Change something"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			k.touched.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Block until cancelled", Annotations: ro},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			k.once.Do(func() { close(k.slowStarted) })
			<-ctx.Done()
			close(k.slowEnded)
			return nil, nil, ctx.Err()
		})
	return s
}

// setup describes a test server.
type setup struct {
	fake  *fakemodel.Server // nil: no model (direct mode)
	store store.Store       // nil: a memory store
	ask   bool              // permissions policy "ask" (else "allow")
	idle  time.Duration
	kit   *kit
	// gateway, if set, wraps the runner's gateway (a fault injected).
	gateway func(gateway.Gateway) gateway.Gateway
	// servers are the default MCP servers of every conversation.
	servers []bridge.ServerSpec
	// cwd is the server's directory ("": a new temporary one); a server
	// restarted on a store continues its conversations in the same one.
	cwd string
}

// env is a running server and its core.
type env struct {
	t        *testing.T
	core     *session.Core
	srv      *mcp.Server
	shutdown func()
	kit      *kit
}

func start(t *testing.T, st setup) *env {
	t.Helper()
	if st.store == nil {
		st.store = memory.New()
	}
	if st.kit == nil {
		st.kit = newKit()
	}
	history := session.NewHistory(st.store, nil)
	ro := &runner.Options{History: history, Permissions: runner.Permissions{Mode: runner.PermissionAllow}}
	if st.ask {
		ro.Permissions.Mode = runner.PermissionAsk
	}
	if st.fake != nil {
		ro.Models = []gateway.Model{{ID: "openai:gpt-fake", Label: "fake", Provider: openai.New(&provider.Options{
			Model: "gpt-fake", APIKey: "test-key", BaseURL: st.fake.URL + "/v1", MaxRetries: -1,
		})}}
	}
	var gw gateway.Gateway = runner.NewLocal(ro)
	if st.gateway != nil {
		gw = st.gateway(gw)
	}
	core := session.NewCore(&session.CoreOptions{
		Gateway: gw, Store: st.store, History: history, DefaultServers: st.servers,
		InProcess: []session.InProcessServer{{Name: "kit", New: st.kit.server}},
	})

	if st.cwd == "" {
		st.cwd = t.TempDir()
	}
	srv, shutdown := mcpserver.New(core, &mcpserver.Options{Cwd: st.cwd, IdleTimeout: st.idle})
	e := &env{t: t, core: core, srv: srv, shutdown: shutdown, kit: st.kit}
	t.Cleanup(func() {
		shutdown()
		core.Shutdown()
	})
	return e
}

// connect connects a client over in-memory transports, on the latest
// protocol version.
func (e *env) connect(opts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	return e.connectVersion(opts, "")
}

// connectVersion connects a client asking for protocol version ("" means
// the latest).
func (e *env) connectVersion(opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	e.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ss, err := e.srv.Connect(ctx, st, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// result is an ask_agent result with its structured content decoded.
type result struct {
	*mcp.CallToolResult
	text string
	out  mcpserver.Output
}

// askWith calls ask_agent with params (arguments and _meta).
func askWith(t *testing.T, ctx context.Context, cs *mcp.ClientSession, params *mcp.CallToolParams) result {
	t.Helper()
	params.Name = mcpserver.ToolName
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("ask_agent %v: %v", params.Arguments, err)
	}
	r := result{CallToolResult: res}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			r.text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &r.out); err != nil {
			t.Fatalf("structuredContent %s: %v", data, err)
		}
	}
	return r
}

func ask(t *testing.T, cs *mcp.ClientSession, message, key string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	args := map[string]any{"message": message}
	if key != "" {
		args["sessionKey"] = key
	}
	return askWith(t, ctx, cs, &mcp.CallToolParams{Arguments: args})
}

// ok fails the test unless r is a success.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.IsError {
		t.Fatalf("ask_agent failed: %s", r.text)
	}
	return r
}

func TestListTools_SchemaAndOutputSchema(t *testing.T) {
	e := start(t, setup{})
	cs := e.connect(nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "ask_agent" {
		t.Fatalf("tools = %+v, want ask_agent alone", res.Tools)
	}
	tool := res.Tools[0]
	in, _ := json.Marshal(tool.InputSchema)
	var inSchema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	_ = json.Unmarshal(in, &inSchema)
	if inSchema.Properties["message"] == nil || inSchema.Properties["sessionKey"] == nil || strings.Join(inSchema.Required, ",") != "message" {
		t.Errorf("input schema %s: want message (required) and sessionKey", in)
	}
	out, _ := json.Marshal(tool.OutputSchema)
	var outSchema struct {
		Properties map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(out, &outSchema)
	for _, p := range []string{"answer", "sessionKey", "stopReason", "toolCalls"} {
		if outSchema.Properties[p] == nil {
			t.Errorf("output schema %s: no property %q", out, p)
		}
	}
}

func TestDirect_SlashCommands(t *testing.T) {
	e := start(t, setup{})
	cs := e.connect(nil)

	r := ask(t, cs, "/tools", "").ok(t)
	if !strings.Contains(r.text, "mcp__kit__echo") || r.out.Answer != r.text {
		t.Errorf("/tools answered %q (structured %q), want mcp__kit__echo listed", r.text, r.out.Answer)
	}
	if !strings.HasPrefix(r.out.SessionKey, "sess_") || len(r.out.SessionKey) != len("sess_")+26 || r.out.StopReason != "end_turn" {
		t.Errorf("structured content %+v: want a sess_ key and end_turn", r.out)
	}

	r = ask(t, cs, `/call mcp__kit__echo {"text":"hi there"}`, r.out.SessionKey).ok(t)
	if !strings.Contains(r.text, "echo: hi there") {
		t.Errorf("/call answered %q, want the tool's result", r.text)
	}
	if len(r.out.ToolCalls) != 1 || r.out.ToolCalls[0] != (mcpserver.ToolCall{Name: "mcp__kit__echo", Status: "completed"}) {
		t.Errorf("toolCalls = %+v, want mcp__kit__echo completed", r.out.ToolCalls)
	}

	r = ask(t, cs, "/servers", r.out.SessionKey).ok(t)
	if !strings.Contains(r.text, "- kit: connected (inprocess, 3 tools") {
		t.Errorf("/servers answered %q, want the kit server connected", r.text)
	}
}

func TestDirect_MessageWithoutModelIsError(t *testing.T) {
	e := start(t, setup{})
	cs := e.connect(nil)
	r := ask(t, cs, "please fix the bug", "")
	if !r.IsError || !strings.Contains(r.text, "no model is configured") || !strings.Contains(r.text, "--model") || !strings.Contains(r.text, "/help") {
		t.Errorf("result %+v %q: want isError saying no model is configured, how to configure one and the commands", r.IsError, r.text)
	}
	key := ask(t, cs, "/help", "").ok(t).out.SessionKey
	if r := ask(t, cs, "and now?", key); !r.IsError || !strings.Contains(r.text, "no model is configured") {
		t.Errorf("continued conversation: result %v %q, want the same error", r.IsError, r.text)
	}
	// A key of the client's own, first used with a message: refused before
	// its conversation is stored.
	before, _, _ := e.core.Store().List(context.Background(), store.ListOptions{})
	if r := ask(t, cs, "please fix the bug", "user-123-conversation"); !r.IsError || !strings.Contains(r.text, "no model is configured") {
		t.Errorf("a new key of the client's: result %v %q, want the same error", r.IsError, r.text)
	}
	if after, _, _ := e.core.Store().List(context.Background(), store.ListOptions{}); len(after) != len(before) {
		t.Errorf("%d stored sessions after the refused call, want %d", len(after), len(before))
	}
}

// requestText is the text of a recorded model request's messages.
func requestText(t *testing.T, rec fakemodel.Recorded) string {
	t.Helper()
	data, _ := json.Marshal(rec.JSON["messages"])
	return string(data)
}

func TestModel_AnswerAndContinuedConversation(t *testing.T) {
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "The capital is Paris."}, fakemodel.Turn{Text: "About two million people."})
	e := start(t, setup{fake: fake})
	cs := e.connect(nil)

	r := ask(t, cs, "What is the capital of France?", "").ok(t)
	if r.text != "The capital is Paris." || r.out.Answer != r.text || r.out.StopReason != "end_turn" || len(r.out.ToolCalls) != 0 {
		t.Fatalf("first answer %q, structured %+v", r.text, r.out)
	}
	r2 := ask(t, cs, "How many people live there?", r.out.SessionKey).ok(t)
	if r2.text != "About two million people." || r2.out.SessionKey != r.out.SessionKey {
		t.Fatalf("second answer %q, structured %+v", r2.text, r2.out)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	second := requestText(t, reqs[1])
	for _, want := range []string{"What is the capital of France?", "The capital is Paris.", "How many people live there?"} {
		if !strings.Contains(second, want) {
			t.Errorf("second model request %s: missing %q", second, want)
		}
	}
	sys, _ := json.Marshal(reqs[0].JSON["messages"])
	if !strings.Contains(string(sys), "MCP tool") {
		t.Errorf("first request %s: want the MCP front end's system prompt", sys)
	}
}

func TestModel_KeysAreIsolated(t *testing.T) {
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "A1"}, fakemodel.Turn{Text: "B1"}, fakemodel.Turn{Text: "B2"})
	e := start(t, setup{fake: fake})
	a := ask(t, e.connect(nil), "secret of client A", "").ok(t)
	csB := e.connect(nil)
	b := ask(t, csB, "question of client B", "").ok(t)
	if a.out.SessionKey == b.out.SessionKey {
		t.Fatalf("two conversations share the key %q", a.out.SessionKey)
	}
	ask(t, csB, "follow-up of B", b.out.SessionKey).ok(t)
	third := requestText(t, fake.Requests()[2])
	if strings.Contains(third, "secret of client A") || strings.Contains(third, "A1") {
		t.Errorf("B's follow-up request holds A's conversation: %s", third)
	}
	if !strings.Contains(third, "question of client B") || !strings.Contains(third, "B1") {
		t.Errorf("B's follow-up request lacks B's history: %s", third)
	}
}

func TestModel_ReopenFromSQLiteAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	ctx := context.Background()
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "Noted: the code word is tangerine."}, fakemodel.Turn{Text: "It was tangerine."})

	store1, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	e1 := start(t, setup{fake: fake, store: store1, cwd: cwd})
	key := ask(t, e1.connect(nil), "Remember the code word tangerine.", "").ok(t).out.SessionKey
	e1.shutdown()
	e1.core.Shutdown()
	if err := store1.Close(); err != nil {
		t.Fatal(err)
	}

	store2, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store2.Close() })
	e2 := start(t, setup{fake: fake, store: store2, cwd: cwd})
	r := ask(t, e2.connect(nil), "What was the code word?", key).ok(t)
	if r.out.SessionKey != key {
		t.Errorf("sessionKey %q after the reopen, want %q", r.out.SessionKey, key)
	}
	second := requestText(t, fake.Requests()[1])
	if !strings.Contains(second, "Remember the code word tangerine.") || !strings.Contains(second, "Noted: the code word is tangerine.") {
		t.Errorf("the request after the restart lacks the first exchange: %s", second)
	}
}

func TestModel_ProgressNotifications(t *testing.T) {
	fake := fakemodel.NewOpenAI(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "mcp__kit__echo", Args: `{"text":"x"}`}}},
		fakemodel.Turn{Text: "All done: the echo worked fine."},
	)
	e := start(t, setup{fake: fake})
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	var progressed testutil.Signal // notified after each notification
	cs := e.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, req.Params)
		mu.Unlock()
		progressed.Notify()
	}})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	params := &mcp.CallToolParams{Arguments: map[string]any{"message": "echo x"}}
	params.SetProgressToken("tok-1")
	r := askWith(t, ctx, cs, params).ok(t)
	if len(r.out.ToolCalls) != 1 || r.out.ToolCalls[0].Status != "completed" {
		t.Errorf("toolCalls %+v", r.out.ToolCalls)
	}
	// Notifications are sent before the result; the client handles them in
	// order, but maybe after CallTool returns.
	want := []string{"tool mcp__kit__echo: started", "tool mcp__kit__echo: completed"}
	var msgs []string
	increasing := true
	if !progressed.Await(wait, func() bool {
		mu.Lock()
		msgs = nil
		text := ""
		last := 0.0
		increasing = true
		for _, p := range got {
			msgs = append(msgs, p.Message)
			if p.ProgressToken != "tok-1" || p.Progress <= last {
				increasing = false
			}
			last = p.Progress
			if !strings.HasPrefix(p.Message, "tool ") {
				text += p.Message
			}
		}
		mu.Unlock()
		all := strings.Join(msgs, "|")
		return text == r.text && strings.Contains(all, want[0]+"|") && strings.Contains(all, want[1])
	}) {
		t.Fatalf("progress messages %q: want %q and the answer's text %q", msgs, want, r.text)
	}
	if !increasing {
		t.Errorf("progress not counting up with token tok-1: %+v", got)
	}
	if len(msgs) < 4 {
		t.Errorf("progress %q: want several text chunks", msgs)
	}
}

// captureResults records the ask_agent results the server sends, even
// those a client that gave up never reads.
func (e *env) captureResults() <-chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, 10)
	e.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.CallToolResult); ok && method == "tools/call" {
				out <- r
			}
			return res, err
		}
	})
	return out
}

// TestModel_CancelMidTurn: notifications/cancelled (the client's context
// ends) cancels the turn, whether it waits for the model or for a tool call
// (which is cancelled too); the result says so, and the conversation goes
// on.
func TestModel_CancelMidTurn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first fakemodel.Turn
	}{
		{"tool call", fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "mcp__kit__slow"}}}},
		{"stalled model", fakemodel.Turn{Text: "Let me think about it at length", Hang: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakemodel.NewOpenAI(t, tc.first, fakemodel.Turn{Text: "Next turn."})
			e := start(t, setup{fake: fake})
			results := e.captureResults()
			started := make(chan struct{}, 100)
			cs := e.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
				started <- struct{}{}
			}})
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				params := &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"message": "take your time"}}
				params.SetProgressToken(1)
				_, err := cs.CallTool(ctx, params)
				errc <- err
			}()
			if tc.first.Hang {
				// The model request is under way (it never ends).
				if !fake.AwaitRequests(wait, 1) {
					t.Fatalf("the model was never asked (waited %v)", wait)
				}
			} else {
				select {
				case <-started: // the tool call's start
				case <-time.After(wait):
					t.Fatal("the turn never started")
				}
				select {
				case <-e.kit.slowStarted:
				case <-time.After(wait):
					t.Fatal("the slow tool never started")
				}
			}
			cancel() // the client sends notifications/cancelled
			if !tc.first.Hang {
				select {
				case <-e.kit.slowEnded:
				case <-time.After(wait):
					t.Fatal("cancelling ask_agent did not cancel the tool call in flight")
				}
			}
			if err := <-errc; err == nil {
				t.Error("the cancelled CallTool returned no error")
			}
			select {
			case res := <-results:
				text := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
				data, _ := json.Marshal(res.StructuredContent)
				if !res.IsError || !strings.Contains(text, "the turn was cancelled") || !strings.Contains(string(data), `"stopReason":"cancelled"`) {
					t.Errorf("result %v %q %s: want isError saying the turn was cancelled", res.IsError, text, data)
				}
			case <-time.After(wait):
				t.Fatal("no result for the cancelled call")
			}
			// The conversation goes on.
			keys := e.liveKeys(t)
			if len(keys) != 1 {
				t.Fatalf("conversations %v, want 1", keys)
			}
			if r := ask(t, cs, "and now?", keys[0]).ok(t); r.text != "Next turn." {
				t.Errorf("next turn answered %q", r.text)
			}
		})
	}
}

// liveKeys are the IDs of the core's stored sessions.
func (e *env) liveKeys(t *testing.T) []string {
	t.Helper()
	recs, _, err := e.core.Store().List(context.Background(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestModel_SameKeyConcurrentCallsTakeTurns: two calls with one key at once
// share one reopened session and run one turn after the other: the second
// model request holds the whole first exchange.
func TestModel_SameKeyConcurrentCallsTakeTurns(t *testing.T) {
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "first answer, slowly", Delay: 20 * time.Millisecond}, fakemodel.Turn{Text: "second answer"})
	e := start(t, setup{fake: fake})
	cs := e.connect(nil)
	key := ask(t, cs, "/help", "").ok(t).out.SessionKey
	e.core.Close(key) // ended under the server: both calls reopen it, once
	var wg sync.WaitGroup
	for _, m := range []string{"question one", "question two"} {
		wg.Go(func() { ask(t, cs, m, key).ok(t) })
	}
	wg.Wait()
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	// Whichever question came first got the first scripted answer.
	second := requestText(t, reqs[1])
	if !strings.Contains(second, "question one") || !strings.Contains(second, "question two") || !strings.Contains(second, "first answer, slowly") {
		t.Errorf("the second request does not hold the first exchange: %s", second)
	}
}

// TestModel_ProviderErrorIsError: a failing provider makes an isError
// result naming the failure, with the key to continue; the conversation
// goes on.
func TestModel_ProviderErrorIsError(t *testing.T) {
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Status: 401, Text: "invalid api key for the fake"}, fakemodel.Turn{Text: "Recovered."})
	e := start(t, setup{fake: fake})
	cs := e.connect(nil)
	r := ask(t, cs, "hello", "")
	const failed = `ask_agent: the turn failed: openai: HTTP 401 Unauthorized: invalid api key for the fake (set OPENAI_API_KEY to a valid API key, or run "acp-agent login")`
	if !r.IsError || !strings.Contains(r.text, failed) || !strings.HasPrefix(r.out.SessionKey, "sess_") {
		t.Fatalf("result %v %q %+v: want isError naming the provider's failure, and the key", r.IsError, r.text, r.out)
	}
	if r2 := ask(t, cs, "again", r.out.SessionKey).ok(t); r2.text != "Recovered." {
		t.Errorf("next turn answered %q", r2.text)
	}
}

// TestModel_FailedTurnIsError: a turn that fails with an error that knows
// its remedy (a lost lease) is an isError result saying what happened and
// what to do.
func TestModel_FailedTurnIsError(t *testing.T) {
	e := start(t, setup{gateway: func(gw gateway.Gateway) gateway.Gateway { return lostGateway{gw} }})
	r := ask(t, e.connect(nil), "hello", "")
	want := "ask_agent: the turn failed: the lease of session s1 was lost (the connection to the session store that holds it broke): the turn was stopped; send the prompt again: it runs once the session store can be reached"
	if !r.IsError || r.text != want {
		t.Fatalf("result %v %q\nwant isError %q", r.IsError, r.text, want)
	}
}

// lostGateway is a gateway with a model whose turns are cut by a lost
// lease.
type lostGateway struct{ gateway.Gateway }

func (lostGateway) Models() []gateway.ModelInfo {
	return []gateway.ModelInfo{{ID: "remote:m", Label: "m"}}
}

func (lostGateway) Send(context.Context, gateway.SendRequest, func(gateway.Event)) (gateway.StopReason, error) {
	return "", &session.LeaseLostError{ID: "s1"}
}

// TestOpen_ServerNamedLikeAnInProcessOneIsError: a default server with the
// name of an in-process server fails the call, saying what to do.
func TestOpen_ServerNamedLikeAnInProcessOneIsError(t *testing.T) {
	e := start(t, setup{servers: []bridge.ServerSpec{{Name: "kit", Transport: bridge.TransportStdio, Command: "x"}}})
	r := ask(t, e.connect(nil), "/help", "")
	want := `ask_agent: opening a new conversation: mcpServers: server name "kit" is taken by an in-process server of the agent; choose another name`
	if !r.IsError || r.text != want {
		t.Fatalf("result %v %q\nwant isError %q", r.IsError, r.text, want)
	}
}

// brokenStore is a memory store whose file, were it one, fails: AppendTurn
// with appendErr, Get with getErr (when set).
type brokenStore struct {
	store.Store
	appendErr, getErr error
}

func (s *brokenStore) AppendTurn(ctx context.Context, id string, t store.Turn) error {
	if s.appendErr != nil {
		return s.appendErr
	}
	return s.Store.AppendTurn(ctx, id, t)
}

func (s *brokenStore) Get(ctx context.Context, id string) (store.Record, error) {
	if s.getErr != nil {
		return store.Record{}, s.getErr
	}
	return s.Store.Get(ctx, id)
}

// TestStore_FileErrorsSayWhatToDo: a store's file that cannot grow or is
// damaged fails the call with the store's error and what to do about it
// (the words of its remedy, shown by gateway.ErrorText).
func TestStore_FileErrorsSayWhatToDo(t *testing.T) {
	st := &brokenStore{Store: memory.New(), appendErr: &store.FileError{Path: "/state/sessions.db", Err: fmt.Errorf("%w: %w", errors.New("disk I/O error (778)"), store.ErrFull)}}
	e := start(t, setup{store: st})
	cs := e.connect(nil)
	r := ask(t, cs, "/help", "")
	want := "ask_agent: the turn failed: the turn could not be stored, so the conversation goes on without it: session store /state/sessions.db: disk I/O error (778): the disk may be full or the file not allowed to grow; once there is room, writes succeed again"
	if !r.IsError || !strings.HasSuffix(r.text, want) {
		t.Fatalf("turn on a full disk: result %v %q\nwant isError ending %q", r.IsError, r.text, want)
	}

	st.appendErr = nil
	key := ask(t, cs, "/help", "").ok(t).out.SessionKey
	// Another server over the same store reopens the conversation from it.
	e2 := start(t, setup{store: &brokenStore{Store: st.Store, getErr: &store.FileError{Path: "/state/sessions.db", Err: fmt.Errorf("%w (%w)", store.ErrDamaged, errors.New("database disk image is malformed (11)"))}}})
	r = ask(t, e2.connect(nil), "/help", key)
	want = fmt.Sprintf("ask_agent: sessionKey %q: reopening the conversation: reading the session store: session store /state/sessions.db: the database is damaged (database disk image is malformed (11)): move the file away (or restore it from a backup) and start acp-agent again, which creates a new empty store", key)
	if !r.IsError || r.text != want {
		t.Fatalf("reopening from a damaged store: result %v %q\nwant isError %q", r.IsError, r.text, want)
	}
}
