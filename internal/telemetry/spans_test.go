package telemetry

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
)

// The spans of a turn: parent and child, names, kinds and the semantic
// conventions' attributes; the tools/call span's context is what Inject
// writes.
func TestSpans_TurnModelAndToolCall(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp)
	// The global provider cannot go back to its initial delegate: the
	// no-op provider is what "off" is from here on.
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	ctx := Extract(context.Background(), map[string]any{"traceparent": editorTraceparent})
	ctx, turn := StartTurn(ctx, "s1")
	_, model := StartModelRequest(ctx, "anthropic", "claude-sonnet-4-5")
	EndModelRequest(model, &Usage{Input: 120, Output: 7, CacheRead: 100, CacheWrite: 0}, "tool_calls", nil)
	callCtx, call := StartToolCall(ctx, ToolCall{Server: "fx", Tool: "echo", CallID: "call_1", Transport: "pipe"})
	meta := Inject(callCtx, nil)
	EndToolCall(call, true, nil)
	EndTurn(turn, "end_turn", errors.New("boom"))

	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	tr, m, c := byName["invoke_agent acp-agent"], byName["chat claude-sonnet-4-5"], byName["tools/call echo"]
	if tr == nil || m == nil || c == nil {
		t.Fatalf("span names: %v", byName)
	}
	if tr.SpanContext().TraceID().String() != editorTrace || tr.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("turn: trace %s parent %s, want the editor's", tr.SpanContext().TraceID(), tr.Parent().SpanID())
	}
	for _, s := range []sdktrace.ReadOnlySpan{m, c} {
		if s.Parent().SpanID() != tr.SpanContext().SpanID() {
			t.Errorf("%s: parent %s, want the turn %s", s.Name(), s.Parent().SpanID(), tr.SpanContext().SpanID())
		}
	}
	want := map[sdktrace.ReadOnlySpan]map[string]any{
		tr: {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "s1", "acp_agent.stop_reason": "end_turn", "error.type": "_OTHER"},
		m: {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5",
			"gen_ai.usage.input_tokens": int64(120), "gen_ai.usage.output_tokens": int64(7), "gen_ai.usage.cache_read.input_tokens": int64(100)},
		c: {"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool", "acp_agent.mcp.server.name": "fx",
			"gen_ai.tool.call.id": "call_1", "network.transport": "pipe", "error.type": "tool_error"},
	}
	for s, attrs := range want {
		got := map[string]any{}
		for _, kv := range s.Attributes() {
			got[string(kv.Key)] = kv.Value.AsInterface()
		}
		for k, v := range attrs {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", s.Name(), k, got[k], v)
			}
		}
	}
	if c.Status().Code != codes.Error || tr.Status().Code != codes.Error || m.Status().Code == codes.Error {
		t.Errorf("status: turn %v, model %v, call %v", tr.Status(), m.Status(), c.Status())
	}
	if want := "00-" + editorTrace + "-" + c.SpanContext().SpanID().String() + "-01"; meta["traceparent"] != want {
		t.Errorf("injected traceparent = %v, want %s", meta["traceparent"], want)
	}
}
