package remote

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

func text(role gateway.Role, s string) gateway.Message {
	return gateway.Message{Role: role, Content: []gateway.Content{gateway.TextContent(s)}}
}

// compactedTurn is a turn whose compaction keeps the messages from from on.
func compactedTurn(from int) gateway.Turn {
	return gateway.Turn{StopReason: gateway.StopEndTurn,
		Messages:   []gateway.Message{text(gateway.RoleUser, "kept question"), text(gateway.RoleAssistant, "kept answer")},
		Usage:      gateway.Usage{InputTokens: 1200, CacheReadTokens: 3400, OutputTokens: 80, Requests: 2, Cost: 0.25},
		Compaction: &gateway.Compaction{Summary: "the old part, summarized", From: from, Loaded: []string{"mcp__fs__read"}}}
}

func TestChatSendParams_View(t *testing.T) {
	c := &gateway.Compaction{Summary: "s", From: 4}
	msgs := []gateway.Message{text(gateway.RoleUser, "q")}
	for _, tc := range []struct {
		name   string
		p      ChatSendParams
		want   gateway.View
		errSub string
	}{
		{name: "new session", p: ChatSendParams{}, want: gateway.View{}},
		{name: "empty history is none", p: ChatSendParams{History: []gateway.Message{}}, want: gateway.View{}},
		{name: "no compaction", p: ChatSendParams{History: msgs, Usage: gateway.Usage{Requests: 1}},
			want: gateway.View{Messages: msgs, Usage: gateway.Usage{Requests: 1}}},
		{name: "compacted", p: ChatSendParams{History: msgs, HistoryBase: 4, Compaction: c, Usage: gateway.Usage{OutputTokens: 9}},
			want: gateway.View{Messages: msgs, Base: 4, Compaction: c, Usage: gateway.Usage{OutputTokens: 9}}},
		{name: "compacted to nothing", p: ChatSendParams{HistoryBase: 4, Compaction: c}, want: gateway.View{Base: 4, Compaction: c}},
		{name: "negative base", p: ChatSendParams{HistoryBase: -1}, errSub: "historyBase -1 is negative"},
		{name: "base without compaction", p: ChatSendParams{History: msgs, HistoryBase: 2}, errSub: "historyBase 2 without a compaction"},
		{name: "base not the compaction's", p: ChatSendParams{History: msgs, HistoryBase: 3, Compaction: c}, errSub: "historyBase 3 is not the compaction's from (4)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tc.p.view()
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Errorf("view() = %+v, %v; want an error saying %q", v, err, tc.errSub)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(v, tc.want) {
				t.Errorf("view() = %+v, %v; want %+v", v, err, tc.want)
			}
		})
	}
}

// eventModel is a model that reports a compaction and the turn's usage as
// events, answers "ok", and records the messages of each request.
type eventModel struct {
	compaction *gateway.CompactionReport
	usage      *gateway.UsageReport

	mu       sync.Mutex
	requests [][]gateway.Message
}

func (*eventModel) Name() string { return "events" }

func (m *eventModel) Complete(_ context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
	m.mu.Lock()
	m.requests = append(m.requests, slices.Clone(req.Messages))
	m.mu.Unlock()
	emit(gateway.Event{Kind: gateway.EventCompaction, Compaction: m.compaction})
	emit(gateway.Event{Kind: gateway.EventTextDelta, Text: "ok"})
	emit(gateway.Event{Kind: gateway.EventUsage, Usage: m.usage})
	return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("ok")}}}, nil
}

