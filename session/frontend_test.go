package session_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// testFrontEnd is a session.FrontEnd of functions; a nil one offers nothing.
type testFrontEnd struct {
	editor func(sessionID string) editor.Editor
	ask    func(sessionID string) gateway.AskFunc
}

func (f testFrontEnd) Editor(sid string) editor.Editor {
	if f.editor == nil {
		return nil
	}
	return f.editor(sid)
}

func (f testFrontEnd) Ask(sid string) gateway.AskFunc {
	if f.ask == nil {
		return nil
	}
	return f.ask(sid)
}

func (testFrontEnd) Tell(context.Context, string, string) {}

func (testFrontEnd) CommandsChanged(context.Context, string, []runner.Command) {}

func (testFrontEnd) Dial(_ context.Context, _ string, spec bridge.ServerSpec) (mcp.Transport, error) {
	return nil, fmt.Errorf("MCP server %q: the test client hosts no servers", spec.Name)
}
