package acp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// badTitle is a title with what must never reach an editor: an OSC that
// sets a terminal's title, a CSI that clears its screen, a bidirectional
// override, a zero-width space, a byte-order mark, a new line.
const badTitle = "\u001b]0;PWNED\u0007\u001b[2JOld \u202egnp.exe\u200b\ufeff\nrow"

// A title read from the store (a row written before titles were made
// visible text, or by another program) reaches the client as one line of
// visible text: in session/list and in the session_info_update that ends
// the first turn after session/load. So does a title a front end is told
// of (TitleChanged).
func TestAgent_StoredTitlesAreShownAsVisibleText(t *testing.T) {
	st := memory.New()
	h := startAgentWith(t, testOptions{Store: st, History: session.NewHistory(st, nil)})
	ctx := t.Context()
	cwd := t.TempDir()
	sid := h.newSessionIn(cwd)
	if _, err := h.conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTitle(ctx, sid, badTitle); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	const want = "Old gnp.exe row"
	list, err := h.conn.ListSessions(ctx, acpsdk.ListSessionsRequest{})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Title == nil || *list.Sessions[0].Title != want {
		t.Errorf("session/list = %+v, %v; want one session titled %q", list, err, want)
	}
	infoTitles := func(ns []acpsdk.SessionNotification) []string {
		var out []string
		for _, n := range ns {
			if u := n.Update.SessionInfoUpdate; u != nil && u.Title != nil {
				out = append(out, *u.Title)
			}
		}
		return out
	}
	if _, updates := h.prompt(ctx, sid, "/help"); !slices.Equal(infoTitles(updates), []string{want}) {
		t.Errorf("session_info_update titles %q after a turn, want [%q]", infoTitles(updates), want)
	}
	// A title a front end is told of is shown so too; one with nothing
	// visible is not sent.
	from := len(h.client.Updates())
	h.agent.announcer(sid).sendTitle(ctx, "\u001b[2J\u202e\u200b")
	h.agent.announcer(sid).sendTitle(ctx, "New\u001b]0;x\u0007 \u2066title\u2069")
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, _, err := h.client.WaitFor(wctx, from, func(n acpsdk.SessionNotification) bool {
		return n.Update.SessionInfoUpdate != nil && n.Update.SessionInfoUpdate.Title != nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := infoTitles(h.client.Updates()[from:]); !slices.Equal(got, []string{"New title"}) {
		t.Errorf("session_info_update titles %q from sendTitle, want [%q]", got, "New title")
	}
	for _, n := range h.client.Updates() {
		if u := n.Update.SessionInfoUpdate; u != nil && u.Title != nil && strings.ContainsAny(*u.Title, "\u001b\u0007\u202e\u200b\ufeff\u2066\n") {
			t.Errorf("a title reached the client with hidden characters: %q", *u.Title)
		}
	}
}
