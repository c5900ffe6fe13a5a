// Package session is acp-agent's front-end-neutral session core: it opens
// sessions, runs their turns through a [gateway.Gateway] and ends them, and
// keeps them across restarts. The ACP front end (package acp) uses it, and
// so can any other front end (an MCP server mode): the protocol's own parts
// (parsing its requests, mapping errors and events to its messages, asking
// the user for permission) stay in the front end.
//
// # Live sessions
//
// A [Core] holds the live sessions of one process, built from [CoreOptions]
// (the gateway, the template of each session's [bridge.Options], default
// servers and per-server [ServerSettings], the [store.Store] and [History]).
// [Core.Open] opens a new session or reopens a stored one: it merges the
// default servers, vets the cwd and the servers-per-session quota, attaches
// the history (calling [OpenRequest.Replay] with the stored turns), connects
// every MCP server in parallel through a [bridge.Manager] and registers the
// tools with the gateway. A failed server does not fail the open; its status
// is in [Session.Servers].
//
// A [Session] runs one turn at a time: [Session.Prompt] sends a message
// through the gateway, [Session.Turn] runs a command the front end answers
// itself under the same rules. [Session.Cancel] cancels the running turn;
// [Session.End] (and [Core.Close], [Core.Shutdown]) cancels it, waits for it
// (at most 5 seconds), then closes the servers, unregisters the tools and
// drops the history cache, in that order. The model is chosen per session
// ([Session.SetModel]) and stored with it.
//
// # Storage
//
// Package session/store keeps what outlives the process: a [store.Store]
// holds each session's [store.Record] and committed [store.Turn]s, in
// memory (session/store/memory), in one SQLite file shared across processes
// (session/store/sqlite) or in one PostgreSQL database shared by a gateway
// fleet (session/store/postgres, also the fleet's [store.Leases] and a
// [store.FencedStore]). [History] is the [gateway.History] over a Store:
// each finished turn is committed in one transaction. A nil
// [CoreOptions.Store] is an in-memory store.
//
// # Identities
//
// [NewID] issues session IDs ("sess_" and 26 base32 characters); [Key]
// derives a session's gateway key ("acp:<id>", or the client's own).
//
// # Errors
//
// Open and the Session methods return errors wrapping [ErrInvalid] (the
// caller's request is wrong; a [*KeyInUseError] and a [*NameTakenError]
// among them), [store.ErrNotFound], [ErrClosed] and [ErrEnded]; front ends
// map them to their protocol's errors. The errors state facts; what the
// user can do about them is the front end's to say (a *NameTakenError:
// choose another name).
//
// # Concurrency
//
// Every method is safe for concurrent use. The state locks of a [Core] and
// of a [Session] are never held together nor across I/O; a Session's turn
// lock is held for a whole turn and taken before its state lock. The only
// goroutines the core starts are Shutdown's, one per session, and it waits
// for them; each session's [bridge.Manager] owns its server connections,
// and End waits for it to close them.
package session
