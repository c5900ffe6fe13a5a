package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// fleetStore returns the --store of the gateway replicas of a fleet test:
// one throwaway PostgreSQL database every replica shares, so the leases are
// fleet-wide.
func fleetStore(t *testing.T) string {
	t.Helper()
	return pgtest.Start(t)
}

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-9876543210ab"
)

// TestFleet_TwoReplicasOneStore: two gateway replicas on one store; a
// session written through replica 1 is loaded through replica 2 with its
// history; replica 1 killed mid-turn fails the turn fast and the next
// prompt runs on replica 2 with the whole conversation; a concurrent prompt
// through the other replica is refused; two tenants never see each other's
// sessions.
func TestFleet_TwoReplicasOneStore(t *testing.T) {
	fake := fakemodel.NewOpenAI(t)
	env := []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := fleetStore(t)
	replica := func(name string) *gatewayProc {
		return startGateway(t, "", env, "--model", "openai:gpt-fake", "--store", store, "--tokens-file", tokens, "--replica-name", name)
	}
	r1, r2 := replica("replica-1"), replica("replica-2")
	alice := []string{"ACP_AGENT_GATEWAY_TOKEN=" + aliceToken}
	fleet := r1.url() + "," + r2.url()

	// Translator A writes a session through replica 1 (the first URL).
	a := startAgentWith(t, alice, "--gateway", fleet, "--store", "gateway")
	cwd := t.TempDir()
	sid := a.newSession(cwd)
	fake.Push(fakemodel.Turn{Text: "Noted: pelican."})
	if _, out := a.prompt(sid, "remember the word pelican"); text(out) != "Noted: pelican." {
		t.Fatalf("first turn: %q", text(out))
	}

	// Translator B (another state directory) loads it through replica 2,
	// and the model's next request holds the history.
	b := startAgentWith(t, alice, "--gateway", r2.url(), "--store", "gateway")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	// A's commit is written behind its response: wait for it.
	var err error
	if !testutil.Eventually(30*time.Second, func() bool {
		_, err = b.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}})
		return err == nil
	}) {
		t.Fatalf("session/load through replica 2: %v", err)
	}
	fake.Push(fakemodel.Turn{Text: "The word was pelican."})
	if _, out := b.prompt(sid, "which word?"); text(out) != "The word was pelican." {
		t.Fatalf("turn through replica 2: %q", text(out))
	}
	reqs := fake.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "remember the word pelican") || !strings.Contains(body, "Noted: pelican.") {
		t.Errorf("the request through replica 2 lacks the history written through replica 1:\n%s", body)
	}
	res, err := b.Conn.ListSessions(ctx, acpsdk.ListSessionsRequest{})
	if err != nil || len(res.Sessions) != 1 || string(res.Sessions[0].SessionId) != sid {
		t.Errorf("alice's session/list through replica 2 = %+v, %v", res, err)
	}
	if _, err := b.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}

	// Another tenant sees none of it.
	c := startAgentWith(t, []string{"ACP_AGENT_GATEWAY_TOKEN=" + bobToken}, "--gateway", fleet, "--store", "gateway")
	if res, err := c.Conn.ListSessions(ctx, acpsdk.ListSessionsRequest{}); err != nil || len(res.Sessions) != 0 {
		t.Errorf("bob's session/list = %+v, %v; want none", res, err)
	}
	if _, err := c.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err == nil || !strings.Contains(err.Error(), sid) {
		t.Errorf("bob's session/load of alice's session: %v; want not found", err)
	}

	// Replica 1 dies mid-turn: A's turn fails fast...
	fake.Push(fakemodel.Turn{Text: strings.Repeat("slow words ", 200), Delay: 100 * time.Millisecond})
	from := len(a.Client.Updates())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = a.Prompt(context.Background(), sid, "talk slowly")
	}()
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil }); err != nil {
		t.Fatal(err)
	}
	// A prompt for the same session through replica 2 meanwhile is refused
	// at once, naming the session and the replica that runs it.
	d := startAgentWith(t, alice, "--gateway", r2.url(), "--store", "gateway")
	if _, err := d.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	dFrom := len(d.Client.Updates())
	if stop, err := d.Prompt(ctx, sid, "me too"); err == nil && !strings.Contains(text(d.Client.Updates()[dFrom:]), "replica-1") {
		t.Errorf("a concurrent prompt through replica 2 ran (%s): %q", stop, text(d.Client.Updates()[dFrom:]))
	} else if err != nil && (!strings.Contains(err.Error(), sid) || !strings.Contains(err.Error(), "replica-1")) {
		t.Errorf("the concurrent prompt's error %q does not name the session and replica-1", err)
	}
	if _, err := d.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = r1.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-done:
		if d := time.Since(killed); d > 5*time.Second {
			t.Errorf("the turn ended %v after replica 1 died, want within 5 s", d)
		}
	case <-ctx.Done():
		t.Fatal("the turn never ended after replica 1 died")
	}
	if got := text(a.Client.Updates()[from:]); !strings.Contains(got, "connection to the gateway") {
		t.Errorf("no clear error after replica 1 died: %q", got)
	}
	// ...and the next prompt runs on replica 2, with the conversation.
	fake.Push(fakemodel.Turn{Text: "Replica 2 here."})
	var got string
	if !testutil.Eventually(30*time.Second, func() bool {
		_, out := a.prompt(sid, "still there?")
		got = text(out)
		return got == "Replica 2 here."
	}) {
		t.Fatalf("no turn on replica 2: %q", got)
	}
	reqs = fake.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "remember the word pelican") || !strings.Contains(body, "Noted: pelican.") {
		t.Errorf("the request through replica 2 after the failover lacks the history:\n%s", body)
	}
	if !strings.Contains(r2.logs.String(), "translator connected") {
		t.Errorf("replica 2 never saw translator A")
	}
}
