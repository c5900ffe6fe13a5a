package connect_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// TestProxy_ReconnectResumes: the connection to the gateway drops in the
// middle of a prompt; the prompt is answered at once with an error saying
// so; the proxy dials again (a new Agent on the same session core, as
// another connection to the gateway would be), initializes and resumes the
// session, which gets a fresh local server; a prompt sent while it was
// away waits and is answered; the editor is told both ways; the next
// prompt works.
func TestProxy_ReconnectResumes(t *testing.T) {
	g := newGateway(t)
	e := startEditor(t, g, false, nil)
	ready := filepath.Join(t.TempDir(), "ready")
	sid := e.newSession(t.TempDir(), fixtureEntry("fixture", ready))
	first := readyPIDs(t, ready, 1)[0]
	link := g.last()

	// A long call under way: slow reports progress until cancelled.
	from := len(e.client.Updates())
	prompted := make(chan error, 1)
	go func() {
		_, err := e.conn.Prompt(e.ctx(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid),
			Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(`/call mcp__fixture__slow {"seconds":600,"steps":600}`)}})
		prompted <- err
	}()
	e.waitUpdate(from, func(n acpsdk.SessionNotification) bool {
		u := n.Update.ToolCallUpdate
		return u != nil && u.Status != nil && *u.Status == acpsdk.ToolCallStatusInProgress
	})

	release := g.holdDials()
	dialed := g.dialed()
	from = len(e.client.Updates())
	link.cut(errors.New("test: the network is down"))

	var err error
	select {
	case err = <-prompted:
	case <-e.ctx().Done():
		t.Fatal("the prompt under way was not answered after the drop")
	}
	re := requestError(t, err)
	for _, want := range []string{"lost the connection to the gateway ws://gateway.test/acp", "test: the network is down", "session/prompt", "may be lost", "send it again"} {
		if re.Code != -32603 || !strings.Contains(re.Message, want) {
			t.Errorf("the prompt's error = %d %q, want -32603 saying %q", re.Code, re.Message, want)
		}
	}
	if strings.Contains(re.Message, "secret") {
		t.Errorf("the error shows the URL's token: %q", re.Message)
	}
	e.waitText(from, sid, "Lost the connection to the gateway ws://gateway.test/acp")
	if !testutil.WaitGone(first, 30*time.Second) {
		t.Errorf("the local server (pid %d) still runs after its connection to the gateway dropped", first)
	}

	// While the proxy redials, a prompt waits for it.
	<-dialed
	held := make(chan string, 1)
	go func() {
		res, err := e.conn.Prompt(e.ctx(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid),
			Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(`/call mcp__fixture__echo {"message":"held"}`)}})
		if err != nil {
			held <- err.Error()
			return
		}
		held <- string(res.StopReason)
	}()
	release()
	back := e.waitText(from, sid, "Reconnected to the gateway ws://gateway.test/acp")
	if text := acpclientText(e, back); !strings.Contains(text, "the session is re-attached") || strings.Contains(text, "secret") {
		t.Errorf("the editor was told %q, want that the session is re-attached (and no token)", text)
	}
	select {
	case got := <-held:
		if got != string(acpsdk.StopReasonEndTurn) {
			t.Errorf("the prompt held while reconnecting ended %q, want end_turn", got)
		}
	case <-e.ctx().Done():
		t.Fatal("the prompt held while reconnecting was not answered")
	}

	second := g.last()
	if second == link {
		t.Fatal("no new connection to the gateway")
	}
	if got := second.methods(); len(got) < 2 || got[0] != acpsdk.AgentMethodInitialize || got[1] != acpsdk.AgentMethodSessionResume {
		t.Errorf("the proxy sent %q on the new connection, want initialize, session/resume first", got)
	}
	pids := readyPIDs(t, ready, 2)
	if pids[1] == first {
		t.Errorf("the resumed session's server is the old process")
	}
	_, _, out := e.prompt(sid, `/call mcp__fixture__echo {"message":"again"}`)
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted || end.Content[0].Content.Content.Text.Text != "Echo: again" {
		t.Fatalf("the next prompt after reconnecting = %+v", end)
	}
	if err := e.end(); err != nil {
		t.Errorf("Run = %v", err)
	}
	if !testutil.WaitGone(pids[1], 30*time.Second) {
		t.Errorf("the local server (pid %d) still runs after the proxy ended", pids[1])
	}
}

// TestProxy_ReconnectLoadsWithoutResume: a gateway that does not offer
// session/resume gets session/load, whose replay of the session's history
// the editor does not see a second time; the editor that takes notices is
// told with notices.
func TestProxy_ReconnectLoadsWithoutResume(t *testing.T) {
	g := newGateway(t)
	g.stripResume = true
	e := startEditor(t, g, true, nil)
	ready := filepath.Join(t.TempDir(), "ready")
	sid := e.newSession(t.TempDir(), fixtureEntry("fixture", ready))
	_, _, out := e.prompt(sid, `/call mcp__fixture__echo {"message":"before the drop"}`)
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted {
		t.Fatalf("echo = %+v", end)
	}

	from := len(e.client.Updates())
	g.last().cut(errors.New("test: cut"))
	// acp-go-sdk's client reads a notice (it predates them) as a
	// session_info_update with the notice's title: not an agent message.
	lost := e.waitText(from, sid, "Lost the connection to the gateway")
	if n := e.client.Updates()[lost].Update; n.AgentMessageChunk != nil {
		t.Errorf("the editor that takes notices was told with an agent message: %s", mustJSON(n))
	}
	back := e.waitText(from, sid, "Reconnected to the gateway")
	if n := e.client.Updates()[back].Update; n.AgentMessageChunk != nil {
		t.Errorf("the editor that takes notices was told with an agent message: %s", mustJSON(n))
	}
	if got := g.last().methods(); len(got) < 2 || got[0] != acpsdk.AgentMethodInitialize || got[1] != acpsdk.AgentMethodSessionLoad {
		t.Errorf("the proxy sent %q on the new connection, want initialize, session/load first", got)
	}
	for _, u := range e.client.Updates()[from:back] {
		if u.Update.UserMessageChunk != nil || u.Update.ToolCall != nil || strings.Contains(mustJSON(u), "before the drop") {
			t.Errorf("the editor got the replay of session/load again: %s", mustJSON(u))
		}
	}
	_, _, out = e.prompt(sid, `/call mcp__fixture__echo {"message":"after"}`)
	if end := lastToolUpdate(out); end == nil || *end.Status != acpsdk.ToolCallStatusCompleted || end.Content[0].Content.Content.Text.Text != "Echo: after" {
		t.Fatalf("the next prompt after reconnecting = %+v", end)
	}
	if pids := readyPIDs(t, ready, 2); slices.Contains(pids[1:], pids[0]) {
		t.Errorf("pids %v: the loaded session's server is not a new process", pids)
	}
}

// acpclientText returns the agent message text of update i.
func acpclientText(e *editor, i int) string {
	u := e.client.Updates()[i]
	if c := u.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		return c.Content.Text.Text
	}
	return ""
}
