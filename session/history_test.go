package session

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
)

// usedTurn is turn(prompt, answer) with usage u and compaction c.
func usedTurn(prompt, answer string, u gateway.Usage, c *gateway.Compaction) store.Turn {
	t := turn(prompt, answer)
	t.Usage, t.Compaction = u, c
	return t
}

func gatewayTurn(t store.Turn) gateway.Turn {
	return gateway.Turn{Messages: t.Messages, StopReason: t.StopReason, Usage: t.Usage, Compaction: t.Compaction}
}

// A session compacted in an earlier turn continues compacted once attached
// again: the view holds the latest compaction, the messages from its From
// on and the usage of every turn, while Attach still returns every turn
// for replay.
func TestHistory_AttachRestoresTheView(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	st.Create(ctx, store.Record{ID: "s", Key: "acp:s", Cwd: "/w"})
	u1 := gateway.Usage{InputTokens: 100, OutputTokens: 10, Requests: 1, Cost: 0.25}
	u2 := gateway.Usage{InputTokens: 200, CacheReadTokens: 50, OutputTokens: 20, Requests: 2, Cost: 0.5}
	u3 := gateway.Usage{InputTokens: 7, Requests: 1, Unpriced: 1}
	first := &gateway.Compaction{Summary: "one happened", From: 2}
	for _, tr := range []store.Turn{
		usedTurn("one", "1", u1, nil),
		usedTurn("two", "2", u2, first), // from its own prompt on
		usedTurn("three", "3", u3, nil),
	} {
		if err := st.AppendTurn(ctx, "s", tr); err != nil {
			t.Fatal(err)
		}
	}
	h := NewHistory(st, nil)
	turns, err := h.Attach(ctx, "acp:s", "s")
	if err != nil || len(turns) != 3 || len(turns[0].Messages) != 2 || turns[1].Compaction == nil || turns[2].Usage != u3 {
		t.Fatalf("Attach = %+v, %v; want the three turns whole", turns, err)
	}
	v := h.View(ctx, "acp:s")
	if v.Compaction == nil || v.Compaction.Summary != "one happened" || v.Base != 2 || len(v.Messages) != 4 ||
		gateway.PromptText(v.Messages[0].Content) != "two" || v.Usage != u1.Add(u2).Add(u3) {
		t.Fatalf("view after Attach = %+v; want the compaction, base 2, the 4 messages from \"two\" on and every turn's usage", v)
	}

	// A turn that compacts again: the view moves on at once, and the store
	// keeps the whole turn.
	u4 := gateway.Usage{InputTokens: 40, OutputTokens: 4, Requests: 2, Cost: 0.125}
	second := &gateway.Compaction{Summary: "one to three happened", From: 6, Loaded: []string{"mcp__fs__read"}}
	four := usedTurn("four", "4", u4, second)
	h.Append(ctx, "acp:s", gatewayTurn(four))
	v = h.View(ctx, "acp:s")
	if v.Compaction != second || v.Base != 6 || len(v.Messages) != 2 || gateway.PromptText(v.Messages[0].Content) != "four" || v.Usage != u1.Add(u2).Add(u3).Add(u4) {
		t.Errorf("view after the second compaction = %+v", v)
	}
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stored, err := st.Turns(ctx, "s")
	if err != nil || len(stored) != 4 || stored[3].Usage != u4 || !reflect.DeepEqual(stored[3].Compaction, second) {
		t.Fatalf("stored turns = %+v, %v; want the fourth with its usage and compaction", stored, err)
	}
	if rec, _ := st.Get(ctx, "s"); rec.Usage != v.Usage {
		t.Errorf("the record's usage %+v, the view's %+v: want the same total", rec.Usage, v.Usage)
	}

	// Another History over the store (a restarted agent) sees the same.
	again := NewHistory(st, nil)
	if _, err := again.Attach(ctx, "acp:s2", "s"); err != nil {
		t.Fatal(err)
	}
	if got := again.View(ctx, "acp:s2"); !reflect.DeepEqual(got, v) {
		t.Errorf("view after a restart =\n%+v\nwant\n%+v", got, v)
	}
}

