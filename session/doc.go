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
// A front end reads a prompt's text once, with [Classify] (a message, a
// front-end command, an MCP prompt, a runner command or an unknown one),
// and routes on the [Input]. A [Session] runs one turn at a time:
// [Session.Prompt] sends a message (or an MCP prompt's messages, or a
// typed command for the runner) through the gateway, [Session.Turn] runs a
// command the front end answers itself ([Session.Answer]) under the same
// rules. [Session.Cancel] cancels the running turn;
// [Session.End] (and [Core.Close], [Core.Shutdown]) cancels it, waits for it
// (at most 5 seconds), then closes the servers, unregisters the tools and
// drops the history cache, in that order. The model is chosen per session
// ([Session.SetModel]) and stored with it.
//
// # Servers that change
//
// A session's servers come from several origins ([Origin]: the agent's
// in-process servers, the config's, the project's .mcp.json once approved
// ([CoreOptions.ProjectApprovals], [Approvals]), the client's, and those
// its user added), merged at open; its user changes them while it runs
// (/mcp: [Session.AddServer], [Session.RemoveServer],
// [Session.ReconnectServer], [Session.SetServerEnabled]; a client:
// [Session.SetServers]). The changes are stored (store.Record.ServerChanges,
// no literal secret value) and applied again by every reopen.
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
// # Leases
//
// Several Cores may serve one store's sessions: the replicas of a gateway
// fleet on one PostgreSQL database (its [store.Leases] and
// [store.FencedStore]), or one process's Cores with [store.LocalLeases].
// Given [CoreOptions.Leases], a Core keeps the fleet's guarantees itself:
//   - each prompt turn ([Session.Prompt]) runs under the session's lease,
//     taken after the session's turn lock (front-end commands run through
//     [Session.Turn] take none: they write nothing to the store). Another
//     holder's lease fails the prompt at once with a [*BusyError] naming
//     its [CoreOptions.Replica]; a failure of the leases is an error
//     naming the cause;
//   - a lease lost while its turn runs ([store.Lease].Lost) cancels the
//     turn, which fails with a [*LeaseLostError];
//   - the turn's commit is fenced by the lease's token on a FencedStore
//     ([History.Fence]): a turn whose lease another holder has taken since
//     is not stored, and its prompt fails (gateway.ErrTurnNotStored
//     wrapping [store.ErrFenced]);
//   - a turn whose token is not the one after the token this instance of
//     the session last held (another replica has had the lease since, or
//     the open could not learn it) first reads the session's history again
//     ([History.Reload]), so the model sees the turns committed elsewhere,
//     and gives those to the front end's [Replayer] before the turn runs;
//   - [Core.Open] takes the lease around attaching the history, so that a
//     load's replay is whole, and learns its token; it waits for another
//     holder's at most [CoreOptions.OpenLeaseWait] (10 s), then opens
//     without it and tells the client ([FrontEnd.Tell],
//     [RunningElsewhereText]) that a turn runs elsewhere;
//   - [Core.Delete] takes the lease (a [*BusyError] while another holder
//     runs a turn) and releases it after the delete.
//
// Without Leases (the stdio agent) none of this costs anything: no lease,
// no store round trip.
//
// # Clients on other machines
//
// With [CoreOptions.RemoteClients] (a network gateway's Core), a session's
// cwd and additional directories are paths on its client's machine: they
// must be absolute, not exist here. Its stdio servers start in a private
// temporary directory of the session's, removed when it ends; the roots
// the servers are told of, [InProcessEnv] and [Session.Cwd] keep the
// client's paths.
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
// map them to their protocol's errors; with Leases, a prompt's error may
// be a [*BusyError] or a [*LeaseLostError]. The errors state facts; what
// the user can do about them is each error's Remedy method (a
// [gateway.Remedier]: [NameTakenError.Remedy], [BusyError.Remedy],
// [LeaseLostError.Remedy]), which every front end shows through
// [gateway.ErrorText].
//
// # Concurrency
//
// Every method is safe for concurrent use. The state locks of a [Core] and
// of a [Session] are never held together nor across I/O; a Session's turn
// lock is held for a whole turn and taken before its state lock.
//
// The goroutines of the package, each with the owner that waits for it:
//   - [Core.Shutdown] runs [Session.End] of every live session in a
//     goroutine of its own, and waits for them all;
//   - a [History]'s committer commits the queued turns of every session
//     (group commit). A [History.Append] that finds no commit under way
//     commits its own turn on its goroutine and starts the committer if
//     turns were queued meanwhile; the committer returns once nothing has
//     been queued for 10 seconds or at [History.Close], which waits for it
//     and for a commit under way.
//     Close belongs to whoever built the History (cmd/acp-agent closes it
//     before the store); the History [NewCore] builds when
//     [CoreOptions.History] is nil is never closed: its committer ends
//     when idle, and [Core.Shutdown] flushes it. A fenced commit
//     ([History.Fence]) runs on its Append's own goroutine;
//   - with [CoreOptions.Leases], each prompt turn's watcher of its lease's
//     loss ([store.Lease].Lost), started when the turn has its lease and
//     waited for by the turn before the lease is released;
//   - a session's background tasks: the model's title after the first
//     turn (title.go) and a message told after the open (a turn running
//     elsewhere, lease.go). They run under the session's life, not a
//     caller's request; [Session.End] cancels them and waits for them
//     before it closes the servers.
//
// Each session's [bridge.Manager] owns the goroutines of its server
// connections (connects in parallel, refreshes, sign-ins), and End waits
// for Manager.Close. The callbacks the core gives the bridge (tools and
// prompts changed, a server's state changed, a sign-in to ask for, an
// elicitation, a sampling request) run on the bridge's goroutines, with
// contexts derived from the session's life; they call the [FrontEnd] from
// there.
//
// # Files
//
// One concern a file:
//   - core.go: [Core], [CoreOptions], [NewCore], [OpenRequest] and
//     [Core.Open] (the servers of every origin merged, the in-process
//     servers built, the cwd and quota vetted, the history attached, the
//     bridge's callbacks wired), [Core.Close], [Core.Shutdown], the models,
//     the sentinel errors and [*InvalidError];
//   - live.go: [Session]: its accessors, model and toggles, [Session.Prompt],
//     [Session.Turn], [Session.Cancel], [Session.End];
//   - lifecycle.go: what is done to a stored session, live or not:
//     [Core.Delete], [Core.SetTitle], [Core.Stamp], forks;
//   - session.go: identities, [NewID] and [Key];
//   - frontend.go: what a client offers the core: [FrontEnd],
//     [ServerEvents], [Replayer];
//   - history.go: [History], the gateway's conversation history over the
//     store, with group commit;
//   - lease.go: the fleet's guarantees under [CoreOptions.Leases];
//   - servers.go: a running session's servers changed ([Origin],
//     [ServerChange], [Session.AddServer] and the rest), stored, ${VAR}
//     expanded;
//   - project.go: the project's .mcp.json and its [Approvals];
//   - mode.go: the session's mode ([Session.SetMode]) and /status;
//   - classify.go: a prompt's text read once ([Classify] → [Input]: a
//     message, a front-end command, an MCP prompt, a runner command or an
//     unknown one);
//   - commands.go: the slash commands the core answers itself
//     ([Session.Answer]) and /servers ([ServersText]);
//   - mcpcommand.go: /mcp;
//   - prompts.go: MCP prompts as slash commands ([Session.Commands],
//     [PromptHint], [ParsePromptArgs]);
//   - resources.go: /resources and /read ([ResourcesText], [ReadText]);
//   - sample.go: MCP sampling answered by the session's model once the
//     user allows it;
//   - elicit.go: MCP elicitation asked through the session's editor;
//   - signin.go: a server's OAuth sign-in put to the user ([SignInText],
//     [ServerStateText]);
//   - title.go: titles written by the model ([TitleWatcher]);
//   - observer.go: the [Observer] of sessions, sign-ins and leases, and
//     [Core.ServerStates];
//   - errors.go: [*NameTakenError], [*BusyError], [*LeaseLostError], each
//     with the Remedy a front end shows through [gateway.ErrorText].
package session
