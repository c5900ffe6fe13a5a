package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/mcpserver"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

func TestCheckKey(t *testing.T) {
	for _, key := range []string{"user-123-conversation", "a", "sess_0123", strings.Repeat("k", mcpserver.MaxKeyLength), `!"#$%&'()*+,-./:;<=>?@[\]^_{|}~` + "`"} {
		if err := mcpserver.CheckKey(key); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", key, err)
		}
	}
	for key, want := range map[string]string{
		"":                       "has 0 characters: a sessionKey has 1 to 128",
		strings.Repeat("k", 129): "has 129 characters",
		"two words":              `the character ' ' at byte 3`,
		"tab\there":              `the character '\t'`,
		"ünï":                    "only visible ASCII characters",
		"line\n":                 `'\n'`,
	} {
		if err := mcpserver.CheckKey(key); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckKey(%q) = %v, want an error saying %q", key, err, want)
		}
	}
}

// TestClientKey_FirstUseStartsTheConversation: a key of the client's own
// starts a conversation on its first use (stored under a digest of the
// key, not the key) and continues it on the next, with its history; the
// result gives the key back.
func TestClientKey_FirstUseStartsTheConversation(t *testing.T) {
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "Hello, I am listening."}, fakemodel.Turn{Text: "You said the sky is green."})
	e := start(t, setup{fake: fake})
	cs := e.connect(nil)
	const key = "user-123-conversation"
	r := ask(t, cs, "The sky is green.", key).ok(t)
	if r.out.SessionKey != key || r.text != "Hello, I am listening." {
		t.Fatalf("first use: %q %+v; want the answer and the key back", r.text, r.out)
	}
	ids := e.liveKeys(t)
	if len(ids) != 1 || !strings.HasPrefix(ids[0], "mcp_") || strings.Contains(ids[0], key) {
		t.Fatalf("stored sessions %q: want one, under a digest of the key", ids)
	}
	r = ask(t, cs, "What did I say?", key).ok(t)
	if r.out.SessionKey != key {
		t.Errorf("second call: sessionKey %q", r.out.SessionKey)
	}
	if second := requestText(t, fake.Requests()[1]); !strings.Contains(second, "The sky is green.") || !strings.Contains(second, "Hello, I am listening.") {
		t.Errorf("the second request lacks the first exchange: %s", second)
	}
	if ids := e.liveKeys(t); len(ids) != 1 {
		t.Errorf("stored sessions %q after the second call: want still one", ids)
	}
	// Direct mode works under a key too: a command starts it.
	if r := ask(t, cs, "/help", "another-key").ok(t); r.out.SessionKey != "another-key" || !strings.Contains(r.text, "/tools") {
		t.Errorf("/help under a new key: %q %+v", r.text, r.out)
	}
}

// TestClientKey_Invalid: a key outside the rules is an error naming them
// (the input schema's), and starts nothing.
func TestClientKey_Invalid(t *testing.T) {
	e := start(t, setup{})
	cs := e.connect(nil)
	for _, key := range []string{"two words", strings.Repeat("k", 129), "ünï"} {
		r := ask(t, cs, "/help", key)
		if !r.IsError || !strings.Contains(r.text, "sessionKey") {
			t.Errorf("key %q: %v %q, want an error about the sessionKey", key, r.IsError, r.text)
		}
	}
	if ids := e.liveKeys(t); len(ids) != 0 {
		t.Errorf("stored sessions %q: want none", ids)
	}
}

// TestClientKey_SurvivesRestart: a conversation under a key of the
// client's own is reopened from the store by a new server.
func TestClientKey_SurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	ctx := context.Background()
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "Noted: tangerine."}, fakemodel.Turn{Text: "It was tangerine."})
	st1, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	e1 := start(t, setup{fake: fake, store: st1, cwd: cwd})
	ask(t, e1.connect(nil), "Remember tangerine.", "project-x").ok(t)
	e1.shutdown()
	e1.core.Shutdown()
	if err := st1.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st2.Close() })
	e2 := start(t, setup{fake: fake, store: st2, cwd: cwd})
	ask(t, e2.connect(nil), "Which word?", "project-x").ok(t)
	if second := requestText(t, fake.Requests()[1]); !strings.Contains(second, "Remember tangerine.") {
		t.Errorf("the request after the restart lacks the first exchange: %s", second)
	}
}

