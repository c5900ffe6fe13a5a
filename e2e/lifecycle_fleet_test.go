package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// TestFleet_ForkAndDeleteThroughTheGateway: on two gateway replicas over
// one PostgreSQL store, a session/fork through replica 1 gives a session
// whose first model request holds the source's history; a session/delete
// through replica 2 of a session running a turn on replica 1 is refused,
// naming replica 1; once the turn is cancelled the delete goes through:
// the session is gone from session/list and session/load of it, and a
// second session/delete, are -32002. The fork stays.
func TestFleet_ForkAndDeleteThroughTheGateway(t *testing.T) {
	fake := fakemodel.NewOpenAI(t)
	env := []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := fleetStore(t)
	replica := func(name string) *gatewayProc {
		return startGateway(t, "", env, "--model", "openai:gpt-fake", "--store", store, "--tokens-file", tokens, "--replica-name", name)
	}
	r1, r2 := replica("replica-1"), replica("replica-2")
	alice := []string{"ACP_AGENT_GATEWAY_TOKEN=" + aliceToken}
	a := startAgentWith(t, alice, "--gateway", r1.url(), "--store", "gateway")
	b := startAgentWith(t, alice, "--gateway", r2.url(), "--store", "gateway")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cwd := t.TempDir()
	sid := a.newSession(cwd)
	fake.Push(fakemodel.Turn{Text: "Noted: pelican."})
	if _, out := a.prompt(sid, "remember the word pelican"); text(out) != "Noted: pelican." {
		t.Fatalf("first turn: %q", text(out))
	}

	// The fork's model sees the source's history.
	from := len(a.Client.Updates())
	fork, err := a.Conn.UnstableForkSession(ctx, acpsdk.UnstableForkSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.UnstableMcpServer{}})
	if err != nil {
		t.Fatalf("session/fork: %v", err)
	}
	fid := string(fork.SessionId)
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		return string(n.SessionId) == fid && n.Update.AvailableCommandsUpdate != nil
	}); err != nil {
		t.Fatal(err)
	}
	fake.Push(fakemodel.Turn{Text: "The word was pelican."})
	if _, out := a.prompt(fid, "which word?"); text(out) != "The word was pelican." {
		t.Fatalf("the fork's turn: %q", text(out))
	}
	reqs := fake.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "remember the word pelican") || !strings.Contains(body, "Noted: pelican.") {
		t.Errorf("the fork's model request lacks the source's history:\n%s", body)
	}

	// A turn of the source runs on replica 1: a delete through replica 2
	// is refused, naming it.
	fake.Push(fakemodel.Turn{Text: strings.Repeat("slow words ", 400), Delay: 100 * time.Millisecond})
	from = len(a.Client.Updates())
	done := make(chan acpsdk.StopReason, 1)
	go func() {
		stop, _ := a.Prompt(context.WithoutCancel(ctx), sid, "talk slowly")
		done <- stop
	}()
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Conn.UnstableDeleteSession(ctx, acpsdk.UnstableDeleteSessionRequest{SessionId: acpsdk.SessionId(sid)}); err == nil || !strings.Contains(err.Error(), "replica-1") || !strings.Contains(err.Error(), sid) {
		t.Fatalf("session/delete through replica 2 while replica 1 runs a turn: %v; want a refusal naming the session and replica-1", err)
	}
	if err := a.Conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	select {
	case stop := <-done:
		if stop != acpsdk.StopReasonCancelled {
			t.Errorf("the cancelled turn answered %q", stop)
		}
	case <-ctx.Done():
		t.Fatal("the cancelled turn never ended")
	}
	// The turn's lease is released behind its answer.
	if !testutil.Eventually(30*time.Second, func() bool {
		_, err = b.Conn.UnstableDeleteSession(ctx, acpsdk.UnstableDeleteSessionRequest{SessionId: acpsdk.SessionId(sid)})
		return err == nil
	}) {
		t.Fatalf("session/delete through replica 2 once the turn ended: %v", err)
	}
	res, err := b.Conn.ListSessions(ctx, acpsdk.ListSessionsRequest{})
	if err != nil || len(res.Sessions) != 1 || string(res.Sessions[0].SessionId) != fid {
		t.Errorf("session/list after the delete = %+v, %v; want the fork only", res, err)
	}
	var re *acpsdk.RequestError
	_, err = b.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if !errors.As(err, &re) || re.Code != -32002 {
		t.Errorf("session/load of the deleted session: %v; want -32002", err)
	}
	_, err = a.Conn.UnstableDeleteSession(ctx, acpsdk.UnstableDeleteSessionRequest{SessionId: acpsdk.SessionId(sid)})
	if !errors.As(err, &re) || re.Code != -32002 {
		t.Errorf("a second session/delete (through replica 1, where it was live): %v; want -32002", err)
	}
}
