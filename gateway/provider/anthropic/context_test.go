package anthropic_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/anthropic"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// history is a user message, then n tool uses whose results are size bytes.
func history(n, size int) []gateway.Message {
	msgs := []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("Tail the build log.")}}}
	for i := range n {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			gateway.Message{Role: gateway.RoleAssistant, ToolCalls: []gateway.ToolCall{{ID: id, Name: "tail_log", Args: map[string]any{}}}},
			gateway.Message{Role: gateway.RoleTool, ToolCallID: id, ToolName: "tail_log", Result: &gateway.Result{
				Content: []gateway.Content{gateway.TextContent(strings.Repeat("build step ok\n", size/14))}}})
	}
	return msgs
}

func newProvider(t *testing.T) (*anthropic.Provider, *fakemodel.Server) {
	t.Helper()
	srv := fakemodel.NewAnthropicWith(t, &fakemodel.Options{Respond: func(fakemodel.Recorded) fakemodel.Turn { return fakemodel.Turn{Text: "Done."} }})
	return anthropic.New(&provider.Options{Model: "claude-sonnet-4-5", APIKey: "test", BaseURL: srv.URL, MaxRetries: -1}), srv
}

// A request's Context becomes the Messages request's context_management
// and the strategy's beta header; none without it.
func TestProvider_ContextManagementRequest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		context  *gateway.ContextManagement
		wantBeta string
		wantEdit string // the JSON of edits[0]; "" for no context_management
	}{
		{"agent", nil, "", ""},
		{"clear_tool_uses", &gateway.ContextManagement{Strategy: gateway.ContextClearToolUses, Trigger: 100_000, Keep: 3, ClearAtLeast: 20_000},
			"context-management-2025-06-27",
			`{"clear_at_least":{"type":"input_tokens","value":20000},"keep":{"type":"tool_uses","value":3},"trigger":{"type":"input_tokens","value":100000},"type":"clear_tool_uses_20250919"}`},
		{"clear_tool_uses, the API's defaults", &gateway.ContextManagement{Strategy: gateway.ContextClearToolUses},
			"context-management-2025-06-27", `{"type":"clear_tool_uses_20250919"}`},
		{"server_compaction", &gateway.ContextManagement{Strategy: gateway.ContextServerCompaction, Trigger: 140_000},
			"compact-2026-01-12", `{"trigger":{"type":"input_tokens","value":140000},"type":"compact_20260112"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, srv := newProvider(t)
			if _, err := p.Complete(t.Context(), &gateway.Request{Messages: history(2, 100), Context: tc.context}, func(gateway.Event) {}); err != nil {
				t.Fatal(err)
			}
			r := srv.Requests()[0]
			if got := strings.Join(r.Header.Values("anthropic-beta"), ","); got != tc.wantBeta {
				t.Errorf("anthropic-beta = %q, want %q", got, tc.wantBeta)
			}
			cm, ok := r.JSON["context_management"].(map[string]any)
			if tc.wantEdit == "" {
				if ok {
					t.Errorf("context_management = %v, want none", cm)
				}
				return
			}
			edits, _ := cm["edits"].([]any)
			if len(edits) != 1 {
				t.Fatalf("context_management = %v, want one edit", cm)
			}
			if got, _ := json.Marshal(edits[0]); string(got) != tc.wantEdit {
				t.Errorf("edit = %s\nwant   %s", got, tc.wantEdit)
			}
		})
	}
}

// The API's compaction block comes back on the assistant message
// (Message.ServerCompaction), the usage is the sum of the iterations, and
// the next request sends the block verbatim at the head of that message,
// and is charged from it on.
func TestProvider_ServerCompactionRoundTrip(t *testing.T) {
	p, srv := newProvider(t)
	msgs := history(30, 8000) // about 60,000 tokens
	ctxm := &gateway.ContextManagement{Strategy: gateway.ContextServerCompaction, Trigger: 50_000}
	var text strings.Builder
	resp, err := p.Complete(t.Context(), &gateway.Request{Messages: msgs, Context: ctxm}, func(e gateway.Event) { text.WriteString(e.Text) })
	if err != nil {
		t.Fatal(err)
	}
	sc := resp.Message.ServerCompaction
	if sc == nil || !strings.Contains(sc.Summary, "Tail the build log.") {
		t.Fatalf("ServerCompaction = %+v, want the fake's summary", sc)
	}
	if text.String() != "Done." || gateway.PromptText(resp.Message.Content) != "Done." {
		t.Errorf("streamed %q, message %q; want the answer after the compaction", text.String(), gateway.PromptText(resp.Message.Content))
	}
	rec := srv.Requests()[0].Usage
	u := resp.Usage
	if u.InputTokens != int64(rec.InputTokens) || u.CacheReadTokens != int64(rec.CacheReadTokens) || u.CacheWriteTokens != int64(rec.CacheWriteTokens) || u.OutputTokens != int64(rec.OutputTokens) {
		t.Errorf("usage %+v, want the iterations' sum the fake billed, %+v", u, rec)
	}

	resp.Message.Role = gateway.RoleAssistant
	next := append(append(msgs, resp.Message), gateway.Message{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("And now?")}})
	if _, err := p.Complete(t.Context(), &gateway.Request{Messages: next, Context: ctxm}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[1]
	sent := r.JSON["messages"].([]any)
	first := sent[len(sent)-2].(map[string]any)["content"].([]any)[0]
	var want any
	_ = json.Unmarshal(sc.Block, &want)
	if g, _ := json.Marshal(first); string(g) != string(mustJSON(want)) {
		t.Errorf("the assistant message starts with %s, want the compaction block %s", g, sc.Block)
	}
	if n := r.Usage.InputTokens + r.Usage.CacheReadTokens + r.Usage.CacheWriteTokens; n > 1000 {
		t.Errorf("the request after the compaction was charged %d prompt tokens, want those from the block on", n)
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }
