// Package remote is the WebSocket gateway: the agent runtime served to many
// translators (acp-agent gateway), and a translator's client of it
// (acp-agent --gateway URL). The protocol is docs/gateway-protocol.md.
//
// # Server
//
// A [Server] serves a [runner.Local] over WebSocket (it is an
// [net/http.Handler]): a connection authenticates with "connect", registers
// its sessions' tools, runs turns with "chat.send", and answers the
// gateway's "tools.invoke" and "permission.request" calls, since the MCP
// connections stay in the translator. [Server.Shutdown] ends the running
// turns, closes every connection and waits for them. Tokens name tenants
// ([ServerOptions].Tokens): a tenant's connections see only its sessions.
// Every turn runs under its session's lease ([ServerOptions].Leases): one
// turn of a session at a time, fleet-wide when the replicas share a store's
// leases. With a [ServerOptions].Store the gateway keeps the translators'
// sessions (the "sessions" extension).
//
// The rules are the fleet's on every replica: another connection of the
// tenant may take a session key (session/load in another editor) whether it
// is on this replica or another, and each turn runs with the tools of the
// translator that sent it; a prompt while a turn of the session runs is
// busy ([CodeBusy]), with the same message on every replica. A turn of a
// stored session runs on the stored history when the translator's lacks
// turns another translator or replica wrote
// ([ChatSendResult].HistoryReloaded).
//
// # Errors
//
// An error reaching a translator holds only what its tenant may know: its
// own wire session keys and session ids, never the runtime's
// tenant-scoped keys. A failure of the store or its driver (whose text names
// the database's URL, host or user, or a file's path) is logged with its
// details under a short reference, and the translator gets "<method>: the
// session store failed (ref 5c1f0e9a); see the gateway's log".
//
// # Client
//
// A [Client], made by [Dial], implements [gateway.Gateway] over one
// connection that it keeps up: it reconnects and registers each session's
// tools again. The conversation history stays with the client
// ([ClientOptions].History): each chat.send carries the session's
// [gateway.View] (the latest compaction, the messages after it, the usage so
// far), and the finished turn comes back whole (messages, stop reason,
// usage, compaction) to join it. With the gateway's store, chat.send also
// names the lease token of the turn the history ends with
// ([ChatSendParams].HistoryLease), so that the gateway checks the history
// against the store only when another translator may have written since;
// when the turn ran on the stored history instead, the client reads the
// session's history again (session.History's Attach) before the turn joins
// it. Given several URLs (a fleet's replicas) it connects to the first that
// answers and fails over to the next.
// [Client.Store] is the session store the gateway keeps for the client's
// tenant.
//
// # Protocol
//
// Messages are JSON-RPC 2.0, one per WebSocket text frame, carried by
// github.com/sourcegraph/jsonrpc2 (id matching, framing) over a stream that
// adds the gateway's rules: a bounded write queue, the pre-connect frame
// limit ([MaxPreAuthFrameBytes]), ping/pong, "$/cancelRequest" and a close
// frame written after the queued frames. The parameters and results of each
// method are Go types here ([ConnectParams], [Hello], [ChatSendParams],
// [ChatEvent], ...); error responses carry the codes [CodeUnauthorized] ...
// [CodeInternal] and reach callers as [*RemoteError]. [ProtocolVersion] is
// the version a connect must name.
package remote
