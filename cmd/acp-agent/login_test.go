package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

const testKey = "sk-test-SECRET-0123456789"

// keyAPI is a loopback models endpoint that accepts only testKey (as
// Anthropic's x-api-key or OpenAI's bearer token) and counts requests.
func keyAPI(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if !strings.HasSuffix(r.URL.Path, "/models") {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if r.Header.Get("x-api-key") != testKey && r.Header.Get("Authorization") != "Bearer "+testKey {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"data":[{"id":"m","type":"model","object":"model","created_at":"2025-01-01T00:00:00Z","display_name":"M"}],"has_more":false,"first_id":"m","last_id":"m","object":"list"}`))
	}))
	t.Cleanup(s.Close)
	return s, &n
}

// loginEnv points the config directory at a temporary one and clears the
// key variables.
func loginEnv(t *testing.T) *credentials {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HOME", dir)
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"} {
		t.Setenv(v, "")
	}
	c := defaultCredentials()
	if want := filepath.Join(dir, "acp-agent", "credentials.json"); c.path != want {
		t.Fatalf("credentials path %s, want %s", c.path, want)
	}
	return c
}

func login(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(append([]string{"login"}, args...), strings.NewReader(stdin), &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestLogin_ChecksAndStoresKeyPrivately(t *testing.T) {
	creds := loginEnv(t)
	api, n := keyAPI(t)
	out, err := login(t, "anthropic\n"+testKey+"\n", "--base-url", api.URL)
	if err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	for _, want := range []string{"Provider (anthropic, openai or gemini) [anthropic]", "API key (input hidden)", "accepted the key", creds.path, "0600", "ANTHROPIC_API_KEY is not set"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, testKey) {
		t.Errorf("output shows the key:\n%s", out)
	}
	if n.Load() != 1 {
		t.Errorf("%d check requests, want 1", n.Load())
	}
	fi, err := os.Stat(creds.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(creds.path)); di.Mode().Perm() != 0o700 {
		t.Errorf("config dir mode %v, want 0700", di.Mode().Perm())
	}
	if got := creds.key("anthropic"); got != testKey {
		t.Errorf("stored key %q", got)
	}
	// openai by argument, kept next to anthropic's.
	if out, err := login(t, testKey+"\n", "--base-url", api.URL+"/v1", "openai"); err != nil {
		t.Fatalf("login openai: %v\n%s", err, out)
	}
	if got := creds.providers(); strings.Join(got, ",") != "anthropic,openai" {
		t.Errorf("stored providers %v", got)
	}
	// logout of one provider, then of all.
	var out2 bytes.Buffer
	if err := run([]string{"logout", "openai"}, strings.NewReader(""), &out2, &out2); err != nil || !strings.Contains(out2.String(), "Removed the stored openai API key") {
		t.Fatalf("logout openai: %v\n%s", err, out2.String())
	}
	if creds.key("openai") != "" || creds.key("anthropic") != testKey {
		t.Errorf("after logout openai: %v", creds.providers())
	}
	out2.Reset()
	if err := run([]string{"logout"}, strings.NewReader(""), &out2, &out2); err != nil || !strings.Contains(out2.String(), "Removed every stored API key") {
		t.Fatalf("logout: %v\n%s", err, out2.String())
	}
	if _, err := os.Stat(creds.path); !os.IsNotExist(err) {
		t.Errorf("credentials file still there after logout: %v", err)
	}
}

func TestLogin_RefusedKeyIsNotStored(t *testing.T) {
	creds := loginEnv(t)
	api, _ := keyAPI(t)
	out, err := login(t, "\nsk-wrong\n", "--base-url", api.URL)
	if err == nil || !strings.Contains(err.Error(), "refused the key (HTTP 401: invalid x-api-key)") || !strings.Contains(err.Error(), "nothing stored") {
		t.Fatalf("login with a wrong key = %v, want a refusal naming HTTP 401\n%s", err, out)
	}
	if len(creds.providers()) != 0 {
		t.Errorf("a refused key was stored")
	}
}

func TestLogin_UncheckedKeyAsksFirst(t *testing.T) {
	creds := loginEnv(t)
	closed := "http://" + testutil.RefusedAddr(t)
	out, err := login(t, "openai\n"+testKey+"\nn\n", "--base-url", closed)
	if err == nil || !strings.Contains(err.Error(), "nothing stored") {
		t.Fatalf("answer n: err = %v\n%s", err, out)
	}
	for _, want := range []string{"Could not check the key", "could not reach " + strings.TrimPrefix(closed, "http://"), `(check the network connection; the API key is read from OPENAI_API_KEY or stored by "acp-agent login")`, "Store it anyway? [y/N]"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if len(creds.providers()) != 0 {
		t.Fatal("stored after answer n")
	}
	out, err = login(t, "openai\n"+testKey+"\ny\n", "--base-url", closed)
	if err != nil || !strings.Contains(out, "Warning: storing a key that was not checked") || creds.key("openai") != testKey {
		t.Errorf("answer y: err = %v, stored %v\n%s", err, creds.providers(), out)
	}
}

func TestLogin_DefaultProviderFromConfigAndEmptyInput(t *testing.T) {
	creds := loginEnv(t)
	cfgDir := filepath.Dir(creds.path)
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(`{"model":{"provider":"openai","name":"gpt-4.1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := login(t, "\n\n", "--no-check")
	if err == nil || !strings.Contains(err.Error(), "the API key is empty") || !strings.Contains(out, "[openai]") {
		t.Errorf("empty key: err = %v\n%s", err, out)
	}
	if _, err := login(t, "", "--no-check"); err == nil || !strings.Contains(err.Error(), "no provider given (stdin ended)") {
		t.Errorf("closed stdin: err = %v", err)
	}
	if _, err := login(t, "mistral\n", "--no-check"); err == nil || !strings.Contains(err.Error(), `provider "mistral": want anthropic, openai or gemini`) {
		t.Errorf("unknown provider: err = %v", err)
	}
}

// The stored key is used when the environment has none; the environment
// wins; the key is never put into os.Environ.
func TestModels_StoredKeyAndEnvironmentWins(t *testing.T) {
	creds := loginEnv(t)
	if err := creds.store("anthropic", testKey); err != nil {
		t.Fatal(err)
	}
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: "a"}, fakemodel.Turn{Text: "b"})
	mc := &ModelConfig{Provider: "anthropic", Name: "claude-x", BaseURL: s.URL}
	req := &gateway.Request{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("hi")}}}}
	for _, envKey := range []string{"", "env-key"} {
		ms, err := models(mc, env(map[string]string{"ANTHROPIC_API_KEY": envKey}), creds, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ms[0].Provider.Complete(t.Context(), req, func(gateway.Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	rs := s.Requests()
	if len(rs) != 2 || rs[0].Header.Get("x-api-key") != testKey || rs[1].Header.Get("x-api-key") != "env-key" {
		t.Errorf("keys sent: %q, %q; want the stored key, then the environment's", rs[0].Header.Get("x-api-key"), rs[1].Header.Get("x-api-key"))
	}
	for _, kv := range os.Environ() {
		if strings.Contains(kv, testKey) {
			t.Errorf("the stored key is in os.Environ: %s", kv)
		}
	}
	// Discovery offers a provider whose key is only stored.
	ms, err := models(nil, env(nil), creds, nil)
	if err != nil || len(ms) != 1 || ms[0].ID != "anthropic:claude-sonnet-4-5" {
		t.Errorf("discovery with a stored key = %v, %v", ms, err)
	}
}

func TestMissingKey_NamesVariableAndLogin(t *testing.T) {
	creds := loginEnv(t)
	mc := &ModelConfig{Provider: "openai", Name: "gpt-4.1"}
	got := missingKey(mc, env(nil), creds)
	for _, want := range []string{"openai:gpt-4.1", "no API key", "set OPENAI_API_KEY", `"acp-agent login"`} {
		if !strings.Contains(got, want) {
			t.Errorf("missingKey = %q, lacks %q", got, want)
		}
	}
	if got := missingKey(&ModelConfig{Provider: "anthropic", Name: "x", BaseURL: "http://127.0.0.1:1", APIKeyEnv: "MY_KEY"}, env(nil), creds); !strings.Contains(got, "set MY_KEY") {
		t.Errorf("custom key variable: %q", got)
	}
	for name, tc := range map[string]struct {
		mc  *ModelConfig
		env map[string]string
	}{
		"env key":      {mc, map[string]string{"OPENAI_API_KEY": "k"}},
		"base URL":     {&ModelConfig{Provider: "openai", Name: "llama", BaseURL: "http://127.0.0.1:11434/v1"}, nil},
		"base URL env": {mc, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}},
		"direct":       {&ModelConfig{Provider: "direct"}, nil},
		"none":         {nil, nil},
	} {
		if got := missingKey(tc.mc, env(tc.env), creds); got != "" {
			t.Errorf("%s: missingKey = %q, want none", name, got)
		}
	}
	if err := creds.store("openai", testKey); err != nil {
		t.Fatal(err)
	}
	if got := missingKey(mc, env(nil), creds); got != "" {
		t.Errorf("with a stored key: missingKey = %q", got)
	}
	// The ACP sign-in reads the file again: authenticate succeeds now.
	si := newSignIn(mc, env(nil), creds)
	if err := si.Check(); err != nil {
		t.Errorf("Check with a stored key: %v", err)
	}
	if err := si.Logout(); err != nil || creds.key("openai") != "" {
		t.Errorf("Logout: %v, left %v", err, creds.providers())
	}
	if err := si.Check(); err == nil || !strings.Contains(err.Error(), "acp-agent login") {
		t.Errorf("Check after logout = %v", err)
	}
}
