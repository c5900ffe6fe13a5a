package session

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
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
