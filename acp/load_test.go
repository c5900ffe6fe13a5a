package acp

import (
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// Two agents over one store and its leases are two replicas of a fleet: a
// client that loaded a session on one is shown, before its next turn's
// own updates, the turn another client ran on the other meanwhile, as
// session/load replays it (session.Replayer).
func TestAgent_ReplaysTheTurnsOfAnotherReplica(t *testing.T) {
	st, leases := memory.New(), &store.LocalLeases{}
	replica := func(name string) *harness {
		core := session.NewCore(&session.CoreOptions{Store: st, History: session.NewHistory(st, nil), Leases: leases, Replica: name})
		t.Cleanup(core.Shutdown)
		return startAgentOn(t, New(core, nil))
	}
	a, b := replica("replica-a"), replica("replica-b")
	cwd := t.TempDir()
	sid := a.newSessionIn(cwd)
	if _, err := b.conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	a.prompt(t.Context(), sid, "/help from a")
	_, updates := b.prompt(t.Context(), sid, "/help from b")
	var users []string
	for _, n := range updates {
		if c := n.Update.UserMessageChunk; c != nil && c.Content.Text != nil {
			users = append(users, c.Content.Text.Text)
		}
	}
	if len(users) != 1 || users[0] != "/help from a" || updates[0].Update.UserMessageChunk == nil {
		t.Errorf("replica-b's turn began with %d updates, user messages %q; want replica-a's turn replayed first", len(updates), users)
	}
	if text := joinText(updates); len(text) == 0 {
		t.Error("replica-b's turn showed no answer")
	}
}
