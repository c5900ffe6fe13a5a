package runner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// managingProvider is a fakeProvider that manages the context strategies
// in manages.
type managingProvider struct {
	fakeProvider
	manages []gateway.ContextStrategy
}

func (m *managingProvider) ManagesContext(s gateway.ContextStrategy) bool {
	for _, x := range m.manages {
		if x == s {
			return true
		}
	}
	return false
}

var _ gateway.ContextManager = (*managingProvider)(nil)

// A request asks its model's provider for the configured strategy, with
// triggers from the window under CompactAt; a provider that does not
// manage it gets no Context, and New logs the fallback once per model.
func TestRunner_ContextStrategyRequest(t *testing.T) {
	var got *gateway.ContextManagement
	answer := func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		got = req.Context
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("ok")}}}, nil
	}
	both := []gateway.ContextStrategy{gateway.ContextClearToolUses, gateway.ContextServerCompaction}
	for _, tc := range []struct {
		name     string
		strategy gateway.ContextStrategy
		manages  []gateway.ContextStrategy
		window   int64
		want     *gateway.ContextManagement
		logged   bool
	}{
		{"agent", gateway.ContextAgent, both, 200_000, nil, false},
		{"clear_tool_uses", gateway.ContextClearToolUses, both, 200_000,
			&gateway.ContextManagement{Strategy: gateway.ContextClearToolUses, Trigger: 100_000, Keep: 3, ClearAtLeast: 20_000}, false},
		{"server_compaction", gateway.ContextServerCompaction, both, 200_000,
			&gateway.ContextManagement{Strategy: gateway.ContextServerCompaction, Trigger: 140_000}, false},
		{"server_compaction, window unknown: the API's trigger", gateway.ContextServerCompaction, both, 0,
			&gateway.ContextManagement{Strategy: gateway.ContextServerCompaction}, false},
		{"server_compaction, window too small for the API's minimum", gateway.ContextServerCompaction, both, 32_000, nil, false},
		{"not managed by the provider: the agent's", gateway.ContextClearToolUses, nil, 200_000, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			p := &managingProvider{fakeProvider: fakeProvider{complete: answer}, manages: tc.manages}
			r := New(&gateway.Registry{}, &Options{Context: tc.strategy, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				Models: []gateway.Model{{ID: "m", Provider: p, ContextWindow: tc.window}}})
			got = nil
			if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("hi")}}, func(gateway.Event) {}); err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("Context = %+v, want %+v", got, tc.want)
			}
			if logged := strings.Contains(logs.String(), "context strategy not offered"); logged != tc.logged {
				t.Errorf("fallback logged %v, want %v: %s", logged, tc.logged, logs.String())
			}
		})
	}
}

// clearKeep moves the cleared part in steps: with results of about 1,000
// tokens and steps of 4,000, the keep grows with each tool use and drops
// by a segment when one closes, never under ClearKeep.
func TestClearKeep_Steps(t *testing.T) {
	var msgs []gateway.Message
	var keeps []int64
	for i := range 14 {
		id := strings.Repeat("x", 3) + string(rune('a'+i))
		msgs = append(msgs,
			gateway.Message{Role: gateway.RoleAssistant, ToolCalls: []gateway.ToolCall{{ID: id, Name: "t", Args: map[string]any{}}}},
			gateway.Message{Role: gateway.RoleTool, ToolCallID: id, Result: &gateway.Result{Content: []gateway.Content{gateway.TextContent(strings.Repeat("y", 4000))}}})
		keeps = append(keeps, clearKeep(msgs, 4000))
	}
	// Segments close at uses 4, 8, 12 (each result is a little over 1,000
	// tokens, so four make a segment): the first clears nothing, each
	// later one clears the segment before it.
	want := []int64{3, 3, 3, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6}
	if fmt.Sprint(keeps) != fmt.Sprint(want) {
		t.Errorf("keeps = %v, want %v", keeps, want)
	}
}
