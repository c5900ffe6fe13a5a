package acp

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// fakeSignIn is a SignIn whose key comes and goes with the test.
type fakeSignIn struct {
	mu      sync.Mutex
	haveKey bool
	logouts int
}

func (f *fakeSignIn) signIn() *SignIn {
	return &SignIn{
		MethodID: "acp-agent-login", Name: "Sign in with a model API key", Args: []string{"login"}, Command: "/opt/bin/acp-agent",
		Check: func() error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !f.haveKey {
				return errors.New(`no API key: set ANTHROPIC_API_KEY or run "acp-agent login"`)
			}
			return nil
		},
		Logout: func() error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.logouts++
			f.haveKey = false
			return nil
		},
		Notice: func() string {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.haveKey {
				return ""
			}
			return `The model anthropic:claude-x has no API key: set ANTHROPIC_API_KEY in the environment acp-agent starts with, or run "acp-agent login" to store one.`
		},
	}
}

func TestAgent_InitializeAdvertisesTerminalSignIn(t *testing.T) {
	f := &fakeSignIn{}
	h := startAgentWith(t, testOptions{SignIn: f.signIn()})
	res, err := h.conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{Auth: acpsdk.AuthCapabilities{Terminal: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AuthMethods) != 1 || res.AuthMethods[0].Terminal == nil {
		t.Fatalf("authMethods = %+v, want one terminal method", res.AuthMethods)
	}
	raw, _ := json.Marshal(res.AuthMethods[0])
	for _, want := range []string{`"type":"terminal"`, `"id":"acp-agent-login"`, `"args":["login"]`, `"command":"/opt/bin/acp-agent"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("auth method %s lacks %s", raw, want)
		}
	}
	if res.AgentCapabilities.Auth.Logout == nil {
		t.Error("agentCapabilities.auth.logout is not advertised")
	}
	// A client that cannot run terminal methods is offered none (ACP: only
	// when the client enabled the capability).
	res, err = h.conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber})
	if err != nil || len(res.AuthMethods) != 0 {
		t.Errorf("without auth.terminal: authMethods = %+v, %v; want none", res.AuthMethods, err)
	}
	// The _meta convention that predates the type counts too, but such a
	// client gets an agent method (no type) with the command in its _meta:
	// the schema allows a "terminal" method only to auth.terminal clients.
	res, err = h.conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{Meta: map[string]any{"terminal-auth": true}}})
	if err != nil || len(res.AuthMethods) != 1 || res.AuthMethods[0].Agent == nil {
		t.Fatalf("with _meta terminal-auth: authMethods = %+v, %v; want the method, of type agent", res.AuthMethods, err)
	}
	raw, _ = json.Marshal(res.AuthMethods[0])
	if strings.Contains(string(raw), `"type"`) || !strings.Contains(string(raw), `"terminal-auth":{"args":["login"],"command":"/opt/bin/acp-agent","label"`) {
		t.Errorf("the legacy method %s: want no type and _meta terminal-auth with the command", raw)
	}
}

func TestAgent_AuthenticateAndLogout(t *testing.T) {
	f := &fakeSignIn{}
	h := startAgentWith(t, testOptions{SignIn: f.signIn()})
	// Offered to no client (the harness's initialize enabled no terminal
	// methods), the method is not an advertised one.
	_, err := h.conn.Authenticate(t.Context(), acpsdk.AuthenticateRequest{MethodId: "acp-agent-login"})
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(jsonText(re.Data), "not an auth method initialize advertised") {
		t.Fatalf("authenticate of a method not offered = %v, want invalid_params", err)
	}
	// Offered as a "terminal" method, the client runs it and must not pass
	// it to authenticate.
	if _, err := h.conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{Auth: acpsdk.AuthCapabilities{Terminal: true}}}); err != nil {
		t.Fatal(err)
	}
	_, err = h.conn.Authenticate(t.Context(), acpsdk.AuthenticateRequest{MethodId: "acp-agent-login"})
	if !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(jsonText(re.Data), "must not pass it to authenticate") {
		t.Fatalf("authenticate of a terminal method = %v, want invalid_params saying the client must not send it", err)
	}
	// A client of the _meta["terminal-auth"] convention runs the login and
	// then calls authenticate to check it.
	if _, err := h.conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{Meta: map[string]any{"terminal-auth": true}}}); err != nil {
		t.Fatal(err)
	}
	_, err = h.conn.Authenticate(t.Context(), acpsdk.AuthenticateRequest{MethodId: "acp-agent-login"})
	if !errors.As(err, &re) || re.Code != -32000 || !strings.Contains(err.Error()+jsonText(re.Data), "acp-agent login") {
		t.Fatalf("authenticate without a key = %v, want auth_required naming acp-agent login", err)
	}
	f.mu.Lock()
	f.haveKey = true // the terminal login stored a key
	f.mu.Unlock()
	if _, err := h.conn.Authenticate(t.Context(), acpsdk.AuthenticateRequest{MethodId: "acp-agent-login"}); err != nil {
		t.Fatalf("authenticate after login: %v", err)
	}
	if _, err := h.conn.Authenticate(t.Context(), acpsdk.AuthenticateRequest{MethodId: "other"}); !errors.As(err, &re) || re.Code != -32602 {
		t.Errorf("authenticate with an unknown method = %v, want invalid_params", err)
	}
	if _, err := h.conn.Logout(t.Context(), acpsdk.LogoutRequest{}); err != nil {
		t.Fatalf("logout: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logouts != 1 || f.haveKey {
		t.Errorf("logout ran SignIn.Logout %d times, key left %v; want once, removed", f.logouts, f.haveKey)
	}
}

func TestAgent_LogoutWithoutSignInIsMethodNotFound(t *testing.T) {
	h := startAgent(t)
	_, err := h.conn.Logout(t.Context(), acpsdk.LogoutRequest{})
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != -32601 {
		t.Errorf("logout = %v, want method_not_found", err)
	}
}

func TestAgent_NewSessionSaysTheKeyIsMissing(t *testing.T) {
	f := &fakeSignIn{}
	h := startAgentWith(t, testOptions{SignIn: f.signIn()})
	from := len(h.client.Updates())
	sid := h.newSession()
	var first string
	for _, n := range h.client.Updates()[from:] {
		if string(n.SessionId) == sid && n.Update.AgentMessageChunk != nil && n.Update.AgentMessageChunk.Content.Text != nil {
			first = n.Update.AgentMessageChunk.Content.Text.Text
			break
		}
	}
	for _, want := range []string{"no API key", "ANTHROPIC_API_KEY", `"acp-agent login"`} {
		if !strings.Contains(first, want) {
			t.Errorf("first agent message %q lacks %q", first, want)
		}
	}
	// After a login, new sessions say nothing about it.
	f.mu.Lock()
	f.haveKey = true
	f.mu.Unlock()
	from = len(h.client.Updates())
	sid = h.newSession()
	for _, n := range h.client.Updates()[from:] {
		if string(n.SessionId) == sid && n.Update.AgentMessageChunk != nil {
			t.Errorf("session after login got agent message %+v", n.Update.AgentMessageChunk)
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
