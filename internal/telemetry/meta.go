package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// The _meta keys of W3C Trace Context, reserved by ACP
// (https://agentclientprotocol.com/protocol/extensibility#the-_meta-field)
// and by MCP (the OpenTelemetry MCP semantic conventions propagate context in
// params._meta).
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

// propagator reads and writes traceparent and tracestate. It is the W3C
// propagator itself, not the global one, so that a trace passes through
// (read from ACP, written to MCP) even when tracing is off.
var propagator propagation.TextMapPropagator = propagation.TraceContext{}

// MetaCarrier is a _meta object as a [propagation.TextMapCarrier]: string
// members are its fields; members of other types are not Trace Context and
// are ignored. Set on a nil MetaCarrier does nothing; use [Inject] to get a
// map allocated when needed.
type MetaCarrier map[string]any

var _ propagation.TextMapCarrier = MetaCarrier(nil)

// Get returns the string member key, or "".
func (c MetaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

// Set sets member key to value.
func (c MetaCarrier) Set(key, value string) {
	if c != nil {
		c[key] = value
	}
}

// Keys returns the keys of the string members.
func (c MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k, v := range c {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// Extract returns ctx with the remote span context of meta's traceparent
// (and tracestate), so that spans started from it are its children. A nil
// meta, or a missing or malformed traceparent, returns ctx unchanged.
func Extract(ctx context.Context, meta map[string]any) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, MetaCarrier(meta))
}

// Inject writes the span context of ctx as traceparent (and tracestate) into
// meta and returns it; a nil meta is allocated when there is something to
// write. Without a valid span context in ctx it returns meta unchanged.
func Inject(ctx context.Context, meta map[string]any) map[string]any {
	tmp := MetaCarrier{}
	propagator.Inject(ctx, tmp)
	if len(tmp) == 0 {
		return meta
	}
	if meta == nil {
		meta = make(map[string]any, len(tmp))
	}
	for k, v := range tmp {
		meta[k] = v
	}
	return meta
}
