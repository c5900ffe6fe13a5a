package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// A fork of a live session (with a compaction in its history) gets a new
// id, the source's turns whole, the source's title and model, its own cwd,
// and a view the model sees as the source's, with the usage starting at
// zero; the source is left as it was, and later turns of either stay apart.
func TestCore_ForkCopiesTheHistory(t *testing.T) {
	c, _ := newTestCore(t, CoreOptions{})
	ctx := t.Context()
	src, err := c.Open(ctx, OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.SetModel(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	u := gateway.Usage{InputTokens: 100, OutputTokens: 10, Requests: 1}
	for _, tr := range []store.Turn{
		usedTurn("one", "1", u, nil),
		usedTurn("two", "2", u, &gateway.Compaction{Summary: "one happened", From: 2}),
	} {
		if err := c.history.Append(ctx, src.Key(), gatewayTurn(tr)); err != nil {
			t.Fatal(err)
		}
	}
	srcView := c.history.View(ctx, src.Key())
	cwd := t.TempDir()
	f, err := c.Open(ctx, OpenRequest{Fork: src.ID(), Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if f.ID() == src.ID() || f.Key() == src.Key() || f.Cwd() != cwd || f.Model() != "other" {
		t.Fatalf("fork: id %s key %s cwd %s model %s; want a new id and key, cwd %s, the source's model", f.ID(), f.Key(), f.Cwd(), f.Model(), cwd)
	}
	rec, err := c.Store().Get(ctx, f.ID())
	if err != nil || rec.Title != "one" || rec.Usage != (gateway.Usage{}) || rec.Cwd != cwd {
		t.Fatalf("fork's record = %+v, %v; want the source's title, no usage, its own cwd", rec, err)
	}
	turns, err := c.Store().Turns(ctx, f.ID())
	if err != nil || len(turns) != 2 || turns[1].Compaction == nil || turns[1].Compaction.Summary != "one happened" || turns[0].Usage != (gateway.Usage{}) {
		t.Fatalf("fork's turns = %+v, %v; want both, the compaction kept, usage zero", turns, err)
	}
	v := c.history.View(ctx, f.Key())
	if v.Compaction == nil || v.Base != srcView.Base || len(v.Messages) != len(srcView.Messages) || v.Usage != (gateway.Usage{}) {
		t.Fatalf("fork's view = %+v; want the source's (%+v) with usage zero", v, srcView)
	}
	if err := c.history.Append(ctx, f.Key(), gatewayTurn(store.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("fork only")}}}})); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.Store().Turns(ctx, src.ID()); len(st) != 2 {
		t.Errorf("the source has %d turns after a turn of its fork, want 2", len(st))
	}
	// A stored session that is not live forks too; an unknown one is
	// ErrNotFound.
	src.End()
	f2, err := c.Open(ctx, OpenRequest{Fork: src.ID(), Cwd: cwd})
	if err != nil {
		t.Fatalf("fork of a stored session: %v", err)
	}
	if turns, _ := c.Store().Turns(ctx, f2.ID()); len(turns) != 2 {
		t.Errorf("fork of a stored session has %d turns, want 2", len(turns))
	}
	if _, err := c.Open(ctx, OpenRequest{Fork: "sess_nope", Cwd: cwd}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("fork of an unknown session: %v; want ErrNotFound", err)
	}
	// A source whose stored title holds escape sequences (a row written
	// before titles were made visible text) passes none on to its fork.
	if err := c.Store().SetTitle(ctx, src.ID(), "\u001b]0;PWNED\u0007\u001b[2JOld \u202egnp.exe\u200b\nrow"); err != nil {
		t.Fatal(err)
	}
	f3, err := c.Open(ctx, OpenRequest{Fork: src.ID(), Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := c.Store().Get(ctx, f3.ID()); err != nil || rec.Title != "Old gnp.exe row" {
		t.Errorf("fork of a source with a bad stored title is titled %q, %v; want %q", rec.Title, err, "Old gnp.exe row")
	}
}

// Delete ends a live session first, then removes it from the store; a
// second Delete is ErrNotFound, as is one of an unknown id.
func TestCore_DeleteEndsTheLiveSessionAndRemovesIt(t *testing.T) {
	c, gw := newTestCore(t, CoreOptions{})
	ctx := t.Context()
	s, err := c.Open(ctx, OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, PromptRequest{Content: []gateway.Content{gateway.TextContent("/help")}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, s.ID()); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if c.Lookup(s.ID()) != nil {
		t.Error("the session is still live after Delete")
	}
	if _, err := s.Prompt(ctx, PromptRequest{Content: []gateway.Content{gateway.TextContent("/help")}}); !errors.Is(err, ErrEnded) {
		t.Errorf("a prompt of the deleted session: %v; want ErrEnded", err)
	}
	if log := strings.Join(gw.log(), ","); !strings.Contains(log, "clear "+s.Key()) {
		t.Errorf("the session's tools were not cleared: %s", log)
	}
	if _, err := c.Store().Get(ctx, s.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
	for _, id := range []string{s.ID(), "sess_unknown"} {
		if err := c.Delete(ctx, id); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), id) {
			t.Errorf("Delete(%s): %v; want ErrNotFound naming it", id, err)
		}
	}
}

// SetTitle normalizes the title, refuses an empty one, and keeps it over
// the automatic title of a later first turn.
func TestCore_SetTitle(t *testing.T) {
	c, _ := newTestCore(t, CoreOptions{})
	ctx := t.Context()
	s, err := c.Open(ctx, OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.SetTitle(ctx, s.ID(), "  Fix\n the   build ")
	if err != nil || got != "Fix the build" {
		t.Fatalf("SetTitle = %q, %v; want %q", got, err, "Fix the build")
	}
	if _, err := s.Prompt(ctx, PromptRequest{Content: []gateway.Content{gateway.TextContent("/help")}}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := c.Store().Get(ctx, s.ID()); rec.Title != "Fix the build" {
		t.Errorf("title after the first turn = %q; the set title must stay", rec.Title)
	}
	if got, _ := c.SetTitle(ctx, s.ID(), strings.Repeat("x", 300)); len([]rune(got)) != MaxTitle || !strings.HasSuffix(got, "…") {
		t.Errorf("a long title is stored as %q (%d characters); want it cut to %d", got, len([]rune(got)), MaxTitle)
	}
	if _, err := c.SetTitle(ctx, s.ID(), " \n "); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetTitle of white space: %v; want ErrInvalid", err)
	}
	if got, err := c.SetTitle(ctx, s.ID(), "\u001b]0;PWNED\u0007\u001b[2JFix \u202egnp.exe\u200b"); err != nil || got != "Fix gnp.exe" {
		t.Errorf("SetTitle with escapes = %q, %v; want %q", got, err, "Fix gnp.exe")
	}
	if _, err := c.SetTitle(ctx, s.ID(), "\u001b[2J\u202e\u200b"); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetTitle of nothing visible: %v; want ErrInvalid", err)
	}
	if _, err := c.SetTitle(ctx, "sess_unknown", "t"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetTitle of an unknown session: %v; want ErrNotFound", err)
	}
}
