// Package mcpserver serves acp-agent as an MCP server (acp-agent
// mcp-server): a second front end over the same session core as the ACP one
// (package session), with one tool, ask_agent, that other agents call to
// hand work to acp-agent.
//
// # The tool
//
// ask_agent takes a message (the user's prompt, passed unmodified) and an
// optional sessionKey. Without a key each call opens a new conversation (a
// session of the core, whose ID is the key: "sess_" and 26 random base32
// characters, unguessable); with one, the conversation continues with its
// history: the live session if open, else the stored one reopened
// (session.Core.Open), so it survives restarts. Keys are session IDs, so two
// keys never share history, and calls with one key run one turn at a time.
//
// The result's text is the agent's answer; its structuredContent ([Output])
// also carries the sessionKey, the stop reason and the tool calls (name,
// status). A failure is an isError result naming the cause: an unknown key,
// no model configured for a message that is not a slash command, the
// provider's error, a cancelled turn. Slash commands (/help, /tools, /call,
// and /servers through session.FrontEndCommand) work as in the ACP front
// end's direct mode.
//
// While a turn runs, a call that sent a progress token gets
// notifications/progress for each text chunk and each tool call's start and
// end; notifications/cancelled cancels the turn and its tool calls.
//
// # Permissions
//
// Tool calls the permissions policy asks about go to the calling client as
// a form elicitation (allow, always) when it declared the elicitation
// capability: elicitation/create while the call runs (protocol versions
// before 2026-07-28), or an input-required result the client answers by
// retrying the call (multi round-trip requests, 2026-07-28 and later; the
// turn waits, at most the idle timeout). A client that cannot be asked gets
// the call refused, and the result says which tool and why.
//
// # Lifetime
//
// A conversation unused for Options.IdleTimeout is ended (its MCP servers
// closed) by a sweeper the server owns, and reopened from the store on its
// next call. The function New returns ends every live conversation and
// waits for the server's goroutines.
package mcpserver
