package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// wantNotFound checks that err is resource-not-found (-32002) naming sid.
func wantNotFound(t *testing.T, what string, err error, sid string) {
	t.Helper()
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != -32002 || !strings.Contains(re.Message, sid) {
		t.Errorf("%s: %v; want resource-not-found (-32002) naming %s", what, err, sid)
	}
}

// session/delete of a session whose prompt is running: the prompt is
// answered cancelled, the session's tools are gone, the store no longer
// has it, and every later request about it is -32002.
func TestAgent_DeleteEndsARunningPromptFirst(t *testing.T) {
	gw := runner.NewLocal(nil)
	st := memory.New()
	h := startAgentWith(t, testOptions{Gateway: gw, Store: st})
	sid := h.newSession(acpclient.Stdio("mem", "unused", nil, nil))
	done := make(chan acpsdk.StopReason, 1)
	go func() {
		res, _ := h.conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/call mcp__mem__block")}})
		done <- res.StopReason
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, _, err := h.client.WaitFor(ctx, 0, func(n acpsdk.SessionNotification) bool {
		u := n.Update.ToolCallUpdate
		return u != nil && u.Status != nil && *u.Status == acpsdk.ToolCallStatusInProgress
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.UnstableDeleteSession(ctx, acpsdk.UnstableDeleteSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatalf("session/delete: %v", err)
	}
	select {
	case stop := <-done:
		if stop != acpsdk.StopReasonCancelled {
			t.Errorf("the running prompt answered %q, want cancelled", stop)
		}
	case <-ctx.Done():
		t.Fatal("the running prompt was not answered")
	}
	if tools := gw.Registry().Tools("acp:" + sid); len(tools) != 0 {
		t.Errorf("%d tools still registered after session/delete", len(tools))
	}
	if _, err := st.Get(ctx, sid); err == nil {
		t.Error("the store still has the deleted session")
	}
	list, err := h.conn.ListSessions(ctx, acpsdk.ListSessionsRequest{})
	if err != nil || len(list.Sessions) != 0 {
		t.Errorf("session/list after delete = %+v, %v; want none", list.Sessions, err)
	}
	_, err = h.conn.UnstableDeleteSession(ctx, acpsdk.UnstableDeleteSessionRequest{SessionId: acpsdk.SessionId(sid)})
	wantNotFound(t, "session/delete twice", err, sid)
	_, err = h.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/tools")}})
	wantNotFound(t, "session/prompt after delete", err, sid)
	_, err = h.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
	wantNotFound(t, "session/load after delete", err, sid)
}

// A fork of a live session connects its own mcpServers (not the source's),
// starts with the source's committed turns, and the two go on apart.
func TestAgent_ForkHasItsOwnServersAndTheHistory(t *testing.T) {
	st := memory.New()
	h := startAgentWith(t, testOptions{Store: st})
	src := h.newSession(acpclient.Stdio("mem", "unused", nil, nil))
	if stop, _ := h.prompt(t.Context(), src, `/call mcp__mem__echo {"message":"before the fork"}`); stop != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %s", stop)
	}
	from := len(h.client.Updates())
	var servers []acpsdk.UnstableMcpServer // the same entry in the unstable schema's type
	if b, err := json.Marshal([]acpsdk.McpServer{acpclient.Stdio("memfork", "unused", nil, nil)}); err != nil || json.Unmarshal(b, &servers) != nil {
		t.Fatal(err)
	}
	res, err := h.conn.UnstableForkSession(t.Context(), acpsdk.UnstableForkSessionRequest{SessionId: acpsdk.SessionId(src), Cwd: t.TempDir(), McpServers: servers})
	if err != nil {
		t.Fatalf("session/fork: %v", err)
	}
	fork := string(res.SessionId)
	if fork == "" || fork == src {
		t.Fatalf("session/fork answered sessionId %q (source %q)", fork, src)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, _, err := h.client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		return string(n.SessionId) == fork && n.Update.AvailableCommandsUpdate != nil
	}); err != nil {
		t.Fatalf("no available_commands_update for the fork: %v", err)
	}
	_, out := h.prompt(t.Context(), fork, "/tools")
	if text := joinText(out); !strings.Contains(text, "mcp__memfork__echo") || strings.Contains(text, "mcp__mem__echo") {
		t.Errorf("the fork's tools: %q; want its own server's, not the source's", text)
	}
	turns, err := st.Turns(ctx, fork)
	if err != nil || len(turns) != 2 || !strings.Contains(gateway.PromptText(turns[0].Messages[0].Content), "before the fork") {
		t.Fatalf("the fork's stored turns = %+v, %v; want the copied turn and its own", turns, err)
	}
	if turns, _ := st.Turns(ctx, src); len(turns) != 1 {
		t.Errorf("the source has %d turns after a turn of its fork, want 1", len(turns))
	}
	_, err = h.conn.UnstableForkSession(ctx, acpsdk.UnstableForkSessionRequest{SessionId: "sess_unknown", Cwd: t.TempDir()})
	wantNotFound(t, "session/fork of an unknown session", err, "sess_unknown")
}

// usageGateway is a gateway that ends every turn with an EventUsage, as a
// turn that asked a model does.
type usageGateway struct{ gateway.Gateway }

func (g usageGateway) Send(ctx context.Context, req gateway.SendRequest, emit func(gateway.Event)) (gateway.StopReason, error) {
	stop, err := g.Gateway.Send(ctx, req, emit)
	u := gateway.Usage{InputTokens: 10, OutputTokens: 2, Requests: 1}
	emit(gateway.Event{Kind: gateway.EventUsage, Usage: &gateway.UsageReport{Turn: u, Session: u, Used: 12, Size: 1000}})
	return stop, err
}

// After a turn: session_info_update (updatedAt as session/list shows it;
// the title after the first turn only), then the usage_update, which stays
// the turn's last update before the response.
func TestAgent_SessionInfoBeforeTheTurnsUsage(t *testing.T) {
	st := memory.New()
	history := session.NewHistory(st, nil)
	h := startAgentWith(t, testOptions{Store: st, History: history, Gateway: usageGateway{runner.NewLocal(&runner.Options{History: history})}})
	sid := h.newSession()
	for i, prompt := range []string{"/help\nand more", "/help"} {
		_, out := h.prompt(t.Context(), sid, prompt)
		if len(out) < 2 || out[len(out)-1].Update.UsageUpdate == nil || out[len(out)-2].Update.SessionInfoUpdate == nil {
			b, _ := json.Marshal(out)
			t.Fatalf("turn %d's updates end %s; want session_info_update, then usage_update", i, b)
		}
		info := out[len(out)-2].Update.SessionInfoUpdate
		list, err := h.conn.ListSessions(t.Context(), acpsdk.ListSessionsRequest{})
		if err != nil || len(list.Sessions) != 1 || info.UpdatedAt == nil || *list.Sessions[0].UpdatedAt != *info.UpdatedAt {
			t.Errorf("turn %d: session_info_update updatedAt %v; session/list %+v, %v", i, info.UpdatedAt, list.Sessions, err)
		}
		switch {
		case i == 0 && (info.Title == nil || *info.Title != "/help"):
			t.Errorf("the first turn's session_info_update title = %v, want \"/help\" (the first line)", info.Title)
		case i == 1 && info.Title != nil:
			t.Errorf("the second turn's session_info_update repeats the title %q", *info.Title)
		}
	}
}

// A title the model writes while a prompt of the session is being answered
// waits for that prompt's response: the prompt's usage_update stays its
// last update; then it is sent once, not again if the client has it.
func TestTitleChanged_WaitsForTheResponse(t *testing.T) {
	h := startAgent(t)
	sid := h.newSession()
	announced := make(chan struct{})
	close(announced)
	f := &frontEnd{a: h.agent, announced: announced}
	titles := func() []string {
		var out []string
		for _, n := range h.client.Updates() {
			if u := n.Update.SessionInfoUpdate; u != nil && u.Title != nil {
				out = append(out, *u.Title)
			}
		}
		return out
	}
	h.agent.announcer(sid).beginAnswer() // a prompt is being answered
	f.TitleChanged(t.Context(), sid, "Parser refactoring")
	if got := titles(); len(got) != 0 {
		t.Fatalf("titles %q sent while the prompt is answered", got)
	}
	title, ok := h.agent.announcer(sid).endAnswer() // its response is written
	if !ok || title != "Parser refactoring" {
		t.Fatalf("held title %q, %v", title, ok)
	}
	h.agent.announcer(sid).sendTitle(t.Context(), title)
	f.TitleChanged(t.Context(), sid, "Parser refactoring") // the client has it
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := h.client.WaitFor(ctx, 0, func(n acpsdk.SessionNotification) bool {
		return n.Update.SessionInfoUpdate != nil && n.Update.SessionInfoUpdate.Title != nil
	}); err != nil {
		t.Fatalf("no title sent: %v", err)
	}
	if got := titles(); len(got) != 1 || got[0] != "Parser refactoring" {
		t.Errorf("titles %q, want the model's once", got)
	}
}
