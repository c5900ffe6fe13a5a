package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
)

// TestOps_TenantsReadNoOperatorDetail: on a fleet replica with tenants
// (--tokens-file) and an operator token (ACP_AGENT_METRICS_TOKEN), a
// tenant's token reads neither /metrics (another tenant's server names,
// everyone's turns and cost) nor why /readyz fails (the database URL):
// it gets ready or not and a reference the operator finds in the log. The
// operator's token reads both, and the metrics leave the tenants' MCP
// server and tool names out.
func TestOps_TenantsReadNoOperatorDetail(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pg := pgtest.Start(t)
	g := startGateway(t, "", []string{"ACP_AGENT_METRICS_TOKEN=" + opsToken},
		"--store", pg, "--tokens-file", tokens, "--config", gatewayConfig(t, ""))
	base := "http://" + g.addr

	bob := dialGateway(t, g.url(), bobToken, "", nil)
	sid := bob.newSession(t.TempDir(), httpServer("acme-merger-2027", startFixtureHTTP(t)+"/mcp", nil))
	if _, out := bob.mustPrompt(sid, `/call mcp__acme-merger-2027__echo {"message":"hi"}`); contentText(finalToolUpdate(t, out)) != "Echo: hi" {
		t.Fatalf("/call: %s", dump(out))
	}

	for who, tok := range map[string]string{"alice": aliceToken, "bob": bobToken, "nobody": ""} {
		if code, body := opsGet(t, base, "/metrics", tok); code != 401 || strings.Contains(body, "acme") {
			t.Errorf("/metrics with %s's token = %d %.200q, want 401", who, code, body)
		}
	}
	m := scrapeMetrics(t, base, opsToken)
	if strings.Contains(string(m), "acme-merger") {
		t.Errorf("the operator's /metrics names a tenant's MCP server:\n%s", m)
	}
	m.want(t, eq(1), "1 (a tenant's server, unnamed)", "mcp_client_tool_calls_total", "mcp_server=other", "gen_ai_tool_name=other", "outcome=ok")
	m.want(t, eq(1), "1", "acp_agent_turns_total", "stop_reason=end_turn")

	// The database lost: a tenant learns not ready and a reference; the log
	// and the operator's token say why.
	setConnections(t, pg, false)
	code, body := opsGet(t, base, "/readyz", aliceToken)
	ref := regexp.MustCompile(`^not ready \(ref ([0-9a-f]{8})\)`).FindStringSubmatch(body)
	if code != 503 || ref == nil || strings.Contains(body, "postgres") || strings.Contains(body, "127.0.0.1") {
		t.Errorf("/readyz with alice's token, database gone = %d %q, want 503 with a ref and no database URL", code, body)
	} else {
		g.logs.WaitFor(t, 30*time.Second, func(logs string) bool { return strings.Contains(logs, `"ref": "`+ref[1]+`"`) },
			"the gateway's log has no line with the ref %s:\n%s", ref[1], g.logs)
	}
	if code, body := opsGet(t, base, "/readyz", opsToken); code != 503 || !strings.Contains(body, "session store does not answer") {
		t.Errorf("/readyz with the operator's token, database gone = %d %q, want the reason", code, body)
	}
	setConnections(t, pg, true)
}

// TestOps_GatewayTenantsWithoutOperator: with tenants and no operator
// token, no token reads /metrics; probes still get /healthz and /readyz.
// An operator token that is also a tenant's is refused at start.
func TestOps_GatewayTenantsWithoutOperator(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, "", nil, "--store", "memory", "--tokens-file", tokens)
	base := "http://" + g.addr
	for _, tok := range []string{aliceToken, bobToken, ""} {
		if code, _ := opsGet(t, base, "/metrics", tok); code != 401 {
			t.Errorf("/metrics with %q = %d, want 401", tok, code)
		}
	}
	if code, body := opsGet(t, base, "/readyz", ""); code != 200 || body != "ok\n" {
		t.Errorf("/readyz = %d %q", code, body)
	}

	code, out := runBinary(t, []string{"ACP_AGENT_METRICS_TOKEN=" + aliceToken}, "gateway", "--listen", "127.0.0.1:0", "--store", "memory", "--tokens-file", tokens)
	if code != 1 || !strings.Contains(out, "--metrics-token-file (or ACP_AGENT_METRICS_TOKEN) is a client's token (alice)") {
		t.Errorf("an operator token that is alice's: exit %d\n%s", code, out)
	}
}

