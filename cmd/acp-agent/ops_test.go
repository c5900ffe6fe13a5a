package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/internal/metrics"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// downStore is a store whose Get fails as a lost database does.
type downStore struct{ store.Store }

func (downStore) Get(context.Context, string) (store.Record, error) {
	return store.Record{}, errors.New("dial tcp 127.0.0.1:5432: connection refused")
}

func TestStoreReady(t *testing.T) {
	if storeReady(nil) != nil {
		t.Error("storeReady(nil) is a check; want nil (always ready)")
	}
	if err := storeReady(memory.New())(t.Context()); err != nil {
		t.Errorf("ready of a memory store = %v", err)
	}
	err := storeReady(downStore{})(t.Context())
	if err == nil || !strings.Contains(err.Error(), "session store does not answer") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("ready of a store that is down = %v", err)
	}
}

func TestCheckListenFlag_MetricsAddr(t *testing.T) {
	for _, c := range []struct{ addr, token, want string }{
		{"127.0.0.1:0", "", ""},
		{"localhost:9464", "", ""},
		{":9464", "", "--metrics-addr \":9464\" has no host"},
		{"0.0.0.0:9464", "", "--metrics-addr \"0.0.0.0:9464\" is not a loopback address: set a token (--metrics-token-file or " + metricsTokenEnv + ")"},
		{"0.0.0.0:9464", "0123456789abcdef0123456789abcdef", ""},
	} {
		err := checkListenFlag("--metrics-addr", c.addr, c.token, metricsTokenEnv)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("checkListenFlag(%q, token %t) = %v, want %q", c.addr, c.token != "", err, c.want)
		}
	}
}

func TestStartMetricsAddr(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if _, err := startMetricsAddr("0.0.0.0:0", "", metrics.New(nil), nil, log); err == nil {
		t.Fatal("a non-loopback --metrics-addr without a token was served")
	}
	m := metrics.New(nil)
	m.SessionOpened()
	// Port 0: the bound address is logged (as an operator finds it).
	var logged strings.Builder
	log = slog.New(slog.NewTextHandler(&logged, nil))
	stop, err := startMetricsAddr("127.0.0.1:0", "", m, storeReady(downStore{}), log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, rest, ok := strings.Cut(logged.String(), "url=")
	if !ok {
		t.Fatalf("no url logged: %s", logged.String())
	}
	base := strings.TrimSuffix(strings.Fields(rest)[0], metrics.PathMetrics)
	for path, want := range map[string]int{metrics.PathHealth: 200, metrics.PathReady: 503, metrics.PathMetrics: 200} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d %q, want %d", path, resp.StatusCode, b, want)
		}
		if path == metrics.PathMetrics && !strings.Contains(string(b), "acp_agent_sessions_open 1") {
			t.Errorf("/metrics lacks acp_agent_sessions_open 1:\n%s", b)
		}
	}
}

// The operator's endpoints on a listener with clients: one --token-file
// client is its operator; with --tokens-file only the metrics token is,
// and without one nobody is. A loopback listener without tokens serves
// everyone (behind metrics.LocalOnly).
func TestOperatorAuth(t *testing.T) {
	const op = "operator-0123456789abcdef0123456789"
	req := func(bearer string) *http.Request {
		r, _ := http.NewRequest("GET", "http://127.0.0.1/metrics", nil)
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		return r
	}
	one := map[string]string{strongToken: ""}
	tenants := map[string]string{strongToken: "alice", strongToken2: "bob"}
	for _, tt := range []struct {
		name     string
		operator string
		clients  map[string]string
		shared   bool
		allowed  []string // bearers let in; every other of op, strongToken, strongToken2, "" is not
		everyone bool
	}{
		{name: "loopback, no tokens", everyone: true},
		{name: "one client", clients: one, allowed: []string{strongToken}},
		{name: "one client and an operator", operator: op, clients: one, allowed: []string{strongToken, op}},
		{name: "tenants", clients: tenants, shared: true},
		{name: "tenants and an operator", operator: op, clients: tenants, shared: true, allowed: []string{op}},
	} {
		auth := operatorAuth(tt.operator, tt.clients, tt.shared)
		if tt.everyone {
			if auth != nil {
				t.Errorf("%s: a check, want nil (everyone)", tt.name)
			}
			continue
		}
		for _, bearer := range []string{op, strongToken, strongToken2, ""} {
			if got, want := auth(req(bearer)), slices.Contains(tt.allowed, bearer); got != want {
				t.Errorf("%s: bearer %.12q let in %v, want %v", tt.name, bearer, got, want)
			}
		}
	}
}

// The operator's token must be strong, kept private, and no client's; its
// errors name --metrics-token-file, as the stdio agent's --metrics-addr
// ones do.
func TestOperatorToken(t *testing.T) {
	t.Setenv(metricsTokenEnv, "")
	dir := t.TempDir()
	write := func(name, token string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(token+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := operatorToken("", nil); tok != "" || err != nil {
		t.Errorf("none: %q, %v", tok, err)
	}
	if tok, err := operatorToken(write("ok", strongToken2, 0o600), map[string]string{strongToken: "client:alice"}); tok != strongToken2 || err != nil {
		t.Errorf("a good one: %q, %v", tok, err)
	}
	for _, tt := range []struct {
		file string
		want string
	}{
		{write("weak", strings.Repeat("a", 39), 0o600), "--metrics-token-file " + dir + "/weak: the token has 39 characters (1 different)"},
		{write("loose", strongToken2, 0o644), "--metrics-token-file " + dir + "/loose is readable or writable by group or others (mode 0644)"},
		{write("empty", "", 0o600), "--metrics-token-file " + dir + "/empty is empty"},
		{write("alice", strongToken, 0o600), "--metrics-token-file (or " + metricsTokenEnv + ") is a client's token (client:alice)"},
		{filepath.Join(dir, "missing"), "--metrics-token-file: stat "},
	} {
		if _, err := operatorToken(tt.file, map[string]string{strongToken: "client:alice"}); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", filepath.Base(tt.file), err, tt.want)
		}
	}
	var stdout, stderr bytes.Buffer
	err := run([]string{"--metrics-addr", "127.0.0.1:0", "--metrics-token-file", write("weak2", "short", 0o600)}, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.HasPrefix(err.Error(), "--metrics-token-file "+dir+"/weak2: the token has 5 characters") {
		t.Errorf("the agent's weak --metrics-token-file: %v", err)
	}
}