// A View is a snapshot: a later Append does not show through it, and a
// caller appending to its Messages does not change the History's.
func TestHistory_ViewIsClipped(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	st.Create(ctx, store.Record{ID: "s", Key: "acp:s", Cwd: "/w"})
	h := NewHistory(st, nil)
	if _, err := h.Attach(ctx, "acp:s", "s"); err != nil {
		t.Fatal(err)
	}
	h.Append(ctx, "acp:s", gatewayTurn(turn("one", "1")))
	before := h.View(ctx, "acp:s")
	if cap(before.Messages) != len(before.Messages) {
		t.Errorf("View's messages have room to grow: len %d, cap %d", len(before.Messages), cap(before.Messages))
	}
	mine := append(before.Messages, gateway.Message{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("mine")}})
	h.Append(ctx, "acp:s", gatewayTurn(usedTurn("two", "2", gateway.Usage{OutputTokens: 1, Requests: 1}, nil)))
	after := h.View(ctx, "acp:s")
	if len(before.Messages) != 2 || before.Usage != (gateway.Usage{}) || gateway.PromptText(mine[2].Content) != "mine" {
		t.Errorf("the earlier view changed: %+v", before)
	}
	if len(after.Messages) != 4 || gateway.PromptText(after.Messages[2].Content) != "two" || after.Usage.Requests != 1 {
		t.Errorf("view after the second turn = %+v", after)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// Reload reads a session again and returns the turns committed elsewhere
// (another History over the store: another replica) since this History
// attached it or appended its last turn; its own turns are not among them.
func TestHistory_ReloadReturnsTheTurnsCommittedElsewhere(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	st.Create(ctx, store.Record{ID: "s", Key: "acp:s", Cwd: "/w"})
	st.AppendTurn(ctx, "s", turn("one", "1"))
	a, b := NewHistory(st, nil), NewHistory(st, nil)
	for _, h := range []*History{a, b} {
		if _, err := h.Attach(ctx, "acp:s", "s"); err != nil {
			t.Fatal(err)
		}
	}
	prompts := func(turns []store.Turn) (out []string) {
		for _, t := range turns {
			out = append(out, gateway.PromptText(t.Messages[0].Content))
		}
		return out
	}
	for _, p := range []string{"two", "three"} {
		if err := b.Append(ctx, "acp:s", gatewayTurn(turn(p, p))); err != nil {
			t.Fatal(err)
		}
	}
	got, err := a.Reload(ctx, "acp:s")
	if err != nil || !reflect.DeepEqual(prompts(got), []string{"two", "three"}) || len(a.View(ctx, "acp:s").Messages) != 6 {
		t.Fatalf("Reload = %q, %v (view: %d messages); want two and three, and the view of all three turns", prompts(got), err, len(a.View(ctx, "acp:s").Messages))
	}
	if err := a.Append(ctx, "acp:s", gatewayTurn(turn("four", "4"))); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Reload(ctx, "acp:s"); err != nil || len(got) != 0 {
		t.Errorf("Reload after its own turn = %q, %v; want none", prompts(got), err)
	}
	if got, err := b.Reload(ctx, "acp:s"); err != nil || !reflect.DeepEqual(prompts(got), []string{"four"}) {
		t.Errorf("the other's Reload = %q, %v; want four", prompts(got), err)
	}
	if _, err := a.Reload(ctx, "acp:nope"); err == nil {
		t.Error("Reload of a key not attached succeeded")
	}
}

// A fenced turn (Fence) is committed alone under its lease token: stored
// while the token is the session's latest; once another holder has taken
// the lease, Append fails naming the session and wrapping store.ErrFenced,
// and neither the view nor the store holds the turn. Fence 0 ends it.
// Each commit is observed as one of one turn.
func TestHistory_FencedTurnsAreRefusedOnceTheLeaseMovedOn(t *testing.T) {
	ctx := t.Context()
	st := newFleetStore()
	st.Create(ctx, store.Record{ID: "s", Key: "acp:s", Cwd: "/w"})
	h := NewHistory(st, nil)
	observed := make(chan string, 8) // told after the commit: the committer's may follow Append's return
	h.ObserveCommits(func(turns int, _ time.Duration, err error) { observed <- fmt.Sprint(turns, err == nil) })
	if _, err := h.Attach(ctx, "acp:s", "s"); err != nil {
		t.Fatal(err)
	}
	l, err := st.Acquire(ctx, "s", "me")
	if err != nil {
		t.Fatal(err)
	}
	h.Fence("acp:s", l.Token)
	if err := h.Append(ctx, "acp:s", gatewayTurn(turn("one", "1"))); err != nil {
		t.Fatalf("fenced Append under the latest token = %v", err)
	}
	st.expire("s")
	if _, err := st.Acquire(ctx, "s", "other"); err != nil {
		t.Fatal(err)
	}
	err = h.Append(ctx, "acp:s", gatewayTurn(turn("two", "2")))
	if !errors.Is(err, store.ErrFenced) || !strings.Contains(err.Error(), "session s: another holder took the session's lease while this turn ran") {
		t.Fatalf("fenced Append after another holder took the lease = %v", err)
	}
	if n := len(h.View(ctx, "acp:s").Messages); n != 2 {
		t.Errorf("the view has %d messages, want the first turn's 2", n)
	}
	if turns, _ := st.Turns(ctx, "s"); len(turns) != 1 {
		t.Errorf("%d stored turns, want 1", len(turns))
	}
	h.Fence("acp:s", 0)
	if err := h.Append(ctx, "acp:s", gatewayTurn(turn("three", "3"))); err != nil {
		t.Errorf("unfenced Append = %v", err)
	}
	var got []string
	for range 3 {
		got = append(got, wait(t, observed, "a commit observed"))
	}
	if strings.Join(got, ",") != "1 true,1 false,1 true" {
		t.Errorf("observed commits %q", got)
	}
}

// Stamp tells what the store holds after each turn, without reading it:
// the updated time (one millisecond later for each turn of the same
// millisecond) and the title (the first prompt's, unless a title was set
// and noted), on every store.
func TestHistory_StampIsTheStoredRecord(t *testing.T) {
	sq, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	for name, st := range map[string]store.Store{"memory": memory.New(), "sqlite": sq} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			h := NewHistory(st, nil)
			defer h.Close()
			for _, id := range []string{"a", "b"} {
				if err := st.Create(ctx, store.Record{ID: id, Key: "acp:" + id, Cwd: "/w", Created: time.Now(), Updated: time.Now().Add(time.Hour)}); err != nil {
					t.Fatal(err)
				}
				if _, err := h.Attach(ctx, "acp:"+id, id); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.SetTitle(ctx, "b", "Chosen"); err != nil {
				t.Fatal(err)
			}
			h.NoteTitle("acp:b", "Chosen")
			for i := range 5 { // updated an hour ahead: each turn adds 1 ms
				for _, id := range []string{"a", "b"} {
					if err := h.Append(ctx, "acp:"+id, gatewayTurn(turn(fmt.Sprintf("prompt %d of %s", i, id), "x"))); err != nil {
						t.Fatal(err)
					}
					updated, title, ok := h.Stamp("acp:" + id)
					rec, err := st.Get(ctx, id)
					if err != nil || !ok || !updated.Equal(rec.Updated) || title != rec.Title {
						t.Fatalf("turn %d of %s: Stamp %v %q %v, the store %v %q %v", i, id, updated, title, ok, rec.Updated, rec.Title, err)
					}
				}
			}
			if _, title, _ := h.Stamp("acp:a"); title != "prompt 0 of a" {
				t.Errorf("title %q, want the first prompt's", title)
			}
			if _, _, ok := h.Stamp("acp:nope"); ok {
				t.Error("Stamp of a key not attached")
			}
		})
	}
}
