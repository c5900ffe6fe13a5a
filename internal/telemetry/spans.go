package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Instrumentation is the name of acp-agent's tracer (its module path).
const Instrumentation = "github.com/seed02d3eb6b/acp-agent"

// AgentName is gen_ai.agent.name of a turn span.
const AgentName = "acp-agent"

// Attribute keys of acp-agent's own, where no semantic convention has one.
const (
	// AttrMCPServer is the name of the MCP server a tools/call went to, as
	// the session named it in mcpServers (or "acp" for the built-in tools).
	AttrMCPServer = attribute.Key("acp_agent.mcp.server.name")
	// AttrStopReason is the ACP stopReason a turn ended with.
	AttrStopReason = attribute.Key("acp_agent.stop_reason")
	// AttrACPMethod is the ACP method of a turn span: session/prompt.
	AttrACPMethod = attribute.Key("acp.method.name")
	// AttrTenant is the tenant of a shared gateway whose session made a
	// model request (gateway.SendRequest.Tenant); absent for a local
	// agent's and the default tenant's.
	AttrTenant = attribute.Key("acp_agent.tenant")
)

// ErrorTypeToolError is error.type of a tools/call whose result has
// isError (OpenTelemetry MCP semantic conventions).
const ErrorTypeToolError = "tool_error"

func tracer() trace.Tracer { return otel.Tracer(Instrumentation) }

// StartTurn starts the span of one ACP session/prompt turn of session
// sessionID: "invoke_agent acp-agent", kind SERVER, a child of the span
// context in ctx (the editor's, after [Extract]) or a new trace. End it
// with [EndTurn].
func StartTurn(ctx context.Context, sessionID string) (context.Context, trace.Span) {
	return tracer().Start(ctx, "invoke_agent "+AgentName,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIAgentName(AgentName),
			semconv.GenAIConversationID(sessionID),
			AttrACPMethod.String("session/prompt"),
		))
}

// EndTurn ends span, a turn's, with its stop reason, or err when the turn
// failed.
func EndTurn(span trace.Span, stopReason string, err error) {
	if stopReason != "" {
		span.SetAttributes(AttrStopReason.String(stopReason))
	}
	endWith(span, err)
}

// Usage is the token usage of one model request. Input counts every prompt
// token, cached or not (semconv: gen_ai.usage.input_tokens SHOULD include
// them); CacheRead and CacheWrite are the part read from and written to the
// provider's prompt cache.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// StartModelRequest starts the span of one model request: "chat <model>",
// kind CLIENT, with gen_ai.operation.name "chat", gen_ai.provider.name
// provider (such as "anthropic", "openai") and gen_ai.request.model model.
// End it with [EndModelRequest].
func StartModelRequest(ctx context.Context, provider, model string) (context.Context, trace.Span) {
	return tracer().Start(ctx, "chat "+model,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			semconv.GenAIOperationNameChat,
			semconv.GenAIProviderNameKey.String(provider),
			semconv.GenAIRequestModel(model),
		))
}

// EndModelRequest ends span, a model request's, with its usage (when the
// provider reported one), the reason the model stopped ("" when it asked
// for tools or failed) and err.
func EndModelRequest(span trace.Span, u *Usage, finishReason string, err error) {
	if u != nil {
		span.SetAttributes(
			semconv.GenAIUsageInputTokens(int(u.Input)),
			semconv.GenAIUsageOutputTokens(int(u.Output)),
			semconv.GenAIUsageCacheReadInputTokens(int(u.CacheRead)),
			semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWrite)),
		)
	}
	if finishReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(finishReason))
	}
	endWith(span, err)
}

// ToolCall describes one MCP tools/call for its span.
type ToolCall struct {
	// Server is the MCP server's name in the session; Tool the tool's name
	// on that server; CallID the model's (or /call's) id of the call.
	Server, Tool, CallID string
	// Transport is network.transport: "pipe" (stdio), "tcp" (http, sse),
	// or "" (in process, or over the editor's ACP connection: not set).
	Transport string
}

// StartToolCall starts the span of one MCP tools/call: "tools/call <tool>",
// kind CLIENT, with mcp.method.name "tools/call", gen_ai.operation.name
// "execute_tool", gen_ai.tool.name and the server's name. Pass the returned
// context to [Inject] for the request's _meta. End it with [EndToolCall].
func StartToolCall(ctx context.Context, c ToolCall) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		semconv.McpMethodNameToolsCall,
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(c.Tool),
		AttrMCPServer.String(c.Server),
	}
	if c.CallID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(c.CallID))
	}
	if c.Transport != "" {
		attrs = append(attrs, semconv.NetworkTransportKey.String(c.Transport))
	}
	return tracer().Start(ctx, "tools/call "+c.Tool, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// EndToolCall ends span, a tools/call's: err when the call could not be
// carried out, else isError when the tool's result says it failed
// (error.type "tool_error").
func EndToolCall(span trace.Span, isError bool, err error) {
	if err == nil && isError {
		span.SetAttributes(semconv.ErrorTypeKey.String(ErrorTypeToolError))
		span.SetStatus(codes.Error, "the tool's result has isError")
	}
	endWith(span, err)
}

// endWith ends span, recording err (error.type: "cancelled" for a context
// cancellation, "timeout" for a deadline, else "_OTHER") when it is not
// nil.
func endWith(span trace.Span, err error) {
	if err != nil {
		kind := "_OTHER"
		switch {
		case errors.Is(err, context.Canceled):
			kind = "cancelled"
		case errors.Is(err, context.DeadlineExceeded):
			kind = "timeout"
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(kind))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
