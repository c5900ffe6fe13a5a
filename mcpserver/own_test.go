package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// TestReopen_EditorSessionIsRefused: a key of the issued form that names a
// session an editor opened over ACP on the same core and store (here live,
// in another directory, and then in the server's own) is refused with an
// isError result that names the key and both directories; the editor's
// session keeps its instance and its transcript, and the server goes on
// serving.
func TestReopen_EditorSessionIsRefused(t *testing.T) {
	here := t.TempDir()
	e := start(t, setup{cwd: here})
	cs := e.connect(nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, dir := range []string{t.TempDir(), here} {
		// What the ACP front end does on session/new (no _meta.sessionKey)
		// and session/prompt.
		ed, err := e.core.Open(ctx, session.OpenRequest{Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ed.Prompt(ctx, session.PromptRequest{Content: []gateway.Content{gateway.TextContent("/tools")}}); err != nil {
			t.Fatal(err)
		}
		before, _ := e.core.Store().Get(ctx, ed.ID())

		r := ask(t, cs, "/tools", ed.ID())
		if !r.IsError || !strings.Contains(r.text, `sessionKey "`+ed.ID()+`"`) || !strings.Contains(r.text, "an editor opened over ACP in "+dir) ||
			!strings.Contains(r.text, "this server runs in "+here) || !strings.Contains(r.text, "session/load") {
			t.Errorf("editor's session in %s: result %v %q; want isError naming the key, both directories and what to do", dir, r.IsError, r.text)
		}
		if e.core.Lookup(ed.ID()) != ed {
			t.Errorf("the editor's live session was replaced")
		}
		after, _ := e.core.Store().Get(ctx, ed.ID())
		turns, _ := e.core.Store().Turns(ctx, ed.ID())
		if len(turns) != 1 || !after.Updated.Equal(before.Updated) || after.Cwd != dir || after.Key != before.Key {
			t.Errorf("the editor's session changed: %d turns, record %+v, was %+v", len(turns), after, before)
		}
		ed.End()
	}
	if r := ask(t, cs, "/help", "").ok(t); !strings.HasPrefix(r.out.SessionKey, "sess_") {
		t.Errorf("a new conversation after the refusals: %+v", r.out)
	}
}

// TestReopen_OtherDirectoryIsRefused: a conversation of the server's,
// under an issued key or a key of the client's own, continues on the same
// store only in the directory it was started in; a server elsewhere
// refuses it, naming the key and both directories, and stores nothing.
func TestReopen_OtherDirectoryIsRefused(t *testing.T) {
	st := memory.New()
	dirA, dirB := t.TempDir(), t.TempDir()
	a := start(t, setup{store: st, cwd: dirA})
	issued := ask(t, a.connect(nil), "/tools", "").ok(t).out.SessionKey
	ask(t, a.connect(nil), "/tools", "project-x").ok(t)
	a.shutdown()
	a.core.Shutdown()
	ctx := context.Background()
	count := func() int {
		recs, _, err := st.List(ctx, store.ListOptions{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			turns, _ := st.Turns(ctx, r.ID)
			n += len(turns)
		}
		return n
	}
	stored := count()

	b := start(t, setup{store: st, cwd: dirB})
	cs := b.connect(nil)
	for _, key := range []string{issued, "project-x"} {
		r := ask(t, cs, "/tools", key)
		if !r.IsError || !strings.Contains(r.text, `sessionKey "`+key+`"`) || !strings.Contains(r.text, "started in "+dirA) ||
			!strings.Contains(r.text, "this server runs in "+dirB) {
			t.Errorf("key %q in another directory: result %v %q; want isError naming the key and both directories", key, r.IsError, r.text)
		}
	}
	if n := count(); n != stored {
		t.Errorf("%d stored turns after the refusals, want %d", n, stored)
	}
	b.shutdown()
	b.core.Shutdown()

	c := start(t, setup{store: st, cwd: dirA})
	cs = c.connect(nil)
	for _, key := range []string{issued, "project-x"} {
		ask(t, cs, "/tools", key).ok(t)
	}
}
