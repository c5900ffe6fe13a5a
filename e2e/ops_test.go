package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/jackc/pgx/v5"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/oauthtest"
	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// scrape is one /metrics answer in the Prometheus text format.
type scrape string

// seriesLine is a sample line: name, optional {labels}, value.
var seriesLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$`)

var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// value returns the sample of the series name whose labels include labels
// (each "k=v"), summed over the series that match (a label left out is
// summed over), and whether any matched.
func (s scrape) value(name string, labels ...string) (float64, bool) {
	var sum float64
	found := false
	for _, line := range strings.Split(string(s), "\n") {
		m := seriesLine.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		have := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			have[p[1]] = p[2]
		}
		ok := true
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			if have[k] != v {
				ok = false
			}
		}
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		sum += f
		found = true
	}
	return sum, found
}

// want checks the series name{labels} against check, naming it on failure.
func (s scrape) want(t *testing.T, check func(float64) bool, desc, name string, labels ...string) {
	t.Helper()
	v, ok := s.value(name, labels...)
	if !ok || !check(v) {
		t.Errorf("%s{%s} = %v (found %v), want %s", name, strings.Join(labels, ","), v, ok, desc)
	}
}

func eq(n float64) func(float64) bool      { return func(v float64) bool { return v == n } }
func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }

// opsGet GETs base+path with token as bearer ("" none) and returns the
// status and body.
func opsGet(t *testing.T, base, path, token string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrapeMetrics reads /metrics with token and saves the scrape under the
// test's name in $E2E_METRICS_DIR when set (the README's sample).
func scrapeMetrics(t *testing.T, base, token string) scrape {
	t.Helper()
	code, body := opsGet(t, base, "/metrics", token)
	if code != 200 {
		t.Fatalf("/metrics = %d %q", code, body)
	}
	if dir := os.Getenv("E2E_METRICS_DIR"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".txt"), []byte(body), 0o644)
	}
	return scrape(body)
}

// setConnections allows or refuses new connections to the database of
// pgURL and, when refusing, ends the open ones: to the agent it is a lost
// PostgreSQL, while the test binary's server goes on serving the other
// tests' databases.
func setConnections(t *testing.T, pgURL string, allow bool) {
	t.Helper()
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, pgtest.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	if _, err := c.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{db}.Sanitize(), allow)); err != nil {
		t.Fatal(err)
	}
	if !allow {
		if _, err := c.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", db); err != nil {
			t.Fatal(err)
		}
	}
}

const opsToken = "ops-e2e-token-0123456789abcdefghijklmnop"

// TestOps_GatewayHealthMetricsReadiness: a gateway on PostgreSQL with a
// token serves /healthz and /readyz to anyone and /metrics only with the
// token; a model turn with two tool calls from a network client shows in
// the metrics by name and value, with the transport's connections and
// messages; /readyz turns 503 within 5 s of losing the database and 200
// again once it is back.
func TestOps_GatewayHealthMetricsReadiness(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	pg := pgtest.Start(t)
	g := startGateway(t, "", []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1", "ACP_AGENT_GATEWAY_TOKEN=" + opsToken},
		"--model", "openai:gpt-fake", "--store", pg, "--config", gatewayConfig(t, ""))
	base := "http://" + g.addr

	a := dialGateway(t, g.url(), opsToken, "", nil)
	perms := &permissionAnswers{}
	a.Client.SetPermission(perms.answer)
	sid := a.newSession(t.TempDir(), httpServer("fixture", startFixtureHTTP(t)+"/mcp", nil))
	fake.Push(
		fakemodel.Turn{Text: "Looking.", ToolCalls: []fakemodel.ToolCall{
			{ID: "call_echo", Name: "mcp__fixture__echo", Args: `{"message":"hi"}`}, // read-only: allowed by the policy
			{ID: "call_img", Name: "mcp__fixture__image", Args: `{}`},               // asked
		}},
		fakemodel.Turn{Text: "Done."},
	)
	perms.queue("allow_once")
	if stop, out := a.mustPrompt(sid, "echo and show the image"); stop != acpsdk.StopReasonEndTurn {
		t.Fatalf("stop = %s\n%s", stop, dump(out))
	}

	if code, body := opsGet(t, base, "/healthz", ""); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := opsGet(t, base, "/readyz", ""); code != 200 || body != "ok\n" {
		t.Errorf("/readyz = %d %q", code, body)
	}
	if code, _ := opsGet(t, base, "/metrics", ""); code != 401 {
		t.Errorf("/metrics without the token = %d, want 401", code)
	}
	m := scrapeMetrics(t, base, opsToken)
	if os.Getenv("E2E_PRINT_SCRAPE") != "" {
		t.Logf("SCRAPE\n%s", m)
	}
	model := "gen_ai_request_model=openai:gpt-fake"
	m.want(t, eq(1), "1", "acp_agent_turns_total", model, "stop_reason=end_turn")
	m.want(t, eq(1), "1 turn", "acp_agent_turn_duration_seconds_count", "stop_reason=end_turn")
	m.want(t, eq(2), "2", "gen_ai_client_requests_total", model, "outcome=ok")
	m.want(t, atLeast(1), "> 0", "gen_ai_client_token_usage_total", model, "gen_ai_token_type=input")
	m.want(t, atLeast(1), "> 0", "gen_ai_client_token_usage_total", model, "gen_ai_token_type=output")
	m.want(t, eq(2), "2 requests", "gen_ai_client_operation_duration_seconds_count", model, "gen_ai_operation_name=chat")
	m.want(t, eq(1), "1", "mcp_client_tool_calls_total", "mcp_server=fixture", "gen_ai_tool_name=mcp__fixture__echo", "outcome=ok")
	m.want(t, eq(1), "1", "mcp_client_tool_calls_total", "mcp_server=fixture", "gen_ai_tool_name=mcp__fixture__image", "outcome=ok")
	m.want(t, eq(2), "2 calls", "mcp_client_operation_duration_seconds_count", "mcp_method_name=tools/call", "mcp_server=fixture")
	m.want(t, eq(1), "1", "acp_agent_permission_decisions_total", "decision=allow")
	m.want(t, eq(1), "1", "acp_agent_permission_decisions_total", "decision=allow_once")
	m.want(t, eq(1), "1 lease taken", "acp_agent_lease_wait_seconds_count", "outcome=acquired")
	m.want(t, eq(0), "0", "acp_agent_leases_lost_total")
	m.want(t, eq(1), "1 (the turn)", "acp_agent_store_committed_turns_total")
	m.want(t, eq(1), "1", "acp_agent_sessions_opened_total")
	m.want(t, eq(1), "1", "acp_agent_acp_connections_total", "transport=websocket")
	m.want(t, eq(1), "1", "acp_agent_acp_connections_open", "transport=websocket")
	m.want(t, eq(4), "4 (initialize, session/new, session/prompt, the answer to the permission request)", "acp_agent_acp_messages_total", "transport=websocket", "direction=in")
	m.want(t, atLeast(5), ">= 5", "acp_agent_acp_messages_total", "transport=websocket", "direction=out")
	m.want(t, atLeast(1), "> 0", "go_goroutines")
	for _, secret := range []string{opsToken, "OPENAI_API_KEY", "hi\""} {
		if strings.Contains(string(m), secret) {
			t.Errorf("/metrics shows %q", secret)
		}
	}

	// PostgreSQL lost: not ready, within 5 s, saying why to the token's
	// holder only; healthy all along.
	setConnections(t, pg, false)
	start := time.Now()
	code, body := opsGet(t, base, "/readyz", "")
	if took := time.Since(start); code != 503 || !strings.HasPrefix(body, "not ready (ref ") || strings.Contains(body, "postgres") || took >= 5*time.Second {
		t.Errorf("/readyz with the database gone = %d %q after %v, want 503 \"not ready (ref …)\" within 5 s", code, body, took)
	}
	if code, body := opsGet(t, base, "/readyz", opsToken); code != 503 || !strings.Contains(body, "session store does not answer") {
		t.Errorf("/readyz with the token, database gone = %d %q, want the reason", code, body)
	}
	if code, _ := opsGet(t, base, "/healthz", ""); code != 200 {
		t.Errorf("/healthz with the database gone = %d, want 200 (the process serves)", code)
	}
	setConnections(t, pg, true)
	testutil.WaitFor(t, 30*time.Second, func() bool { code, _ := opsGet(t, base, "/readyz", ""); return code == 200 },
		"/readyz never came back to 200 once the database was back")
}

// TestOps_MCPServerMetrics: mcp-server --listen serves the same endpoints
// beside /mcp, /metrics under its bearer token: a session, a model turn
// with a tool call, the store's commit and the servers by state.
func TestOps_MCPServerMetrics(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	p := startMCPWithModel(t, "http", fake, nil, "--store", filepath.Join(t.TempDir(), "sessions.db"))
	base := strings.TrimSuffix(p.url, "/mcp")
	fake.Push(
		fakemodel.Turn{Text: "Let me look.", ToolCalls: []fakemodel.ToolCall{{ID: "call_img", Name: "mcp__fixture__image", Args: `{}`}}},
		fakemodel.Turn{Text: "It is a tiny image."},
	)
	if r := p.client.ask("show me the picture", "ops", nil); r.isError || r.out.StopReason != "end_turn" {
		t.Fatalf("ask_agent: %+v", r)
	}
	if code, _ := opsGet(t, base, "/healthz", ""); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if code, _ := opsGet(t, base, "/readyz", ""); code != 200 {
		t.Errorf("/readyz = %d", code)
	}
	if code, _ := opsGet(t, base, "/metrics", ""); code != 401 {
		t.Errorf("/metrics without the token = %d, want 401", code)
	}
	m := scrapeMetrics(t, base, p.token)
	m.want(t, eq(1), "1", "acp_agent_sessions_opened_total")
	m.want(t, eq(1), "1", "acp_agent_sessions_open")
	m.want(t, eq(1), "1", "acp_agent_turns_total", "gen_ai_request_model=openai:gpt-fake", "stop_reason=end_turn")
	m.want(t, eq(1), "1", "mcp_client_tool_calls_total", "mcp_server=fixture", "gen_ai_tool_name=mcp__fixture__image", "outcome=ok")
	m.want(t, eq(1), "1 (allowed by the config's rule)", "acp_agent_permission_decisions_total", "decision=allow")
	m.want(t, atLeast(1), ">= 1 commit", "acp_agent_store_commit_duration_seconds_count", "outcome=ok")
	m.want(t, eq(1), "1", "acp_agent_store_committed_turns_total")
	m.want(t, atLeast(1), ">= 1 (the fixture, and the built-in tools)", "mcp_client_servers", "state=connected")
}

// TestOps_AgentMetricsAddr: the stdio agent serves the endpoints on
// --metrics-addr when asked (loopback, no token): sessions and a /call's
// tool call; a session closed shows.
func TestOps_AgentMetricsAddr(t *testing.T) {
	t.Parallel()
	a := startAgentWith(t, nil, "--store", "memory", "--metrics-addr", "127.0.0.1:0")
	base := metricsBase(t, a)
	sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""))
	if _, out := a.prompt(sid, `/call mcp__fixture__echo {"message":"hi"}`); contentText(finalToolUpdate(t, out)) != "Echo: hi" {
		t.Fatalf("/call: %s", dump(out))
	}
	if code, _ := opsGet(t, base, "/readyz", ""); code != 200 {
		t.Errorf("/readyz = %d", code)
	}
	m := scrapeMetrics(t, base, "")
	m.want(t, eq(1), "1", "acp_agent_sessions_open")
	m.want(t, eq(1), "1", "mcp_client_tool_calls_total", "mcp_server=fixture", "gen_ai_tool_name=mcp__fixture__echo", "outcome=ok")
	m.want(t, eq(1), "1", "acp_agent_turns_total", "gen_ai_request_model=direct", "stop_reason=end_turn")
	if _, err := a.Conn.CloseSession(t.Context(), acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	m = scrapeMetrics(t, base, "")
	m.want(t, eq(0), "0 after session/close", "acp_agent_sessions_open")
	m.want(t, eq(1), "1", "acp_agent_sessions_closed_total")
}

// metricsBase is the http://HOST:PORT of agent a's --metrics-addr, as it
// logged it.
func metricsBase(t *testing.T, a *agent) string {
	t.Helper()
	// The log sink writes stderr from its own goroutine: the line may come
	// after initialize is answered.
	var found []string
	a.stderr.Await(30*time.Second, func(stderr string) bool {
		found = regexp.MustCompile(`serving metrics.*"url": "(http://[^"]+)/metrics"`).FindStringSubmatch(stderr)
		return found != nil
	})
	if found == nil {
		t.Fatalf("the agent did not log its metrics URL:\n%s", a.stderr)
	}
	return found[1]
}

