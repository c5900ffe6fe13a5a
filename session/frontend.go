package session

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// FrontEnd is what a session's client offers the core: given once per
// Open (OpenRequest.FrontEnd) by the front end serving that client (acp's
// editor connection; mcpserver offers none). Its methods get the session's
// ID; they may be called from any goroutine of the session, concurrently,
// and until the session has ended.
type FrontEnd interface {
	// Editor returns the session's editor (ACP fs/*, terminal/*,
	// elicitation/*), or nil for none. It is called before the in-process
	// servers are built and before the servers connect.
	Editor(sessionID string) editor.Editor
	// Ask returns the session's permission asker (ACP
	// session/request_permission), or nil for none. With one, the
	// session's servers may sample its model after asking the user (see
	// bridge.Sampler); without, they are offered no sampling.
	Ask(sessionID string) gateway.AskFunc
	// Tell shows the user a message outside any turn (an ACP agent
	// message): a server's sign-in link when the editor cannot open it, and
	// what became of a server that connected after the open (a sign-in).
	// A front end whose client must first learn of the session holds the
	// messages back itself.
	Tell(ctx context.Context, sessionID, text string)
	// CommandsChanged gives the client the session's new slash commands
	// (Session.Commands) after its servers' prompts changed (ACP
	// available_commands_update). Calls come one at a time, from a
	// goroutine of the session's bridge.Manager, and must not block for
	// long.
	CommandsChanged(ctx context.Context, sessionID string, cmds []runner.Command)
	// Dial returns the transport of an MCP server the client hosts itself
	// (bridge.TransportACP: MCP-over-ACP), or an error saying why there is
	// none.
	Dial(ctx context.Context, sessionID string, spec bridge.ServerSpec) (mcp.Transport, error)
}

// ServerEvents is a FrontEnd that takes what becomes of a session's servers
// after the open as events, to show as it sees fit (ACP session notices).
// Without it, the core tells the user through Tell what they must act on
// or know: a server's sign-in link (SignInText) and how a connect that
// went on after the open ended (ServerStateText); a lost or returned
// connection is only logged. Its methods are called from goroutines of
// the session's bridge.Manager or of a tool call, with a bounded ctx, and
// must not block for long.
type ServerEvents interface {
	// ServerChanged tells of one server's change (ServerEvent).
	ServerChanged(ctx context.Context, sessionID string, e ServerEvent)
	// SignIn tells the user that server needs them to sign in at authURL,
	// which the editor could not open itself (no URL elicitation).
	SignIn(ctx context.Context, sessionID, server, authURL string)
}

// ServerEvent is a change of one of a session's servers after the open.
type ServerEvent struct {
	// Status is the server's status after the change.
	Status bridge.ServerStatus
	// Link is false for a connect that went on after the open (a sign-in,
	// /login) and ended, connected or failed (bridge.Options.OnStateChanged);
	// true for a connection that ended on its own (lost or failed) or came
	// back (bridge.Options.OnLinkChanged).
	Link bool
}

// Replayer is a FrontEnd that can show its client turns of a session that
// ran elsewhere: with CoreOptions.Leases, when a prompt turn finds that
// another replica committed turns of the session since this Core attached
// it (the client moved between replicas, or a turn ran there while the
// session opened here), the session's history is read again and Replay
// gets those turns, oldest first, before the turn runs, so they precede
// its events (acp: session/update notifications, as session/load replays).
// It is called on the turn's goroutine, with the turn's ctx, and returns
// once they are sent (or ctx ends). Without it, the model sees those turns
// and the client is not shown them.
type Replayer interface {
	Replay(ctx context.Context, sessionID string, turns []store.Turn)
}