// The usage and compaction events of a turn on a remote gateway reach the
// translator as they would in process, and the gateway's model sees the
// translator's view: the messages from its base on, not the compacted ones.
func TestRemote_UsageAndCompactionEventsAndTheView(t *testing.T) {
	model := &eventModel{
		compaction: &gateway.CompactionReport{Summary: "shorter now", Before: 150000, After: 2000, Reason: "threshold"},
		usage: &gateway.UsageReport{Turn: gateway.Usage{InputTokens: 10, OutputTokens: 2, Requests: 1, Cost: 0.5},
			Session: gateway.Usage{InputTokens: 1210, CacheReadTokens: 3400, OutputTokens: 82, Requests: 3, Cost: 0.75}, Used: 3412, Size: 200000},
	}
	srv := NewServer(runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "events", Label: "Events", Provider: model}}}), nil)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Shutdown(context.Background()); ts.Close() })
	r := dialRemote(t, "ws"+strings.TrimPrefix(ts.URL, "http"), "")

	hist := r.opts.History
	hist.Append(t.Context(), "acp:u", gateway.Turn{StopReason: gateway.StopEndTurn,
		Messages: []gateway.Message{text(gateway.RoleUser, "compacted question"), text(gateway.RoleAssistant, "compacted answer")}})
	hist.Append(t.Context(), "acp:u", compactedTurn(2))
	evs, emit := collectEvents()
	stop, err := r.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:u", RunID: "r1", Model: "events", Message: []gateway.Content{gateway.TextContent("next")}}, emit)
	if err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Send = %s, %v", stop, err)
	}
	var kinds []string
	var gotCompaction *gateway.CompactionReport
	var gotUsage *gateway.UsageReport
	for _, e := range *evs {
		kinds = append(kinds, e.Kind.String())
		switch e.Kind {
		case gateway.EventCompaction:
			gotCompaction = e.Compaction
		case gateway.EventUsage:
			gotUsage = e.Usage
		}
	}
	if !reflect.DeepEqual(gotCompaction, model.compaction) || !reflect.DeepEqual(gotUsage, model.usage) {
		t.Errorf("events %v: compaction %+v, usage %+v; want the model's %+v and %+v", kinds, gotCompaction, gotUsage, model.compaction, model.usage)
	}
	if i, j := slices.Index(kinds, "compaction"), slices.Index(kinds, "usage"); i < 0 || j < i {
		t.Errorf("events in the order %v; want compaction before usage", kinds)
	}
	// The model saw the view's messages and the prompt, and nothing of
	// the compacted turn.
	model.mu.Lock()
	req := model.requests[0]
	model.mu.Unlock()
	var texts []string
	for _, m := range req {
		texts = append(texts, gateway.PromptText(m.Content))
	}
	joined := strings.Join(texts, "|")
	if !strings.HasSuffix(joined, "kept question|kept answer|next") || strings.Contains(joined, "compacted question") {
		t.Errorf("the model saw %q; want the view's messages then the prompt, without the compacted ones", texts)
	}
	// The translator's view goes on from the compaction.
	if v := hist.View(t.Context(), "acp:u"); v.Base != 2 || v.Compaction == nil || v.Compaction.Summary != "the old part, summarized" || len(v.Messages) != 4 {
		t.Errorf("the translator's view after the turn: %+v", v)
	}
}

// scriptedGateway serves one translator connection with serve, which
// answers each request (connect included) and may send notifications
// first. It returns the gateway's URL.
func scriptedGateway(t *testing.T, serve func(method string, params json.RawMessage, notify func(method string, params any)) any) string {
	t.Helper()
	done := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		defer func() {
			select {
			case <-done:
			default:
				close(done)
			}
		}()
		seq := 0
		notify := func(method string, params any) {
			b, _ := json.Marshal(params)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			seq++
			m["seq"] = seq
			p, _ := json.Marshal(m)
			_ = ws.WriteJSON(rawMsg{JSONRPC: "2.0", Method: method, Params: p})
		}
		for {
			var msg rawMsg
			if err := ws.ReadJSON(&msg); err != nil {
				return
			}
			if msg.ID == nil {
				continue // a notification
			}
			res, _ := json.Marshal(serve(msg.Method, msg.Params, notify))
			_ = ws.WriteJSON(rawMsg{JSONRPC: "2.0", ID: msg.ID, Result: res})
		}
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return "ws" + strings.TrimPrefix(ts.URL, "http")
}

