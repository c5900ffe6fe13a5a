// Package gateway holds the core types and interfaces of acp-agent's agent
// runtime, and nothing else: it imports the standard library alone, so a
// package that only needs a [Tool] or a [Message] (bridge, session) links
// no model SDK and no WebSocket library.
//
//	session ── Send(sessionKey, message) ──▶ Runner ⇄ Provider (model)
//	        ◀── Events (text, tool start/update/end) ──┘
//	                                        │ tool calls
//	                             Registry[sessionKey] → Tool.Execute
//
// # Tools and content
//
// A [Tool] is one tool a model may call: its name, its input schema and an
// Execute function that returns a [Result] of [Content] blocks (text, image,
// audio, embedded resource, resource link). The gateway never knows where a
// tool came from: bridged MCP tools arrive as plain Tools through
// [Gateway.SetExtraTools], and a [Registry] keeps them per session key.
//
// # Conversations
//
// A conversation is a list of [Message]s ([RoleUser], [RoleAssistant],
// [RoleTool]); a [History] keeps it per session ([MemoryHistory] in memory;
// package session keeps it in the session store).
//
// # Models
//
// A [Provider] is a model: [Provider.Complete] turns a [Request] (system
// prompt, messages, tools) into a [Response], streaming deltas as [Event]s.
// A [Model] names a Provider for the user. The providers themselves live
// under gateway/provider (Anthropic, OpenAI-compatible), the offline direct
// provider in gateway/runner.
//
// # The Gateway interface
//
// [Gateway] is what the session core (package session) drives: each
// session's extra tools and its prompt turns ([SendRequest]), which report
// [Event]s and end with a [StopReason]. Tool permissions are asked through
// an [AskFunc]. runner.Local (package gateway/runner) implements it in
// process: a Registry and the Runner, the agent loop.
package gateway
