package acp

import (
	"context"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// frontEnd is the session.FrontEnd of one open (session/new, load, resume
// or fork): what the client offers the session (its editor, permission
// questions, the MCP servers it hosts) and what the session core tells it
// outside a turn, held back until the client knows the session (announced:
// the channel of this open, closed by Agent.afterNewSession; the
// announcer's rule 1, announce.go).
type frontEnd struct {
	a         *Agent
	announced chan struct{}
}

var (
	_ session.ServerEvents = (*frontEnd)(nil) // notices.go
	_ session.TitleWatcher = (*frontEnd)(nil) // lifecycle.go
	_ session.Replayer     = (*frontEnd)(nil) // load.go
)

// Editor implements session.FrontEnd: the client's fs/*, terminal/* and
// elicitation/* (editor.go), its elicitations held back.
func (f *frontEnd) Editor(sid string) editor.Editor { return f.a.clientEditor(sid, f.announced) }

// Ask implements session.FrontEnd: session/request_permission
// (permission.go).
func (f *frontEnd) Ask(sid string) gateway.AskFunc { return f.a.askFunc(sid) }

// Tell implements session.FrontEnd: an agent message outside any turn,
// once the client knows the session, unless ctx ends first.
func (f *frontEnd) Tell(ctx context.Context, sid, text string) {
	if f.waitAnnounced(ctx) {
		f.a.conn.notify(ctx, sid, acpsdk.UpdateAgentMessageText(text))
	}
}

// waitAnnounced waits until the client knows the session; false if ctx
// ended first.
func (f *frontEnd) waitAnnounced(ctx context.Context) bool {
	select {
	case <-f.announced:
		return true
	case <-ctx.Done():
		return false
	}
}

// CommandsChanged implements session.FrontEnd: an
// available_commands_update (prompts.go), once the client knows the
// session (at most announceWait).
func (f *frontEnd) CommandsChanged(ctx context.Context, sid string, cmds []runner.Command) {
	f.a.commandsChanged(ctx, sid, cmds, f.announced)
}

// Dial implements session.FrontEnd: a server the client hosts, over
// MCP-over-ACP (mcpacp.go).
func (f *frontEnd) Dial(_ context.Context, _ string, spec bridge.ServerSpec) (mcp.Transport, error) {
	return f.a.conn.mcp.transport(spec), nil
}
