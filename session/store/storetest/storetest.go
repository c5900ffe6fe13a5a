// Package storetest is the contract every [store.Store] keeps, as a test
// suite: run it against a new store implementation from that store's
// tests.
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openMyStore(t) })
//	}
//
// The suite checks records and transcripts round trip whole (content
// blocks, tool calls, results, each turn's usage and compaction), List's
// order, paging, cwd and tenant filters, AppendTurn's order, updated times,
// titles (automatic and set), modes (set, kept as given, "" by default),
// usage totals, Delete, ErrNotFound for unknown sessions, and appends
// from several goroutines at once.
package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// Run runs the contract as subtests of t. open returns a new, empty store
// for one subtest (the store is the subtest's: open registers its Close
// with t.Cleanup); subtests do not run in parallel.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	for _, c := range []struct {
		name string
		test func(*testing.T, store.Store)
	}{
		{"RoundTrip", roundTrip},
		{"ListPagingOrderAndCwd", listPaging},
		{"TenantsAreListedApart", tenants},
		{"AppendTurnOrderAndTitle", appendOrderAndTitle},
		{"UsageAndCompaction", usageAndCompaction},
		{"SetServersAndModel", setServersAndModel},
		{"SetTitle", setTitle},
		{"SetMode", setMode},
		{"SetServerChanges", setServerChanges},
		{"Delete", deleteSession},
		{"NotFound", notFound},
		{"CreateTwiceFails", createTwice},
		{"ConcurrentAppends", concurrentAppends},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, open(t)) })
	}
	t.Run("RecordHoldsNoSecrets", recordHoldsNoSecrets)
}

// Turn is a finished turn: a user prompt and an assistant answer.
func Turn(prompt, answer string) store.Turn {
	return store.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{
		{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(prompt)}},
		{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(answer)}},
	}}
}

func create(t *testing.T, st store.Store, r store.Record) {
	t.Helper()
	if err := st.Create(t.Context(), r); err != nil {
		t.Fatalf("Create(%s): %v", r.ID, err)
	}
}

func roundTrip(t *testing.T, st store.Store) {
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	create(t, st, store.Record{ID: "sess_a", Key: "acp:sess_a", Cwd: "/w", Created: now, Updated: now, Model: "anthropic:m", Servers: []store.Server{{Name: "fs", Transport: "stdio"}}})
	tool := store.Turn{StopReason: gateway.StopCancelled, Messages: []gateway.Message{
		{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("Fix the build\nplease"), {Type: gateway.ContentImage, Data: []byte{1, 2}, MIMEType: "image/png"}}},
		{Role: gateway.RoleAssistant, Thinking: "hm", ToolCalls: []gateway.ToolCall{{ID: "c1", Name: "mcp__fs__read", Args: map[string]any{"path": "a"}}}},
		{Role: gateway.RoleTool, ToolCallID: "c1", ToolName: "mcp__fs__read", ToolTitle: "fs/read", ToolKind: gateway.ToolKindRead,
			Result: &gateway.Result{IsError: true, Content: []gateway.Content{gateway.TextContent("cancelled")}, Raw: map[string]any{"isError": true}}},
	}}
	if err := st.AppendTurn(ctx, "sess_a", tool); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendTurn(ctx, "sess_a", Turn("second", "ok")); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, "sess_a")
	if err != nil || got.ID != "sess_a" || got.Key != "acp:sess_a" || got.Cwd != "/w" || got.Model != "anthropic:m" || got.Title != "Fix the build" ||
		!got.Created.Equal(now) || !got.Updated.After(now) || len(got.Servers) != 1 || got.Servers[0] != (store.Server{Name: "fs", Transport: "stdio"}) {
		t.Errorf("record = %+v, %v", got, err)
	}
	turns, err := st.Turns(ctx, "sess_a")
	if err != nil || len(turns) != 2 || turns[0].StopReason != gateway.StopCancelled || turns[1].StopReason != gateway.StopEndTurn {
		t.Fatalf("turns = %+v, %v", turns, err)
	}
	m := turns[0].Messages
	if len(m) != 3 || string(m[0].Content[1].Data) != "\x01\x02" || m[0].Content[1].MIMEType != "image/png" || m[1].ToolCalls[0].Args["path"] != "a" ||
		m[2].ToolTitle != "fs/read" || m[2].ToolKind != gateway.ToolKindRead || !m[2].Result.IsError || m[2].Result.Content[0].Text != "cancelled" || m[1].Thinking != "hm" {
		t.Errorf("messages = %+v", m)
	}
	// A returned record is a copy.
	got.Servers[0].Name = "changed"
	if again, _ := st.Get(ctx, "sess_a"); again.Servers[0].Name != "fs" {
		t.Errorf("changing a returned record changed the store: %+v", again)
	}
}

