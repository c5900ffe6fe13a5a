package e2e

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// gatewayProc is an "acp-agent gateway" process.
type gatewayProc struct {
	cmd  *exec.Cmd
	addr string
	logs *testutil.Buffer
}

// gatewayListening is the gateway's log line saying where it listens.
var gatewayListening = regexp.MustCompile(`gateway listening\s+\{"url": "ws://([^"]+)"`)

// startGateway runs the gateway on addr ("" lets it pick a loopback port)
// and waits until it listens, as its log says.
func startGateway(t testing.TB, addr string, env []string, args ...string) *gatewayProc {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	g := &gatewayProc{addr: addr, logs: &testutil.Buffer{}}
	g.cmd = exec.Command(agentBin, append([]string{"gateway", "--listen", addr, "--verbose"}, args...)...)
	g.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	g.cmd.Stderr = g.logs
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = g.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = g.cmd.Process.Kill()
			t.Error("the gateway did not stop on SIGTERM")
		}
		if t.Failed() {
			t.Logf("gateway logs:\n%s", g.logs.String())
		}
	})
	testutil.WaitFor(t, 30*time.Second, func() bool { return gatewayListening.MatchString(g.logs.String()) },
		"the gateway never listened on %s:\n%s", addr, g.logs)
	g.addr = gatewayListening.FindStringSubmatch(g.logs.String())[1]
	return g
}

func (g *gatewayProc) url() string { return "ws://" + g.addr }

// gatewayModes runs a scenario with the gateway in process and as a
// separate WebSocket service: the ACP client must see the same behaviour.
var gatewayModes = []struct {
	name  string
	start func(t testing.TB, modelEnv []string, modelArgs ...string) *agent
}{
	{"in-process", func(t testing.TB, env []string, args ...string) *agent {
		return startAgentWith(t, env, args...)
	}},
	{"websocket", func(t testing.TB, env []string, args ...string) *agent {
		g := startGateway(t, "", append(env, "ACP_AGENT_GATEWAY_TOKEN="+gatewayTestToken), args...)
		return startAgentWith(t, []string{"ACP_AGENT_GATEWAY_TOKEN=" + gatewayTestToken}, "--gateway", g.url())
	}},
}

// TestGateway_DirectScenario: tools listing, /call, and close, both ways.
func TestGateway_DirectScenario(t *testing.T) {
	t.Parallel()
	for _, mode := range gatewayModes {
		t.Run(mode.name, func(t *testing.T) {
			a := mode.start(t, nil)
			sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""), everythingServer("everything"))
			_, out := a.prompt(sid, "/tools")
			if got := text(out); !strings.Contains(got, "mcp__fixture__echo (fixture)") || !strings.Contains(got, "mcp__everything__echo (everything)") {
				t.Errorf("/tools:\n%s", got)
			}
			_, out = a.prompt(sid, `/call mcp__everything__echo {"message":"hi"}`)
			if e := finalToolUpdate(t, out); *e.Status != acpsdk.ToolCallStatusCompleted || contentText(e) != "Echo: hi" {
				t.Errorf("echo: %+v", e)
			}
			_, out = a.prompt(sid, `/call mcp__fixture__slow {"seconds": 0.3, "steps": 3}`)
			progress := 0
			for _, u := range out {
				if tu := u.Update.ToolCallUpdate; tu != nil && strings.Contains(contentText(tu), "progress") {
					progress++
				}
			}
			if e := finalToolUpdate(t, out); *e.Status != acpsdk.ToolCallStatusCompleted || progress == 0 {
				t.Errorf("slow: %+v, %d progress updates", e, progress)
			}
			pids := descendants(a.Cmd.Process.Pid)
			if _, err := a.Conn.CloseSession(t.Context(), acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
				t.Fatal(err)
			}
			for _, p := range waitAllGone(pids, 7*time.Second) {
				t.Errorf("process %d (%s) survived session/close", p, cmdline(p))
			}
		})
	}
}

