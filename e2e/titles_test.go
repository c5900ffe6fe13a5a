package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
)

// infoTitles returns the titles of the session_info_updates in ns.
func infoTitles(ns []acpsdk.SessionNotification) []string {
	var out []string
	for _, n := range ns {
		if u := n.Update.SessionInfoUpdate; u != nil && u.Title != nil {
			out = append(out, *u.Title)
		}
	}
	return out
}

// TestTitles_StoredEscapesNeverReachTheEditor: through the binary and its
// SQLite store, the first prompt's words title a session as visible text,
// and a title already in the store with escape sequences (a row written
// before titles were made visible text, or by another program) reaches the
// editor as one line of visible text: in session/list and in the
// session_info_update of a turn after session/load.
func TestTitles_StoredEscapesNeverReachTheEditor(t *testing.T) {
	t.Parallel()
	db, cwd := filepath.Join(t.TempDir(), "sessions.db"), t.TempDir()
	a := startAgentWith(t, nil, "--store", db)
	sid := a.newSession(cwd)
	_, updates := a.prompt(sid, "\u001b]2;PWNED\u0007please \u001b[31mrefactor\u001b[0m \u2066it\u2069\u200b\nmore")
	if got := infoTitles(updates); len(got) != 1 || got[0] != "please refactor it" {
		t.Errorf("first turn's session_info_update titles %q, want [%q]", got, "please refactor it")
	}
	if err := a.Stop(20 * time.Second); err != nil {
		t.Fatalf("first agent: %v", err)
	}

	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	err = st.SetTitle(t.Context(), sid, "\u001b]0;PWNED\u0007\u001b[2J… \u202egnp.exe\u200b\ufeff\nold row")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	const want = "… gnp.exe old row"
	b := startAgentWith(t, nil, "--store", db)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	list, err := b.Conn.ListSessions(ctx, acpsdk.ListSessionsRequest{Cwd: &cwd})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Title == nil || *list.Sessions[0].Title != want {
		t.Errorf("session/list = %+v, %v; want the session titled %q", list, err, want)
	}
	if _, err := b.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	_, updates = b.prompt(sid, "/help")
	if got := infoTitles(updates); len(got) != 1 || got[0] != want {
		t.Errorf("session_info_update titles %q after session/load, want [%q]", got, want)
	}
	for _, title := range append(infoTitles(a.Client.Updates()), infoTitles(b.Client.Updates())...) {
		if strings.ContainsAny(title, "\u001b\u0007\u202e\u200b\ufeff\u2066\n") {
			t.Errorf("a title reached the editor with hidden characters: %q", title)
		}
	}
}
