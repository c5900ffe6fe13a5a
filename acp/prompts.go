package acp

import (
	"context"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// commandsChanged sends session sid a new available_commands_update with the session's commands
// (its MCP servers' prompts changed: notifications/prompts/list_changed, or
// a server connected after a sign-in). Running a prompt command is the
// session core's (session.Session.Prompt).
//
// It first waits until the client knows the session (announced), at most
// announceWait.
func (a *Agent) commandsChanged(ctx context.Context, sid string, cmds []runner.Command, announced <-chan struct{}) {
	timer := time.NewTimer(announceWait)
	select {
	case <-announced:
	case <-timer.C:
	}
	timer.Stop()
	a.conn.notify(ctx, sid, availableCommands(cmds))
}