// TestOps_SignInCounted: an OAuth-protected server shows as "needs
// sign-in" in mcp_client_servers, and its sign-in counts as started, then
// completed once the user followed the link.
func TestOps_SignInCounted(t *testing.T) {
	t.Parallel()
	srv, err := oauthtest.Start(oauthtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	a := startAgentClient(t, nil, nil, "--store", "memory", "--metrics-addr", "127.0.0.1:0")
	base := metricsBase(t, a)
	sid := a.newSession(t.TempDir(), remoteServer(srv.URL()))
	msg := waitText(t, a, sid, 0, `MCP server "remote" needs you to sign in: open `)
	link := regexp.MustCompile(`open (http\S+)`).FindStringSubmatch(msg)
	if link == nil {
		t.Fatalf("no link in %q", msg)
	}
	m := scrapeMetrics(t, base, "")
	m.want(t, eq(1), "1", "acp_agent_signins_total", "outcome=started")
	m.want(t, eq(1), "1", "mcp_client_servers", "state=needs sign-in")
	from := len(a.Client.Updates())
	if err := acpclient.FollowSignIn(t.Context(), link[1]); err != nil {
		t.Fatal(err)
	}
	waitText(t, a, sid, from, `MCP server "remote" is connected`)
	m = scrapeMetrics(t, base, "")
	m.want(t, eq(1), "1", "acp_agent_signins_total", "outcome=completed")
	if v, ok := m.value("mcp_client_servers", "state=needs sign-in"); ok && v != 0 {
		t.Errorf("mcp_client_servers{state=\"needs sign-in\"} = %v after the sign-in", v)
	}
}
