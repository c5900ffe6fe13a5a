// Package gateway is the core of acp-agent's agent runtime: the types and
// interfaces the session core, the bridge, the runner and the model
// providers share, and the two small implementations every runtime needs,
// the per-session tool [Registry] and an in-memory conversation [History]
// ([MemoryHistory]). It imports the standard library alone, so a package
// that only needs a [Tool] or a [Message] (bridge, session) links no model
// SDK and no WebSocket library.
//
// The name is the design's: the agent runtime is "the gateway" a session
// sends its prompts through. It is not the network gateway: `acp-agent
// gateway` serves ACP over HTTP and WebSocket (package acp/remote, wired in
// cmd/acp-agent), and its sessions run their turns through this package's
// interfaces like any other. Nothing here speaks a network protocol.
//
//	session ── Send(SendRequest) ──▶ runner.Local: Runner ⇄ Provider (model)
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
// [Gateway.SetExtraTools], and a [Registry] keeps them per session key. A
// Result may carry how a client should show the call ([Show]: a [Plan], a
// [Diff], [Location]s) and a subagent's run ([Subagent]).
//
// # Conversations
//
// A conversation is a list of [Message]s ([RoleUser], [RoleAssistant],
// [RoleTool]); each prompt turn is a [Turn], possibly compacted
// ([Compaction]); a [History] keeps a session's [View] of it
// ([MemoryHistory] in memory; package session keeps it in the session
// store).
//
// # Models
//
// A [Provider] is a model: [Provider.Complete] turns a [Request] (system
// prompt, messages, tools) into a [Response], streaming deltas as [Event]s.
// A [Model] names a Provider for the user. A provider may also think
// ([Thinker]), report its context window ([WindowReporter]) and manage a
// request's context on its side ([ContextManager]). [Usage] counts tokens
// the same way for every provider, and [Pricing] prices them. The
// providers themselves live under gateway/provider (Anthropic,
// OpenAI-compatible, Gemini), the offline direct provider in
// gateway/runner.
//
// # The Gateway interface
//
// [Gateway] is what the session core (package session) drives: each
// session's extra tools and its prompt turns ([SendRequest]), which report
// [Event]s and end with a [StopReason]. Tool permissions are asked through
// an [AskFunc] ([PermissionRequest]); a Gateway that is a [Sampler] also
// answers one model call outside any turn (MCP sampling, titles). An
// [Observer] sees what the agent loop does, for metrics. runner.Local
// (package gateway/runner) implements Gateway and Sampler in process: a
// Registry and the Runner, the agent loop.
//
// # Error text
//
// Errors state the fact; one that knows what the user can do about it is a
// [Remedier] (a Remedy method). [ErrorText] is how every front end, and the
// runner for the model, shows an error: its text and the remedies in its
// tree. [WithRemedy] gives a sentinel, or an error a front end passes on,
// a remedy.
package gateway