// The client keeps the whole turn a gateway answers (usage, compaction),
// sends the view it keeps with the next chat.send, and hands the usage and
// compaction events to the turn's emit.
func TestClient_KeepsTheWholeTurnAndSendsTheView(t *testing.T) {
	turn := compactedTurn(1)
	usage := &WireUsageReport{Turn: turn.Usage, Session: turn.Usage, Used: 4680, Size: 200000}
	failed := &WireCompactionReport{Before: 190000, Reason: "too_long", Error: "the summary request failed"}
	var mu sync.Mutex
	var sends []ChatSendParams
	url := scriptedGateway(t, func(method string, params json.RawMessage, notify func(string, any)) any {
		switch method {
		case "connect":
			return Hello{Protocol: ProtocolVersion, Models: []WireModel{{ID: "m", Label: "M"}}}
		case "chat.send":
			var p ChatSendParams
			if err := json.Unmarshal(params, &p); err != nil {
				t.Errorf("chat.send params: %v", err)
			}
			mu.Lock()
			sends = append(sends, p)
			n := len(sends)
			mu.Unlock()
			if n > 1 {
				return ChatSendResult{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{text(gateway.RoleUser, "again"), text(gateway.RoleAssistant, "yes")}}
			}
			notify("chat", ChatEvent{SessionKey: p.SessionKey, RunID: p.RunID, Kind: "compaction", Compaction: failed})
			notify("chat", ChatEvent{SessionKey: p.SessionKey, RunID: p.RunID, Kind: "compaction", Compaction: &WireCompactionReport{Summary: turn.Compaction.Summary, Before: 190000, After: 1800, Reason: "too_long"}})
			notify("chat", ChatEvent{SessionKey: p.SessionKey, RunID: p.RunID, Kind: "usage", Usage: usage})
			notify("chat", ChatEvent{SessionKey: p.SessionKey, RunID: p.RunID, Kind: "from_a_newer_gateway"})
			notify("chat.final", ChatEvent{SessionKey: p.SessionKey, RunID: p.RunID, Kind: "final", StopReason: gateway.StopEndTurn})
			return ChatSendResult{StopReason: turn.StopReason, Messages: turn.Messages, Usage: turn.Usage, Compaction: turn.Compaction}
		}
		return struct{}{}
	})
	r := dialRemote(t, url, "")
	evs, emit := collectEvents()
	if stop, err := r.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:k", RunID: "r1", Message: turn.Messages[0].Content}, emit); err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Send = %s, %v", stop, err)
	}
	want := []gateway.Event{
		{Kind: gateway.EventCompaction, Compaction: &gateway.CompactionReport{Before: 190000, Reason: "too_long", Err: "the summary request failed"}},
		{Kind: gateway.EventCompaction, Compaction: &gateway.CompactionReport{Summary: turn.Compaction.Summary, Before: 190000, After: 1800, Reason: "too_long"}},
		{Kind: gateway.EventUsage, Usage: &gateway.UsageReport{Turn: turn.Usage, Session: turn.Usage, Used: 4680, Size: 200000}},
	}
	if !reflect.DeepEqual(*evs, want) {
		t.Errorf("events =\n%+v\nwant\n%+v", *evs, want)
	}
	v := r.opts.History.View(t.Context(), "acp:k")
	if v.Base != 1 || !reflect.DeepEqual(v.Compaction, turn.Compaction) || v.Usage != turn.Usage || len(v.Messages) != 1 || gateway.PromptText(v.Messages[0].Content) != "kept answer" {
		t.Fatalf("the translator's view after the turn: %+v", v)
	}

	if _, err := r.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:k", RunID: "r2", Message: []gateway.Content{gateway.TextContent("again")}}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if first := sends[0]; first.History != nil || first.HistoryBase != 0 || first.Compaction != nil || first.Usage != (gateway.Usage{}) {
		t.Errorf("the first chat.send carried a view: %+v", first)
	}
	second := sends[1]
	if second.HistoryBase != 1 || !reflect.DeepEqual(second.Compaction, turn.Compaction) || second.Usage != turn.Usage ||
		len(second.History) != 1 || gateway.PromptText(second.History[0].Content) != "kept answer" {
		t.Errorf("the second chat.send's view: base %d, compaction %+v, usage %+v, history %+v", second.HistoryBase, second.Compaction, second.Usage, second.History)
	}
}