// TestCLI_WeakTenantTokensRefused: a --tokens-file line whose token a
// listener would refuse (fewer than 32 characters or 8 different ones) is
// refused at start, naming the file's line and its tenant or client, by
// the gateway and by mcp-server --listen, before anything listens.
func TestCLI_WeakTenantTokensRefused(t *testing.T) {
	t.Parallel()
	for _, weak := range []string{"aaaaaaaaaaaaaaaa", strings.Repeat("a", 39), strings.Repeat("abc", 12)} {
		tokens := filepath.Join(t.TempDir(), "tokens")
		if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\nbob "+weak+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"gateway", "--listen", "0.0.0.0:0", "--store", "memory", "--tokens-file", tokens},
			{"mcp-server", "--listen", "0.0.0.0:0", "--store", "memory", "--tokens-file", tokens},
		} {
			code, out := runBinary(t, nil, args...)
			if code != 1 || !strings.Contains(out, "line 2: ") || !strings.Contains(out, " bob: the token has ") || !strings.Contains(out, "at least 32, of at least 8 different characters") {
				t.Errorf("%s with bob's token %q: exit %d\n%s", args[0], weak, code, out)
			}
		}
	}
}

// TestOps_DebugAddrRefusesRebinding: --debug-addr serves pprof to this
// machine's tools only: a Host that is not loopback (a name rebound to
// 127.0.0.1) or a request with an Origin (a web page) gets 403, never the
// command line or the goroutines' stacks.
func TestOps_DebugAddrRefusesRebinding(t *testing.T) {
	t.Parallel()
	a := startAgentWith(t, nil, "--store", "memory", "--debug-addr", "127.0.0.1:0")
	var found []string
	a.stderr.Await(30*time.Second, func(stderr string) bool {
		found = regexp.MustCompile(`serving pprof.*"url": "(http://[^"]+)/debug/pprof/"`).FindStringSubmatch(stderr)
		return found != nil
	})
	if found == nil {
		t.Fatalf("the agent did not log its pprof URL:\n%s", a.stderr)
	}
	base := found[1]
	for _, tt := range []struct {
		path, host, origin string
		want               int
	}{
		{"/debug/pprof/cmdline", "", "", 200},
		{"/debug/pprof/cmdline", "attacker.example", "", 403},
		{"/debug/pprof/goroutine?debug=2", "attacker.example:6060", "", 403},
		{"/debug/pprof/goroutine?debug=2", "", "http://attacker.example", 403},
		{"/debug/pprof/cmdline", "", "http://" + strings.TrimPrefix(base, "http://"), 403},
	} {
		code, body := hostGet(t, base+tt.path, tt.host, tt.origin)
		if code != tt.want || (tt.want == 403 && (strings.Contains(body, "--debug-addr") || strings.Contains(body, "goroutine "))) {
			t.Errorf("GET %s Host %q Origin %q = %d %.200q, want %d", tt.path, tt.host, tt.origin, code, body, tt.want)
		}
	}
}

// hostGet GETs url with the Host header host ("" the URL's) and Origin
// origin ("" none), and returns the status and body.
func hostGet(t *testing.T, url, host, origin string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// runBinary runs the agent with args to its end (at most two minutes) in a
// fresh home with env, and returns its exit code and stderr.
func runBinary(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	home := t.TempDir()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, agentBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + home, "XDG_CONFIG_HOME=" + home}, env...)
	cmd.Stdin, cmd.Stderr = strings.NewReader(""), &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), stderr.String()
	case err != nil:
		t.Fatalf("%q: %v", args, err)
	}
	return 0, stderr.String()
}
