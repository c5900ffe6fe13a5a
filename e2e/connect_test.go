package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// agentModes runs a scenario with the agent the editor starts being the
// agent itself, and "acp-agent connect" to a gateway (the session on the
// gateway, the stdio servers on the editor's side): the editor must see
// the same behaviour.
var agentModes = []struct {
	name  string
	start func(t testing.TB, env []string, args ...string) *agent
}{
	{"stdio", func(t testing.TB, env []string, args ...string) *agent {
		return startAgentWith(t, env, args...)
	}},
	{"connect", func(t testing.TB, env []string, args ...string) *agent {
		g := startGateway(t, "", append(env, "ACP_AGENT_GATEWAY_TOKEN="+gatewayTestToken), append(args, "--store", "memory")...)
		return startConnect(t, nil, []string{"ACP_AGENT_GATEWAY_TOKEN=" + gatewayTestToken}, g.url())
	}},
}

// TestConnect_DirectScenario: tools listing, /call with progress, and
// close, both ways; through connect the stdio servers run on the editor's
// side (children of connect) and are gone after session/close.
func TestConnect_DirectScenario(t *testing.T) {
	t.Parallel()
	for _, mode := range agentModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
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
			var servers int
			for _, p := range pids {
				if c := cmdline(p); strings.Contains(c, "mcp-fixture") || strings.Contains(c, "server-everything") {
					servers++
				}
			}
			if servers < 2 {
				t.Errorf("%d of the session's stdio servers run under the editor's agent (%v), want both", servers, pids)
			}
			if _, err := a.Conn.CloseSession(t.Context(), acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
				t.Fatal(err)
			}
			for _, p := range waitAllGone(pids, 10*time.Second) {
				t.Errorf("process %d (%s) survived session/close", p, cmdline(p))
			}
		})
	}
}

// TestConnect_ModelScenario is TestModel_MainScenario both ways: the model
// on the gateway calls the stdio servers that connect runs.
func TestConnect_ModelScenario(t *testing.T) {
	t.Parallel()
	for _, mode := range agentModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			fake := fakemodel.NewOpenAI(t)
			a := mode.start(t, []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"}, "--model", "openai:gpt-fake")
			modelScenario(t, a, fake)
		})
	}
}

// TestConnect_GatewayKilledMidTurn: the prompt under way ends with an error
// saying what happened; once the gateway is back (here: restarted on the
// same address and store), connect re-attaches the session, tells the
// editor, and the next prompt continues the conversation.
func TestConnect_GatewayKilledMidTurn(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	env := []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1", "ACP_AGENT_GATEWAY_TOKEN=" + gatewayTestToken}
	db := filepath.Join(t.TempDir(), "sessions.db")
	g := startGateway(t, "", env, "--model", "openai:gpt-fake", "--store", db)
	a := startConnect(t, nil, []string{"ACP_AGENT_GATEWAY_TOKEN=" + gatewayTestToken}, g.url())
	sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""))
	fake.Push(fakemodel.Turn{Text: "The first answer."})
	if _, out := a.prompt(sid, "remember the first question"); text(out) != "The first answer." {
		t.Fatalf("first turn: %q", text(out))
	}
	fake.Push(fakemodel.Turn{Text: strings.Repeat("slow words ", 100), Delay: 100 * time.Millisecond})
	from := len(a.Client.Updates())
	type result struct {
		stop acpsdk.StopReason
		err  error
	}
	done := make(chan result, 1)
	go func() {
		stop, err := a.Prompt(context.Background(), sid, "talk slowly")
		done <- result{stop, err}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil }); err != nil {
		t.Fatal(err)
	}
	_ = g.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case r := <-done:
		if r.err == nil || !strings.Contains(r.err.Error(), "lost") {
			t.Errorf("the prompt under way: %s, %v; want an error saying the connection was lost", r.stop, r.err)
		}
	case <-ctx.Done():
		t.Fatal("the prompt never ended")
	}
	startGateway(t, g.addr, env, "--model", "openai:gpt-fake", "--store", db) // the same address
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		return strings.Contains(acpclientText(n), "re-attached")
	}); err != nil {
		t.Fatalf("the editor was not told of the re-attach: %v\n%s", err, dump(a.Client.Updates()[from:]))
	}
	fake.Push(fakemodel.Turn{Text: "back"})
	if _, out := a.prompt(sid, "are you back?"); text(out) != "back" {
		t.Fatalf("after the reconnect: %q", text(out))
	}
	// The model saw the conversation: the first turn is in its request.
	reqs := fake.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "remember the first question") || !strings.Contains(body, "The first answer.") {
		t.Errorf("the model did not see the earlier turn after the reconnect")
	}
	// The local server is back too.
	if _, out := a.prompt(sid, `/call mcp__fixture__echo {"message":"after"}`); contentText(finalToolUpdate(t, out)) != "Echo: after" {
		t.Errorf("the local server after the reconnect: %s", dump(out))
	}
}

// acpclientText is the text of an agent message or a notice's title.
func acpclientText(n acpsdk.SessionNotification) string {
	switch u := n.Update; {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		return u.AgentMessageChunk.Content.Text.Text
	case u.SessionInfoUpdate != nil && u.SessionInfoUpdate.Title != nil:
		return *u.SessionInfoUpdate.Title
	}
	return ""
}
