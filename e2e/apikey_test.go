package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

const storedKey = "sk-ant-e2e-STORED-7f3a9c"

// TestAPIKey_LoginStoresKeyTheAgentUsesAndNeverLeaks: "acp-agent login"
// (stdin not a terminal) checks the key against a loopback models API and
// stores it 0600; the agent started without the key in its environment
// sends it to the model, advertises the terminal sign-in, and never puts
// the key into a server's environment, its log or the session store; ACP
// logout removes it.
func TestAPIKey_LoginStoresKeyTheAgentUsesAndNeverLeaks(t *testing.T) {
	t.Parallel()
	cfgHome, stateHome := t.TempDir(), t.TempDir()
	models := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("x-api-key") != storedKey {
			http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[],"has_more":false,"first_id":null,"last_id":null}`))
	}))
	defer models.Close()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + cfgHome, "XDG_STATE_HOME=" + stateHome}

	login := exec.Command(agentBin, "login", "--base-url", models.URL, "anthropic")
	login.Env = env
	login.Stdin = strings.NewReader(storedKey + "\n")
	out, err := login.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "accepted the key") || strings.Contains(string(out), storedKey) {
		t.Fatalf("login: %v\n%s", err, out)
	}
	credPath := filepath.Join(cfgHome, "acp-agent", "credentials.json")
	if fi, err := os.Stat(credPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v, %v", fi, err)
	}

	fake := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: "hello"})
	cfg := filepath.Join(cfgHome, "acp-agent", "config.json")
	data, _ := json.Marshal(map[string]any{"model": map[string]any{"provider": "anthropic", "name": "claude-fake", "baseURL": fake.URL}})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgentWith(t, env[2:]) // no ANTHROPIC_API_KEY
	res, err := a.Conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{Auth: acpsdk.AuthCapabilities{Terminal: true}}})
	if err != nil || len(res.AuthMethods) != 1 || res.AuthMethods[0].Terminal == nil || strings.Join(res.AuthMethods[0].Terminal.Args, " ") != "login" {
		t.Fatalf("initialize authMethods = %+v, %v; want the terminal login", res.AuthMethods, err)
	}
	// A client of the current schema runs the terminal method itself and
	// must not pass it to authenticate; one of the older
	// _meta["terminal-auth"] convention (Zed's) calls it after the login.
	if _, err := a.Conn.Authenticate(t.Context(), acpsdk.AuthenticateRequest{MethodId: res.AuthMethods[0].Terminal.Id}); err == nil || !strings.Contains(jsonOf(err), "must not pass it to authenticate") {
		t.Errorf("authenticate of the terminal method = %v, want invalid_params saying the client must not send it", err)
	}
	if _, err := a.Conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{Meta: map[string]any{"terminal-auth": true}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Conn.Authenticate(t.Context(), acpsdk.AuthenticateRequest{MethodId: res.AuthMethods[0].Terminal.Id}); err != nil {
		t.Errorf("authenticate with a stored key: %v", err)
	}

	sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""))
	if _, out := a.prompt(sid, "hi"); text(out) != "hello" {
		t.Errorf("turn:\n%s", dump(out))
	}
	if rs := fake.Requests(); len(rs) != 1 || rs[0].Header.Get("x-api-key") != storedKey {
		t.Errorf("the model got %d requests, key %q; want the stored key", len(rs), rs[0].Header.Get("x-api-key"))
	}
	_, out2 := a.prompt(sid, "/call mcp__fixture__env")
	if childEnv := contentText(finalToolUpdate(t, out2)); childEnv == "" || strings.Contains(childEnv, storedKey) || !strings.Contains(childEnv, "PATH=") {
		t.Errorf("child env:\n%s", childEnv)
	}

	if _, err := a.Conn.Logout(t.Context(), acpsdk.LogoutRequest{}); err != nil {
		t.Fatalf("logout: %v", err)
	}
	if _, err := os.Stat(credPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("credentials after ACP logout: %v", err)
	}
	if _, err := a.Conn.Authenticate(t.Context(), acpsdk.AuthenticateRequest{MethodId: res.AuthMethods[0].Terminal.Id}); err == nil || !strings.Contains(err.Error()+jsonOf(err), "acp-agent login") {
		t.Errorf("authenticate after logout = %v, want auth_required naming acp-agent login", err)
	}
	if err := a.Stop(20e9); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
	}
	if strings.Contains(a.stderr.String(), storedKey) {
		t.Error("the key is in the agent's log")
	}
	_ = filepath.WalkDir(stateHome, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(storedKey)) {
				t.Errorf("the key is in %s", p)
			}
		}
		return nil
	})
}

// TestAPIKey_MissingKeyIsSaidAtStartAndOffline: a configured provider with
// no key is reported in the log and in the session's first message, and a
// turn against an unreachable API names the host and the variable.
func TestAPIKey_MissingKeyIsSaidAtStartAndOffline(t *testing.T) {
	t.Parallel()
	a := startAgentWith(t, []string{"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}, "--model", "anthropic:claude-x")
	from := len(a.Client.Updates())
	sid := a.newSession(t.TempDir())
	first := text(a.Client.Updates()[from:])
	for _, want := range []string{"anthropic:claude-x has no API key", "set ANTHROPIC_API_KEY", `"acp-agent login"`} {
		if !strings.Contains(first, want) {
			t.Errorf("first message %q lacks %q", first, want)
		}
		if !strings.Contains(a.stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, a.stderr.String())
		}
	}
	_, out := a.prompt(sid, "hi")
	if got := text(out); !strings.Contains(got, "no API key") || !strings.Contains(got, "ANTHROPIC_API_KEY") {
		t.Errorf("turn without a key: %q", got)
	}

	// A key but an unreachable API: the host and the variable are named.
	host := testutil.RefusedAddr(t)
	b := startAgentWith(t, []string{"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir(), "OPENAI_API_KEY=k", "OPENAI_BASE_URL=http://" + host + "/v1"}, "--model", "openai:gpt-x")
	sid = b.newSession(t.TempDir())
	_, out = b.prompt(sid, "hi")
	if got := text(out); !strings.Contains(got, "could not reach "+host) || !strings.Contains(got, "OPENAI_API_KEY") {
		t.Errorf("offline turn: %q", got)
	}
}

func jsonOf(err error) string {
	var re *acpsdk.RequestError
	if errors.As(err, &re) {
		b, _ := json.Marshal(re.Data)
		return string(b)
	}
	return ""
}
