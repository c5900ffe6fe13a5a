package telemetry

import (
	"context"
	"slices"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

const (
	editorTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	editorTrace       = "4bf92f3577b34da6a3ce929d0e0e4736"
)

func TestMetaCarrier_ReadsStringsOnly(t *testing.T) {
	c := MetaCarrier{"traceparent": editorTraceparent, "sessionKey": "k", "n": 3.0, "nested": map[string]any{}}
	if got := c.Get("traceparent"); got != editorTraceparent {
		t.Errorf("Get(traceparent) = %q", got)
	}
	if got := c.Get("n"); got != "" {
		t.Errorf("Get(n) = %q, want \"\" for a number", got)
	}
	keys := c.Keys()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"sessionKey", "traceparent"}) {
		t.Errorf("Keys = %v", keys)
	}
	var nilC MetaCarrier
	nilC.Set("traceparent", "x") // no panic, nothing to set
	if nilC.Get("traceparent") != "" || len(nilC.Keys()) != 0 {
		t.Error("a nil carrier holds nothing")
	}
}

func TestExtract_ParentOfTheNextSpan(t *testing.T) {
	tests := []struct {
		name  string
		meta  map[string]any
		valid bool
	}{
		{"traceparent", map[string]any{"traceparent": editorTraceparent, "tracestate": "vendor=v1"}, true},
		{"nil", nil, false},
		{"malformed", map[string]any{"traceparent": "00-zz-00f067aa0ba902b7-01"}, false},
		{"not a string", map[string]any{"traceparent": 42.0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := trace.SpanContextFromContext(Extract(context.Background(), tt.meta))
			if sc.IsValid() != tt.valid {
				t.Fatalf("valid = %v, want %v", sc.IsValid(), tt.valid)
			}
			if !tt.valid {
				return
			}
			if sc.TraceID().String() != editorTrace || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsRemote() || !sc.IsSampled() {
				t.Errorf("span context = %+v", sc)
			}
			if got := sc.TraceState().Get("vendor"); got != "v1" {
				t.Errorf("tracestate vendor = %q", got)
			}
		})
	}
}

func TestInject_WritesIntoMeta(t *testing.T) {
	ctx := Extract(context.Background(), map[string]any{"traceparent": editorTraceparent, "tracestate": "vendor=v1"})
	// Into an existing _meta: other members stay.
	meta := Inject(ctx, map[string]any{"progressToken": "p1"})
	if meta["traceparent"] != editorTraceparent || meta["tracestate"] != "vendor=v1" || meta["progressToken"] != "p1" {
		t.Errorf("meta = %v", meta)
	}
	// Into none: allocated.
	if m := Inject(ctx, nil); m["traceparent"] != editorTraceparent {
		t.Errorf("meta from nil = %v", m)
	}
	// Without a span context: unchanged, and nil stays nil.
	if m := Inject(context.Background(), nil); m != nil {
		t.Errorf("meta without a trace = %v, want nil", m)
	}
}

// Tracing off (no SDK installed): a span started under the editor's trace
// context keeps it, so the traceparent reaches the MCP server unchanged.
func TestInject_PassesTheEditorsTraceThroughWhenOff(t *testing.T) {
	otel.SetTracerProvider(noop.NewTracerProvider()) // off, whatever ran before
	ctx := Extract(context.Background(), map[string]any{"traceparent": editorTraceparent})
	ctx, turn := StartTurn(ctx, "s1")
	defer turn.End()
	ctx, call := StartToolCall(ctx, ToolCall{Server: "fx", Tool: "echo"})
	defer call.End()
	if m := Inject(ctx, nil); m["traceparent"] != editorTraceparent {
		t.Errorf("traceparent = %v, want the editor's %s", m["traceparent"], editorTraceparent)
	}
}
