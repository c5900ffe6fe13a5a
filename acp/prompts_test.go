package acp

import (
	"context"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
)

// TestAgent_PromptCommands: a server's prompts are in the session's
// available_commands_update, run as commands, and a prompts/list_changed
// sends a new update.
func TestAgent_PromptCommands(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "hello", Description: "Say hello", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello " + req.Params.Arguments["who"]}}}}, nil
		})
	h := startAgentWith(t, testOptions{Bridge: bridge.Options{Dial: func(ctx context.Context, _ bridge.ServerSpec) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}}})
	sid := h.newSession(acpclient.Stdio("docs", "unused", nil, nil))
	commands := func(u *acpsdk.SessionAvailableCommandsUpdate) map[string]string {
		out := map[string]string{}
		for _, c := range u.AvailableCommands {
			hint := ""
			if c.Input != nil && c.Input.Unstructured != nil {
				hint = c.Input.Unstructured.Hint
			}
			out[c.Name] = c.Description + " | " + hint
		}
		return out
	}
	var first *acpsdk.SessionAvailableCommandsUpdate
	for _, u := range h.client.Updates() {
		if string(u.SessionId) == sid && u.Update.AvailableCommandsUpdate != nil {
			first = u.Update.AvailableCommandsUpdate
		}
	}
	if got := commands(first)["docs:hello"]; got != "Say hello (MCP server docs) | <who>" {
		t.Errorf("docs:hello advertised as %q; all: %v", got, commands(first))
	}
	if _, ok := commands(first)["tools"]; !ok {
		t.Errorf("the built-in commands are gone: %v", commands(first))
	}

	stop, out := h.prompt(t.Context(), sid, "/docs:hello world")
	if got := joinText(out); stop != acpsdk.StopReasonEndTurn || !strings.Contains(got, "[user] Hello world") {
		t.Errorf("/docs:hello world: %s %q", stop, got)
	}
	stop, out = h.prompt(t.Context(), sid, "/docs:hello")
	if got := joinText(out); stop != acpsdk.StopReasonEndTurn || !strings.Contains(got, "missing required arguments: who") {
		t.Errorf("/docs:hello: %s %q", stop, got)
	}

	from := len(h.client.Updates())
	srv.AddPrompt(&mcp.Prompt{Name: "bye"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, _, err := h.client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		u := n.Update.AvailableCommandsUpdate
		if string(n.SessionId) != sid || u == nil {
			return false
		}
		_, ok := commands(u)["docs:bye"]
		return ok
	}); err != nil {
		t.Fatalf("no available_commands_update with the new prompt: %v", err)
	}
}
