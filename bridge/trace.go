package bridge

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/telemetry"
)

// This file holds the bridge's tracing hooks: the span of a tools/call and
// the W3C Trace Context in the request's _meta (package telemetry).

// startCallSpan starts the span of a tools/call of tool (the server's own
// name) on s, a child of the span in ctx (the turn's).
func (s *client) startCallSpan(ctx context.Context, tool string) (context.Context, trace.Span) {
	info, _ := ctx.Value(callInfoKey{}).(callInfo)
	return telemetry.StartToolCall(ctx, telemetry.ToolCall{
		Server: s.spec.Name, Tool: tool, CallID: info.id, Transport: networkTransport(s.spec.Transport),
	})
}

// endCallSpan ends span with the call's result.
func endCallSpan(span trace.Span, res gateway.Result, err error) {
	telemetry.EndToolCall(span, res.IsError, err)
}

// networkTransport is the network.transport of a server's transport: pipe
// for stdio, tcp for HTTP and SSE, none for in-process and MCP-over-ACP.
func networkTransport(t Transport) string {
	switch t {
	case TransportStdio:
		return "pipe"
	case TransportHTTP, TransportSSE:
		return "tcp"
	}
	return ""
}

// traceMeta writes the trace context of ctx (the tools/call span's, or the
// editor's passed through when tracing is off) into the _meta of params:
// traceparent and tracestate, as the OpenTelemetry MCP semantic conventions
// propagate it.
func traceMeta(ctx context.Context, params *mcp.CallToolParams) {
	if m := telemetry.Inject(ctx, params.Meta); m != nil {
		params.Meta = m
	}
}