// A turn's usage and compaction and the session's usage total cross the
// sessions extension both ways, so a translator whose gateway keeps its
// sessions restores its view from them.
func TestStore_UsageAndCompactionOverTheProtocol(t *testing.T) {
	backing := memory.New()
	_, url := wsServer(t, &ServerOptions{Store: backing})
	st := dialStore(t, "", url).Store()
	ctx := t.Context()
	if err := st.Create(ctx, testRecord("s1")); err != nil {
		t.Fatal(err)
	}
	plain := userTurn("before")
	gt := compactedTurn(1)
	used := store.Turn{Messages: gt.Messages, StopReason: gt.StopReason, Usage: gt.Usage, Compaction: gt.Compaction}
	for _, tr := range []store.Turn{plain, used} {
		if err := st.AppendTurn(ctx, "s1", tr); err != nil {
			t.Fatal(err)
		}
	}
	if kept, _ := backing.Turns(ctx, "s1"); len(kept) != 2 || kept[1].Usage != used.Usage || !reflect.DeepEqual(kept[1].Compaction, used.Compaction) {
		t.Fatalf("the gateway's store holds %+v", kept)
	}
	turns, err := st.Turns(ctx, "s1")
	if err != nil || len(turns) != 2 || turns[0].Usage != (gateway.Usage{}) || turns[0].Compaction != nil ||
		turns[1].Usage != used.Usage || !reflect.DeepEqual(turns[1].Compaction, used.Compaction) {
		t.Fatalf("turns over the protocol = %+v, %v", turns, err)
	}
	rec, err := st.Get(ctx, "s1")
	if err != nil || rec.Usage != used.Usage {
		t.Errorf("Get: usage %+v, %v; want %+v", rec.Usage, err, used.Usage)
	}
	if recs, _, err := st.List(ctx, store.ListOptions{}); err != nil || len(recs) != 1 || recs[0].Usage != used.Usage {
		t.Errorf("List = %+v, %v", recs, err)
	}
	h := session.NewHistory(st, nil)
	if _, err := h.Attach(ctx, "acp:s1", "s1"); err != nil {
		t.Fatal(err)
	}
	if v := h.View(ctx, "acp:s1"); v.Base != 1 || !reflect.DeepEqual(v.Compaction, used.Compaction) || v.Usage != used.Usage || len(v.Messages) != 2 {
		t.Errorf("the view restored from the gateway's store: %+v", v)
	}
}

// summarizer is a model that answers every request with a summary, and
// reports the request's usage.
type summarizer struct{ usage gateway.Usage }

func (*summarizer) Name() string { return "summarizer" }

func (m *summarizer) Complete(context.Context, *gateway.Request, func(gateway.Event)) (*gateway.Response, error) {
	return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("SUMMARY")}}, Usage: m.usage}, nil
}