// Each turn keeps its usage and compaction; a turn without them reads zero
// usage and no compaction; the record's usage is the sum of its turns'.
func usageAndCompaction(t *testing.T, st store.Store) {
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	create(t, st, store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Created: now, Updated: now})
	create(t, st, store.Record{ID: "other", Key: "acp:other", Cwd: "/w", Created: now, Updated: now})
	if r, err := st.Get(ctx, "s"); err != nil || r.Usage != (gateway.Usage{}) {
		t.Fatalf("a new session's usage = %+v, %v; want zero", r.Usage, err)
	}
	// Costs are sums of binary fractions: exact in every engine's float.
	u1 := gateway.Usage{InputTokens: 1200, CacheReadTokens: 3400, CacheWriteTokens: 500, OutputTokens: 80, ThoughtTokens: 30, Requests: 2, Cost: 0.25}
	u2 := gateway.Usage{InputTokens: 7, OutputTokens: 9, Requests: 1, Unpriced: 1}
	compaction := &gateway.Compaction{Summary: "We fixed the build.\nNext: tests.", From: 2, Loaded: []string{"mcp__fs__read", "mcp__fs__write"},
		Head: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("compact please")}}}}
	plain := Turn("before usage was kept", "ok")
	used := Turn("compact please", "done")
	used.Usage, used.Compaction = u1, compaction
	last := Turn("and now?", "tests")
	last.Usage = u2
	for _, tr := range []store.Turn{plain, used, last} {
		if err := st.AppendTurn(ctx, "s", tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AppendTurn(ctx, "other", used); err != nil {
		t.Fatal(err)
	}
	turns, err := st.Turns(ctx, "s")
	if err != nil || len(turns) != 3 {
		t.Fatalf("turns = %+v, %v", turns, err)
	}
	if turns[0].Usage != (gateway.Usage{}) || turns[0].Compaction != nil {
		t.Errorf("a turn without usage or compaction reads %+v, %+v; want zero and nil", turns[0].Usage, turns[0].Compaction)
	}
	if turns[1].Usage != u1 || !reflect.DeepEqual(turns[1].Compaction, compaction) || turns[1].Messages[0].Content[0].Text != "compact please" {
		t.Errorf("turn with usage and compaction reads %+v, %+v", turns[1].Usage, turns[1].Compaction)
	}
	if turns[2].Usage != u2 || turns[2].Compaction != nil {
		t.Errorf("turn with usage only reads %+v, %+v", turns[2].Usage, turns[2].Compaction)
	}
	want := u1.Add(u2)
	if r, err := st.Get(ctx, "s"); err != nil || r.Usage != want {
		t.Errorf("Get: usage %+v, %v; want the turns' sum %+v", r.Usage, err, want)
	}
	recs, _, err := st.List(ctx, store.ListOptions{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("List = %+v, %v", recs, err)
	}
	for _, r := range recs {
		if w := map[string]gateway.Usage{"s": want, "other": u1}[r.ID]; r.Usage != w {
			t.Errorf("List: %s's usage %+v, want %+v", r.ID, r.Usage, w)
		}
	}
	// What Turns returns is the caller's: changing it changes no stored turn.
	turns[1].Compaction.Summary, turns[1].Compaction.Loaded[0] = "changed", "changed"
	compaction.Summary = "changed too"
	if again, _ := st.Turns(ctx, "s"); again[1].Compaction.Summary != "We fixed the build.\nNext: tests." || again[1].Compaction.Loaded[0] != "mcp__fs__read" {
		t.Errorf("changing a turn's compaction after AppendTurn or Turns changed the store: %+v", again[1].Compaction)
	}
	// A session created with a usage keeps it, and its turns add to it.
	create(t, st, store.Record{ID: "carried", Key: "acp:carried", Cwd: "/w", Created: now, Updated: now, Usage: u2})
	if err := st.AppendTurn(ctx, "carried", used); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Get(ctx, "carried"); err != nil || r.Usage != u2.Add(u1) {
		t.Errorf("created with a usage, then a turn: %+v, %v; want %+v", r.Usage, err, u2.Add(u1))
	}
}

func listPaging(t *testing.T, st store.Store) {
	ctx := t.Context()
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 120 {
		cwd := "/a"
		if i%3 == 0 {
			cwd = "/b"
		}
		at := base.Add(time.Duration(i) * time.Second)
		create(t, st, store.Record{ID: fmt.Sprintf("sess_%03d", i), Key: "k", Cwd: cwd, Created: at, Updated: at})
	}
	var all []store.Record
	cursor, pages := "", 0
	for {
		page, next, err := st.List(ctx, store.ListOptions{Cursor: cursor, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		pages++
		if next == "" || pages > 10 {
			break
		}
		cursor = next
	}
	if len(all) != 120 || pages != 3 || all[0].ID != "sess_119" || all[119].ID != "sess_000" {
		t.Fatalf("%d sessions in %d pages, first %s last %s", len(all), pages, all[0].ID, all[len(all)-1].ID)
	}
	for i := 1; i < len(all); i++ {
		if !all[i].Updated.Before(all[i-1].Updated) {
			t.Fatalf("not newest first at %d", i)
		}
	}
	b, next, err := st.List(ctx, store.ListOptions{Cwd: "/b", Limit: 100})
	if err != nil || len(b) != 40 || next != "" || b[0].ID != "sess_117" {
		t.Errorf("cwd filter: %d sessions, next %q, %v", len(b), next, err)
	}
	def, next, err := st.List(ctx, store.ListOptions{})
	if err != nil || len(def) != 50 || next == "" {
		t.Errorf("default limit: %d sessions, next %q, %v; want 50 and a cursor", len(def), next, err)
	}
	// Sessions updated in the same millisecond page by id, none lost.
	for i := range 5 {
		create(t, st, store.Record{ID: fmt.Sprintf("same_%d", i), Key: "k", Cwd: "/same", Created: base, Updated: base})
	}
	var same []string
	cursor = ""
	for range 10 {
		page, next, err := st.List(ctx, store.ListOptions{Cwd: "/same", Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			same = append(same, r.ID)
		}
		if cursor = next; next == "" {
			break
		}
	}
	if strings.Join(same, ",") != "same_4,same_3,same_2,same_1,same_0" {
		t.Errorf("equal times paged as %v", same)
	}
	if _, _, err := st.List(ctx, store.ListOptions{Cursor: "!!"}); err == nil {
		t.Error("a bad cursor was accepted")
	}
}

func tenants(t *testing.T, st store.Store) {
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	for _, r := range []store.Record{
		{ID: "sess_local", Key: "acp:sess_local", Cwd: "/w", Created: now, Updated: now},
		{ID: "sess_a", Key: "acp:sess_a", Cwd: "/w", Created: now, Updated: now, Tenant: "alice"},
		{ID: "sess_b", Key: "acp:sess_b", Cwd: "/w", Created: now, Updated: now, Tenant: "bob"},
	} {
		create(t, st, r)
	}
	for tenant, want := range map[string]string{"": "sess_local", "alice": "sess_a", "bob": "sess_b"} {
		for _, cwd := range []string{"", "/w"} {
			recs, _, err := st.List(ctx, store.ListOptions{Tenant: tenant, Cwd: cwd})
			if err != nil || len(recs) != 1 || recs[0].ID != want || recs[0].Tenant != tenant {
				t.Errorf("List(tenant %q, cwd %q) = %+v, %v; want only %s", tenant, cwd, recs, err, want)
			}
		}
	}
	if rec, err := st.Get(ctx, "sess_a"); err != nil || rec.Tenant != "alice" {
		t.Errorf("Get = %+v, %v; want tenant alice", rec, err)
	}
}

func appendOrderAndTitle(t *testing.T, st store.Store) {
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	create(t, st, store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Created: now, Updated: now})
	create(t, st, store.Record{ID: "titled", Key: "acp:titled", Cwd: "/w", Title: "kept", Created: now, Updated: now})
	long := strings.Repeat("é", 100) + "\nsecond line"
	prev := now
	for i, p := range []string{long, "two", "three"} {
		if err := st.AppendTurn(ctx, "s", Turn(p, fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		r, err := st.Get(ctx, "s")
		if err != nil || !r.Updated.After(prev) {
			t.Fatalf("after turn %d: updated %v, not after %v (%v)", i, r.Updated, prev, err)
		}
		prev = r.Updated
	}
	r, _ := st.Get(ctx, "s")
	if want := strings.Repeat("é", 79) + "…"; r.Title != want {
		t.Errorf("title = %q, want the first prompt's first line cut to 80 characters %q", r.Title, want)
	}
	turns, err := st.Turns(ctx, "s")
	if err != nil || len(turns) != 3 || turns[1].Messages[0].Content[0].Text != "two" || turns[2].Messages[1].Content[0].Text != "2" {
		t.Errorf("turns = %+v, %v; want the three in order", turns, err)
	}
	if err := st.AppendTurn(ctx, "titled", Turn("new title?", "no")); err != nil {
		t.Fatal(err)
	}
	if r, _ := st.Get(ctx, "titled"); r.Title != "kept" {
		t.Errorf("a turn replaced the title: %q", r.Title)
	}
	if turns, err := st.Turns(ctx, "titled"); err != nil || len(turns) != 1 {
		t.Errorf("turns of another session: %d, %v", len(turns), err)
	}
}

func setServersAndModel(t *testing.T, st store.Store) {
	ctx := t.Context()
	create(t, st, store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Created: time.Now(), Updated: time.Now(), Model: "a"})
	if r, err := st.Get(ctx, "s"); err != nil || r.Model != "a" {
		t.Errorf("after Create: model %q, %v", r.Model, err)
	}
	servers := []store.Server{{Name: "a", Transport: "http"}, {Name: "b", Transport: "sse"}}
	if err := st.SetServers(ctx, "s", servers); err != nil {
		t.Fatal(err)
	}
	if err := st.SetModel(ctx, "s", "openai:x"); err != nil {
		t.Fatal(err)
	}
	r, err := st.Get(ctx, "s")
	if err != nil || !reflect.DeepEqual(r.Servers, servers) || r.Model != "openai:x" {
		t.Errorf("record = %+v, %v", r, err)
	}
	if recs, _, err := st.List(ctx, store.ListOptions{}); err != nil || len(recs) != 1 || recs[0].Model != "openai:x" || !reflect.DeepEqual(recs[0].Servers, servers) {
		t.Errorf("List after SetModel and SetServers: %+v, %v", recs, err)
	}
	if err := st.SetServers(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if r, _ := st.Get(ctx, "s"); len(r.Servers) != 0 {
		t.Errorf("servers after SetServers(nil) = %+v", r.Servers)
	}
}

func notFound(t *testing.T, st store.Store) {
	ctx := t.Context()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("%s of an unknown session: %v; want ErrNotFound naming it", what, err)
		}
	}
	_, err := st.Get(ctx, "nope")
	check("Get", err)
	_, err = st.Turns(ctx, "nope")
	check("Turns", err)
	check("AppendTurn", st.AppendTurn(ctx, "nope", Turn("a", "b")))
	check("SetServers", st.SetServers(ctx, "nope", nil))
	check("SetModel", st.SetModel(ctx, "nope", "m"))
	check("SetMode", st.SetMode(ctx, "nope", "read-only"))
	check("SetTitle", st.SetTitle(ctx, "nope", "t"))
	check("Delete", st.Delete(ctx, "nope"))
	if fs, ok := st.(store.FencedStore); ok {
		if err := fs.AppendTurnFenced(ctx, "nope", 1, Turn("a", "b")); err == nil {
			t.Error("AppendTurnFenced of an unknown session succeeded")
		}
	}
}

func createTwice(t *testing.T, st store.Store) {
	r := store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Title: "first", Created: time.Now(), Updated: time.Now()}
	create(t, st, r)
	r.Title = "second"
	if err := st.Create(t.Context(), r); err == nil {
		t.Error("creating a session twice succeeded")
	}
	if got, _ := st.Get(t.Context(), "s"); got.Title != "first" {
		t.Errorf("the second Create changed the record: %+v", got)
	}
}

// Several goroutines append to one session and to sessions of their own:
// every turn is kept, each goroutine's turns in its order, and every turn's
// usage is in the session's total.
func concurrentAppends(t *testing.T, st store.Store) {
	ctx := t.Context()
	const writers, turns = 4, 20
	create(t, st, store.Record{ID: "shared", Key: "acp:shared", Cwd: "/w", Created: time.Now(), Updated: time.Now()})
	for w := range writers {
		create(t, st, store.Record{ID: fmt.Sprintf("own_%d", w), Key: "k", Cwd: "/w", Created: time.Now(), Updated: time.Now()})
	}
	one := gateway.Usage{InputTokens: 3, OutputTokens: 1, Requests: 1, Cost: 0.5}
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*turns)
	for w := range writers {
		wg.Go(func() {
			for i := range turns {
				tr := Turn(fmt.Sprintf("%d:%d", w, i), "x")
				tr.Usage = one
				if err := st.AppendTurn(ctx, "shared", tr); err != nil {
					errs <- err
				}
				if err := st.AppendTurn(ctx, fmt.Sprintf("own_%d", w), Turn(fmt.Sprint(i), "x")); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent append: %v", err)
	}
	shared, err := st.Turns(ctx, "shared")
	if err != nil || len(shared) != writers*turns {
		t.Fatalf("shared session: %d turns, %v; want %d", len(shared), err, writers*turns)
	}
	n := int64(writers * turns)
	want := gateway.Usage{InputTokens: 3 * n, OutputTokens: n, Requests: int(n), Cost: 0.5 * float64(n)}
	if r, err := st.Get(ctx, "shared"); err != nil || r.Usage != want {
		t.Errorf("shared session's usage %+v, %v; want every turn's, %+v", r.Usage, err, want)
	}
	next := make([]int, writers)
	for _, tr := range shared {
		var w, i int
		fmt.Sscanf(tr.Messages[0].Content[0].Text, "%d:%d", &w, &i)
		if i != next[w] {
			t.Fatalf("writer %d's turn %d came where %d was due", w, i, next[w])
		}
		next[w]++
	}
	for w := range writers {
		own, err := st.Turns(ctx, fmt.Sprintf("own_%d", w))
		if err != nil || len(own) != turns || own[turns-1].Messages[0].Content[0].Text != fmt.Sprint(turns-1) {
			t.Errorf("own_%d: %d turns, %v", w, len(own), err)
		}
	}
}

// A Record keeps no secret values: of MCP servers only names and
// transports (the client sends env and headers again on session/load).
func recordHoldsNoSecrets(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[store.Record](), reflect.TypeFor[store.Server]()} {
		for f := range typ.Fields() {
			name := strings.ToLower(f.Name)
			if f.Type.Kind() == reflect.Map || strings.Contains(name, "env") || strings.Contains(name, "header") || strings.Contains(name, "secret") || strings.Contains(name, "token") {
				t.Errorf("%s.%s (%s) could hold a secret: a store must not keep env or header values", typ.Name(), f.Name, f.Type)
			}
		}
	}
}
