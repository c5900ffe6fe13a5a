// Package acp is acp-agent's ACP side: an [Agent] that serves one client on
// one connection (conn.go) over any [Stream] of JSON-RPC messages: stdio's
// lines ([Agent.Serve], [NewLineStream]), or a network transport's messages
// ([Agent.ServeStream]; package acp/remote serves Streamable HTTP and
// WebSocket). The framing layer reads, one writer writes, acp-go-sdk's
// JSON-RPC engine (github.com/coder/acp-go-sdk Connection) correlates, and
// one dispatch table decodes every method with acp-go-sdk's types, or ours
// (wire.go) where it has none. Several Agents may share one session core
// (one per network connection): each drives and ends only the sessions it
// opened ([Agent.HasSession]).
//
// # Sessions
//
// The session lifecycle itself is the front-end-neutral core of package
// session ([session.Core], which [New] is given); the Agent maps ACP's
// methods onto it. session/new parses the client's mcpServers entries
// ([ParseMCPServers]) and opens a session, which merges the config's default
// servers, connects them through a [bridge.Manager] and registers the bridged
// tools with the core's [gateway.Gateway] ([session.CoreOptions]).
// session/prompt runs one turn at a time and maps the gateway's events to
// session/update notifications; session/cancel ends the turn; session/close
// ends the session and its servers. Sessions are kept in the core's
// [store.Store], so that session/load, session/resume and session/list work
// across restarts. The model of a session is a session config option.
//
// session/delete ends a live session (as session/close) and deletes the
// stored one, its transcript, usage and compaction; the unstable
// session/fork opens a new session with a copy of a session's committed
// history and its own mcpServers; the unstable session/set_title stores a
// title the automatic one never replaces (lifecycle.go). initialize
// advertises them as sessionCapabilities delete, fork and title.
//
// # The end of a turn
//
// A turn's updates end in this order: the turn's own (message chunks, tool
// calls), then, once the turn is committed, session_info_update with the
// session's updatedAt (as session/list shows it) and, when the client has
// not been sent it yet, its title (the first prompt's first line, or the
// one set); then, for a turn that asked a model, its usage_update, held
// back until then; then the session/prompt response. usage_update is so the
// last update of a turn that has one. A title the model writes while a
// prompt is answered follows that prompt's response.
//
// A compaction of the history during a turn is told, to a client that
// advertised session.compaction, as compaction_update (in_progress, then
// completed, failed or cancelled) with its summary in
// compaction_summary_chunk updates as the model writes it (compaction.go);
// to any other client as an agent message once it completed or failed.
//
// # Client requests and commands
//
// Tool permissions are asked of the client with session/request_permission.
// A session's slash commands (runner's and its MCP servers' prompts) are
// advertised with available_commands_update, once the client knows the
// session and again when they change. What a prompt is, the session core
// decides once (session.Classify): a front-end command such as /servers is
// answered from the session without a model turn and is not stored
// (session.Session.Answer); anything else runs as a turn in the gateway.
//
// # Structure and concurrency
//
// An [Agent] composes two parts under its session lifecycle:
//
//   - the connection (conn.go): the framing layer reads the Stream
//     (framing.go), acp-go-sdk's engine correlates and dispatches to the
//     dispatch table (dispatch.go), one writer writes. The framing layer
//     records each prompt and cancel in the order read (order.go); the
//     prompt and cancel handlers take from that record and never call the
//     reader, so calls go one way: reader to record, handlers to record
//     and to the connection.
//   - one announcer per session (announce.go): what the client is told
//     outside the responses, and in which order; its rules are written
//     beside the fields that keep them.
//
// Handlers run concurrently, one goroutine per request, as the engine
// starts them; notifications (session/cancel) are handled one at a time in
// the order read. Every request read is answered before
// [Agent.ServeStream] returns (each of its waits is bounded: see there).
//
// # Errors and limits
//
// A structurally broken mcpServers list is refused with invalid_params and
// an [*MCPServersError] naming the entry, the field and the rule; an unknown
// sessionId is resource-not-found ([ErrUnknownSession]). Incoming messages
// longer than [MaxFrameBytes] are answered with an error that gives the size
// and the limit, and the agent keeps serving.
//
// ACP specification: https://agentclientprotocol.com/protocol/overview
package acp