// A turn that compacts (/compact) on a remote gateway comes back whole:
// the translator's history gets its usage and compaction, so the next
// chat.send carries the compacted view, and its store keeps them.
func TestRemote_CompactingTurnRoundTrip(t *testing.T) {
	model := &summarizer{usage: gateway.Usage{InputTokens: 900, OutputTokens: 40, Requests: 1}}
	backing := memory.New()
	srv := NewServer(runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "summ", Label: "Summarizer", Provider: model}}}), &ServerOptions{Store: backing})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Shutdown(context.Background()); ts.Close() })
	r := dialStore(t, "", "ws"+strings.TrimPrefix(ts.URL, "http"))
	st := r.Store()
	h := session.NewHistory(st, nil)
	r.SetHistory(h)
	ctx := t.Context()
	if err := st.Create(ctx, testRecord("s1")); err != nil {
		t.Fatal(err)
	}
	earlier := gateway.Usage{InputTokens: 100, OutputTokens: 10, Requests: 1, Unpriced: 1}
	for _, tr := range []store.Turn{
		{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{text(gateway.RoleUser, "one"), text(gateway.RoleAssistant, "1")}, Usage: earlier},
		{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{text(gateway.RoleUser, "two"), text(gateway.RoleAssistant, "2")}},
	} {
		if err := st.AppendTurn(ctx, "s1", tr); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Attach(ctx, "acp:s1", "s1"); err != nil {
		t.Fatal(err)
	}
	evs, emit := collectEvents()
	stop, err := r.Send(ctx, gateway.SendRequest{SessionKey: "acp:s1", RunID: "r1", Model: "summ", Message: []gateway.Content{gateway.TextContent("/compact")}}, emit)
	if err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Send = %s, %v", stop, err)
	}
	var usage *gateway.UsageReport
	var compaction *gateway.CompactionReport
	for _, e := range *evs {
		switch e.Kind {
		case gateway.EventUsage:
			usage = e.Usage
		case gateway.EventCompaction:
			compaction = e.Compaction
		}
	}
	if compaction == nil || compaction.Summary != "SUMMARY" || compaction.Reason != "command" || usage == nil || usage.Turn.Requests != 1 || usage.Session.Requests != 2 {
		t.Fatalf("events: compaction %+v, usage %+v", compaction, usage)
	}
	// The translator's view: the summary, the messages from the /compact
	// prompt (index 4) on, and every turn's usage.
	v := h.View(ctx, "acp:s1")
	if v.Compaction == nil || v.Compaction.Summary != "SUMMARY" || v.Base != 4 || v.Compaction.From != 4 || len(v.Messages) != 2 ||
		gateway.PromptText(v.Messages[0].Content) != "/compact" || v.Usage != usage.Session {
		t.Fatalf("the translator's view after /compact: %+v (usage event %+v)", v, usage)
	}
	// The gateway's store has the turn whole, and the total.
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	turns, err := backing.Turns(ctx, "s1")
	if err != nil || len(turns) != 3 || !reflect.DeepEqual(turns[2].Compaction, v.Compaction) || turns[2].Usage != usage.Turn {
		t.Fatalf("stored turns %+v, %v", turns, err)
	}
	if rec, _ := backing.Get(ctx, "s1"); rec.Usage != usage.Session {
		t.Errorf("stored usage %+v, want the session's %+v", rec.Usage, usage.Session)
	}
}

// FuzzChatSendParams_View: whatever a translator sends, the view the gateway
// runs a turn on is one: a base that is the compaction's from (0 without
// one), and a turn folded into it never panics.
func FuzzChatSendParams_View(f *testing.F) {
	f.Add([]byte(`{"sessionKey":"k","runId":"r","history":[{"role":"user"}],"historyBase":3,"compaction":{"summary":"s","from":3},"usage":{"requests":1}}`))
	f.Add([]byte(`{"historyBase":-4,"compaction":{"from":-4}}`))
	f.Add([]byte(`{"historyBase":2}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		var p ChatSendParams
		if json.Unmarshal(frame, &p) != nil {
			return
		}
		v, err := p.view()
		if err != nil {
			return
		}
		if v.Base < 0 || (v.Compaction == nil && v.Base != 0) || (v.Compaction != nil && v.Compaction.From != v.Base) {
			t.Fatalf("view %+v accepted", v)
		}
		n := len(v.Messages)
		after := gateway.ViewAfter(v, gateway.Turn{Messages: []gateway.Message{{Role: gateway.RoleUser}}, Compaction: &gateway.Compaction{From: v.Base + n}})
		if after.Base != v.Base+n || len(after.Messages) != 1 {
			t.Fatalf("a turn compacting from its own prompt left %+v", after)
		}
	})
}