// TestGateway_ModelScenario is TestModel_MainScenario through both gateways.
func TestGateway_ModelScenario(t *testing.T) {
	t.Parallel()
	for _, mode := range gatewayModes {
		t.Run(mode.name, func(t *testing.T) {
			fake := fakemodel.NewOpenAI(t)
			a := mode.start(t, []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"}, "--model", "openai:gpt-fake")
			modelScenario(t, a, fake)
		})
	}
}

// TestGateway_TwoTranslatorsShareOneGateway: each model turn sees only its
// own session's tools.
func TestGateway_TwoTranslatorsShareOneGateway(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	g := startGateway(t, "", []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"}, "--model", "openai:gpt-fake")
	a := startAgentWith(t, nil, "--gateway", g.url())
	b := startAgentWith(t, nil, "--gateway", g.url())
	sa := a.newSession(t.TempDir(), fixtureServer("alpha", ""))
	sb := b.newSession(t.TempDir(), everythingServer("beta"))
	for i, c := range []struct {
		ag    *agent
		sid   string
		want  string
		other string
	}{{a, sa, "mcp__alpha__echo", "mcp__beta__"}, {b, sb, "mcp__beta__echo", "mcp__alpha__"}} {
		fake.Push(fakemodel.Turn{Text: "listing"})
		c.ag.prompt(c.sid, "which tools do you have?")
		reqs := fake.Requests()
		body := string(reqs[len(reqs)-1].Body)
		if !strings.Contains(body, c.want) || strings.Contains(body, c.other) {
			t.Errorf("translator %d: the model was offered the wrong tools", i)
		}
	}
}

// TestGateway_KilledMidTurn: the prompt ends with an error within 2 s, and
// once the gateway is back the next prompt works.
func TestGateway_KilledMidTurn(t *testing.T) {
	fake := fakemodel.NewOpenAI(t)
	env := []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"}
	g := startGateway(t, "", env, "--model", "openai:gpt-fake")
	a := startAgentWith(t, nil, "--gateway", g.url())
	sid := a.newSession(t.TempDir())
	fake.Push(fakemodel.Turn{Text: strings.Repeat("slow words ", 100), Delay: 100 * time.Millisecond})
	from := len(a.Client.Updates())
	done := make(chan acpsdk.StopReason, 1)
	go func() {
		stop, err := a.Prompt(context.Background(), sid, "talk slowly")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		done <- stop
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil }); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = g.cmd.Process.Kill()
	select {
	case <-done:
		if d := time.Since(killed); d > 2*time.Second {
			t.Errorf("the prompt ended %v after the gateway died, want within 2 s", d)
		}
	case <-ctx.Done():
		t.Fatal("the prompt never ended")
	}
	if got := text(a.Client.Updates()[from:]); !strings.Contains(got, "connection to the gateway") {
		t.Errorf("no clear error: %q", got)
	}
	startGateway(t, g.addr, env, "--model", "openai:gpt-fake") // the same address
	fake.Push(fakemodel.Turn{Text: "back"})
	var got string
	if !testutil.Eventually(20*time.Second, func() bool {
		_, out := a.prompt(sid, "are you back?")
		got = text(out)
		return got == "back"
	}) {
		t.Fatalf("not back: %q", got)
	}
}

// TestGateway_TranslatorKilledMidTool: the gateway fails that invocation,
// drops the translator's tools and keeps serving the others.
func TestGateway_TranslatorKilledMidTool(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "", nil)
	a := startAgentWith(t, nil, "--gateway", g.url())
	sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""))
	from := len(a.Client.Updates())
	go func() { _, _ = a.Prompt(context.Background(), sid, `/call mcp__fixture__slow {"seconds": 60}`) }()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := a.Client.WaitFor(ctx, from, toolRunning); err != nil {
		t.Fatal(err)
	}
	pids := descendants(a.Cmd.Process.Pid)
	_ = a.Cmd.Process.Signal(syscall.SIGKILL)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL) // the orphaned fixture
	}
	if !testutil.Eventually(10*time.Second, func() bool { return strings.Contains(g.logs.String(), "translator disconnected") }) {
		t.Fatalf("the gateway did not notice:\n%s", g.logs.String())
	}
	b := startAgentWith(t, nil, "--gateway", g.url())
	sb := b.newSession(t.TempDir(), fixtureServer("fixture", ""))
	_, out := b.prompt(sb, `/call mcp__fixture__echo {"message":"still serving"}`)
	if e := finalToolUpdate(t, out); *e.Status != acpsdk.ToolCallStatusCompleted || contentText(e) != "Echo: still serving" {
		t.Errorf("after the kill: %+v", e)
	}
}

// TestGateway_SIGTERMEndsTurnsWithAnError: a graceful stop ends the running
// turn with an error, then the gateway exits.
func TestGateway_SIGTERMEndsTurnsWithAnError(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	g := startGateway(t, "", []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"}, "--model", "openai:gpt-fake")
	a := startAgentWith(t, nil, "--gateway", g.url())
	sid := a.newSession(t.TempDir())
	fake.Push(fakemodel.Turn{Text: strings.Repeat("slow words ", 100), Delay: 100 * time.Millisecond})
	from := len(a.Client.Updates())
	done := make(chan struct{})
	go func() { _, _ = a.Prompt(context.Background(), sid, "talk slowly"); close(done) }()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil }); err != nil {
		t.Fatal(err)
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the prompt never ended")
	}
	if got := text(a.Client.Updates()[from:]); !strings.Contains(got, "shutting down") && !strings.Contains(got, "connection to the gateway") {
		t.Errorf("no error said why the turn ended: %q", got)
	}
	exited := make(chan error, 1)
	go func() { exited <- g.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Error("the gateway did not exit after SIGTERM")
	}
}

// gatewayTestToken is the gateway token of the e2e tests: a listener's
// token must be at least 32 characters of 8 different ones.
const gatewayTestToken = "gw-token-0123456789abcdef0123456789abcdef"
