// Package mcpserver serves acp-agent as an MCP server (acp-agent
// mcp-server): a second front end over the same session core as the ACP one
// (package session), with one tool, ask_agent, that other agents call to
// hand work to acp-agent.
//
// # The tool
//
// ask_agent takes a message (the user's prompt, passed unmodified) and an
// optional sessionKey naming the conversation, a session of the core that
// continues with its history: the live session if open, else the stored one
// reopened (session.Core.Open), so it survives restarts. Calls with one key
// run one turn at a time.
//
// # Session keys
//
//   - Without a key, a call starts a new conversation under a key the agent
//     issues: "sess_" and 26 random base32 characters (session.NewID),
//     unguessable; the result returns it.
//   - A client may choose its own key (CheckKey: 1 to MaxKeyLength visible
//     ASCII characters, '!' to '~'; the input schema says so too), such as
//     "user-123-conversation": its first use starts the conversation under
//     it, later uses continue it. A key outside the rules is an error.
//   - Keys are per client. The client of a call is the UserID of the
//     auth.TokenInfo its transport attached (acp-agent mcp-server --listen
//     sets a digest of the bearer token), or, without one (stdio, HTTP
//     without a token), the one local client. The same key from two clients
//     names two conversations, and a requestState issued to one client's
//     call is refused to another's.
//   - The stored session's ID is a digest of client and key: "mcp_" and 26
//     base32 characters, so the store holds neither the key nor the client's
//     identity. A key of the issued form from the local client is the
//     session's ID itself (every key was a session ID before clients could
//     choose theirs).
//   - A key continues only a conversation the server started (its stored
//     record carries the gateway key "mcp:<session ID>", which an ACP
//     client cannot choose; a digest ID, "mcp_…", is the server's too),
//     and only in the directory it was started in, as ACP session/load
//     requires. A key of the issued form that names a session an editor
//     opened over ACP, or a conversation started in another directory, is
//     an isError result naming the key and both directories; nothing runs
//     and nothing is stored. (Conversations stored under an issued key
//     before the marker existed look like an editor's and are refused.)
//
// The result's text is the agent's answer; its structuredContent ([Output])
// also carries the sessionKey, the stop reason and the tool calls (name,
// status). A failure is an isError result naming the cause: a malformed
// key, no model configured for a message that is not a slash command, the
// provider's error, a cancelled turn. The message is classified once
// (session.Classify); slash commands (/help, /tools, /call, and /servers
// through session.Session.Answer) work as in the ACP front end's direct
// mode.
//
// While a turn runs, a call that sent a progress token gets
// notifications/progress for each text chunk and each tool call's start and
// end; notifications/cancelled (or, served statelessly with go-sdk's
// PropagateRequestCancellation, the end of the call's HTTP request) cancels
// the turn and its tool calls. A client that asked for log messages
// (logging/setLevel, or a 2026-07-28 request's logLevel) gets
// notifications/message for each tool call's start and end, a call refused
// without asking, and a turn that failed or was cancelled.
//
// # Capabilities
//
// The server declares exactly what it answers: tools (ask_agent; the list
// never changes), logging, and prompts and resources with empty lists
// (go-sdk answers their methods, and a server that answers prompts/list
// must declare prompts). No completions, no resource subscriptions, and no
// tasks extension (io.modelcontextprotocol/tasks: go-sdk v1.8.0 does not
// implement it).
//
// # Permissions
//
// Tool calls the permissions policy asks about go to the calling client as
// a form elicitation (allow, always) when it declared the elicitation
// capability: elicitation/create while the call runs (protocol versions
// before 2026-07-28), or an input-required result the client answers by
// retrying the call (multi round-trip requests, 2026-07-28 and later, which
// also works when the server is served statelessly; the turn waits, at
// most the idle timeout). A client that cannot be asked gets the call
// refused, and the result says which tool and why.
//
// # Lifetime
//
// A conversation unused for Options.IdleTimeout is ended (its MCP servers
// closed) by a sweeper the server owns, and reopened from the store on its
// next call. The function New returns ends every live conversation and
// waits for the server's goroutines. The server holds no per-connection
// state: it may be served statelessly (each request on its own session, as
// go-sdk's StreamableHTTPOptions.Stateless does for 2026-07-28).
//
// On stdio ([NewStdioTransport]) every request read is answered, also when
// stdin ends right after it: the end reaches go-sdk only once the requests
// read before it have been answered (30 s at most), and a tools/call under
// way then (an ask_agent turn) is cancelled and answers that the turn was
// cancelled, as the ACP front end answers a running prompt.
package mcpserver
