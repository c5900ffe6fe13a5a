// Package remote carries ACP over the network: the remote transport of the
// ACP RFD "Streamable HTTP & WebSocket Transport"
// (https://agentclientprotocol.com/rfds/streamable-http-websocket-transport),
// as the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0, its
// experimental http-client, ws-client and server) implements it, on one
// endpoint (/acp).
//
// [Handler] is the server side. Every connection, whichever transport
// carries it, is one [Conn] (an acp.Agent) serving an acp.Stream, so the
// ACP engine is the same as over stdio:
//
//	POST   /acp  client messages: initialize answers 200 with its JSON-RPC
//	             response and Acp-Connection-Id; every other message 202
//	GET    /acp  an SSE stream of the agent's messages: the connection's
//	             (Acp-Connection-Id), or a session's (and Acp-Session-Id)
//	GET    /acp  with Upgrade: websocket: the whole connection in text frames
//	DELETE /acp  ends the connection (Acp-Connection-Id)
//
// Over Streamable HTTP, the agent's messages are routed as the SDK routes
// them: a response goes where its request came from (a session-scoped
// request's to that session's stream, session/load's too, behind the
// replay it answers, where the SDK's server sends it to the connection's),
// a request or notification with params.sessionId to that session's
// stream, anything else to the connection's. Streams buffer what their
// client has not read yet, up to [Limits].MaxBufferedBytes per connection:
// beyond it the agent's writes wait (back-pressure), and a client that
// reads nothing for [Limits].OutputStall loses the connection.
//
// # Status codes
//
// 401 without valid credentials (checked before anything else is read);
// 403 for a browser Origin not allowed, or a Host that is not loopback on a
// listener that answers only loopback names (DNS rebinding); 400 for a
// missing or mismatched header, a body that is not one JSON-RPC object, or
// an initialize on an existing connection; 404 for an unknown
// Acp-Connection-Id (or another tenant's), 410 for one that has ended; 409
// for a second receiver of one stream, or a session-scoped request for a
// session that is not live on the connection (reattach it with
// session/load or session/resume); 413 for a message over
// [Limits].MaxMessageBytes; 415 for a POST that is not application/json;
// 406 for a GET that does not accept text/event-stream; 429 when a tenant
// has [Limits].MaxConnectionsPerTenant connections; 503 while shutting down
// or at [Limits].MaxConnections.
//
// # Concurrency
//
// A Handler is safe for concurrent use; each connection's agent runs in a
// goroutine the Handler owns, and [Handler.Shutdown] ends them all.
package remote