// bearer adds a bearer token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// serveHTTP serves e's server over Streamable HTTP (stateless: every
// request at 2026-07-28 on its own, stateful otherwise) behind a bearer
// token check whose tokens name their clients (auth.TokenInfo.UserID), and
// returns the endpoint.
func (e *env) serveHTTP(stateless bool, clients map[string]string) string {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.srv }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if id, ok := clients[token]; ok {
			return &auth.TokenInfo{UserID: id}, nil
		}
		return nil, auth.ErrInvalidToken
	}
	ts := httptest.NewServer(auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h))
	e.t.Cleanup(ts.Close)
	return ts.URL
}

// connectHTTP connects a client with token to url at protocol version.
func (e *env) connectHTTP(url, token, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer(token)}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestClientKey_IsolatedPerClient: over HTTP, where the bearer token names
// the client, the same key from two clients names two conversations, a key
// issued to one client is no way into its conversation for another (it
// starts the other's own), and one client cannot answer the permission
// question of another's turn; on both wires.
func TestClientKey_IsolatedPerClient(t *testing.T) {
	for _, wire := range []struct {
		name      string
		stateless bool
		version   string
	}{{"stateful", false, "2025-11-25"}, {"stateless", true, "2026-07-28"}} {
		t.Run(wire.name, func(t *testing.T) {
			fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "A1"}, fakemodel.Turn{Text: "B1"}, fakemodel.Turn{Text: "B2"}, fakemodel.Turn{Text: "B3"})
			e := start(t, setup{fake: fake})
			url := e.serveHTTP(wire.stateless, map[string]string{"token-a": "client-a", "token-b": "client-b"})
			a := e.connectHTTP(url, "token-a", wire.version, nil)
			b := e.connectHTTP(url, "token-b", wire.version, nil)
			if got := a.InitializeResult().ProtocolVersion; got != wire.version {
				t.Fatalf("protocol %s, want %s", got, wire.version)
			}
			issued := ask(t, a, "secret of client A", "").ok(t).out.SessionKey
			ask(t, a, "/help", "shared-name").ok(t)

			ask(t, b, "question of B", "shared-name").ok(t)
			if req := requestText(t, fake.Requests()[1]); strings.Contains(req, "secret of client A") || strings.Contains(req, "/help") {
				t.Errorf("B's conversation under A's key name holds A's history: %s", req)
			}
			ask(t, b, "follow-up of B", "shared-name").ok(t)
			if req := requestText(t, fake.Requests()[2]); !strings.Contains(req, "question of B") {
				t.Errorf("B's conversation lost its own history: %s", req)
			}
			r := ask(t, b, "B with A's key", issued).ok(t)
			if req := requestText(t, fake.Requests()[3]); strings.Contains(req, "secret of client A") || r.out.SessionKey != issued {
				t.Errorf("B reached A's conversation with A's issued key: %s", req)
			}
			// A's issued key, A's "shared-name", B's "shared-name" and B's
			// use of A's key: four conversations.
			if ids := e.liveKeys(t); len(ids) != 4 {
				t.Errorf("stored sessions %q, want 4", ids)
			}
		})
	}
}

// TestClientKey_PermissionAnswerIsTheClients: a requestState (multi round
// trip) issued to one client's call is refused to another client, and the
// turn still waits for its own client's answer.
func TestClientKey_PermissionAnswerIsTheClients(t *testing.T) {
	e := start(t, setup{ask: true})
	url := e.serveHTTP(true, map[string]string{"token-a": "client-a", "token-b": "client-b"})
	manual := &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}, nil
		},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // the test retries
	}
	a := e.connectHTTP(url, "token-a", "2026-07-28", manual)
	b := e.connectHTTP(url, "token-b", "2026-07-28", manual)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	params := &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"message": "/call mcp__kit__touch {}", "sessionKey": "k"}}
	res, err := a.CallTool(ctx, params)
	if err != nil || !res.NeedsInput() {
		t.Fatalf("A's call: %+v %v; want an input request", res, err)
	}
	retry := *params
	retry.RequestState = res.RequestState
	retry.InputResponses = mcp.InputResponseMap{}
	for id := range res.InputRequests {
		retry.InputResponses[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}
	}
	other := retry
	res, err = b.CallTool(ctx, &other)
	if err != nil || !res.IsError || !strings.Contains(fmt.Sprint(res.Content[0].(*mcp.TextContent).Text), "no turn is waiting for it") {
		t.Fatalf("B answering A's question: %+v %v; want an error", res, err)
	}
	if e.kit.touched.Load() != 0 {
		t.Fatal("the tool ran on B's answer")
	}
	res, err = a.CallTool(ctx, &retry)
	if err != nil || res.IsError || res.NeedsInput() || e.kit.touched.Load() != 1 {
		t.Fatalf("A's own answer: %+v %v, %d runs; want the tool run once", res, err, e.kit.touched.Load())
	}
}
