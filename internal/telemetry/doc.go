// Package telemetry is acp-agent's OpenTelemetry tracing over the otel API
// (a no-op until cmd/acp-agent installs the SDK with package
// internal/telemetry/otlp): W3C Trace Context carried in the _meta of ACP and
// MCP requests ([Extract], [Inject]), and the spans of a turn, of a model
// request and of an MCP tools/call ([StartTurn], [StartModelRequest],
// [StartToolCall]) with the OpenTelemetry GenAI and MCP semantic conventions
// (semconv v1.41.0).
//
// # Off by default
//
// Packages call the otel API, which is a no-op until otlp.Setup installs
// the SDK; it does so only when an OTLP endpoint is configured
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT or config
// "telemetry".endpoint). Even off, a traceparent read from an ACP request's
// _meta is passed on unchanged in the _meta of the tools/call requests the
// turn makes, so the editor's trace still reaches the MCP server.
//
// # Shape of a trace
//
//	invoke_agent acp-agent        (SERVER: one ACP session/prompt turn; parent: the editor's traceparent)
//	├── chat <model>              (CLIENT: one model request, gen_ai.*)
//	└── tools/call <tool>         (CLIENT: one MCP tools/call, mcp.*; its traceparent goes in the request's _meta)
//
// # Errors
//
// Tracing never fails a turn: exporting runs in the SDK's batch processor,
// its failures go to the logger given to Setup.
//
// # Concurrency
//
// Every function is safe for concurrent use.
package telemetry
