// Command sdkfloor is the least an ACP agent built on acp-go-sdk and go-sdk
// does for a "/call" turn: the floor of acp-agent's bridged path in
// BenchmarkCall (e2e), what the two SDKs and one more process cost on the
// machine before any work of the agent's own. It answers initialize;
// session/new connects a go-sdk client to the first stdio entry of
// mcpServers; session/prompt "/call mcp__<server>__<tool> {json}" sends the
// tool_call, calls the tool, sends the tool_call_update with the result and
// answers end_turn, the messages acp-agent sends for the turn (but its
// session_info_update). It keeps no store, checks nothing, runs no policy,
// and writes each update from a small struct of its own (acp-go-sdk's
// union types marshal three times over). Arguments are ignored.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	a := &agent{}
	a.conn = acpsdk.NewConnection(a.handle, os.Stdout, os.Stdin)
	<-a.conn.Done()
	if cs := a.cs.Load(); cs != nil {
		_ = cs.Close()
	}
}

// agent serves one connection and its latest session. Handlers run
// concurrently (acp-go-sdk), so the session's server is an atomic pointer.
type agent struct {
	conn  *acpsdk.Connection
	cs    atomic.Pointer[mcp.ClientSession] // the session's server, set by session/new
	calls atomic.Int64
}

// handle is the connection's acpsdk.MethodHandler.
func (a *agent) handle(ctx context.Context, method string, params json.RawMessage) (any, *acpsdk.RequestError) {
	switch method {
	case acpsdk.AgentMethodInitialize:
		return acpsdk.InitializeResponse{ProtocolVersion: acpsdk.ProtocolVersionNumber}, nil
	case acpsdk.AgentMethodSessionNew:
		return a.newSession(params)
	case acpsdk.AgentMethodSessionPrompt:
		return a.prompt(ctx, params)
	}
	return nil, acpsdk.NewMethodNotFound(method)
}

// newSession connects the first mcpServers entry, a stdio one.
func (a *agent) newSession(params json.RawMessage) (any, *acpsdk.RequestError) {
	var p acpsdk.NewSessionRequest
	if err := json.Unmarshal(params, &p); err != nil || len(p.McpServers) == 0 || p.McpServers[0].Stdio == nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": "want one stdio entry in mcpServers"})
	}
	s := p.McpServers[0].Stdio
	cmd := exec.Command(s.Command, s.Args...)
	for _, e := range s.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdkfloor", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, acpsdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	if old := a.cs.Swap(cs); old != nil { // a new session replaces the last
		_ = old.Close()
	}
	return acpsdk.NewSessionResponse{SessionId: "sess_floor"}, nil
}

// update is a session/update notification's params, written directly.
type update struct {
	SessionID string     `json:"sessionId"`
	Update    updateBody `json:"update"`
}

type updateBody struct {
	SessionUpdate string         `json:"sessionUpdate"`
	ToolCallID    string         `json:"toolCallId"`
	Status        string         `json:"status"`
	Title         string         `json:"title,omitempty"`
	Kind          string         `json:"kind,omitempty"`
	RawInput      map[string]any `json:"rawInput,omitempty"`
	RawOutput     any            `json:"rawOutput,omitempty"`
	Content       []toolContent  `json:"content,omitempty"`
}

type toolContent struct {
	Type    string    `json:"type"`
	Content textBlock `json:"content"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// prompt runs "/call mcp__<server>__<tool> {json}".
func (a *agent) prompt(ctx context.Context, params json.RawMessage) (any, *acpsdk.RequestError) {
	var p acpsdk.PromptRequest
	if err := json.Unmarshal(params, &p); err != nil || len(p.Prompt) == 0 || p.Prompt[0].Text == nil || a.cs.Load() == nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": "want a /call prompt in a session"})
	}
	cmd, argText, _ := strings.Cut(strings.TrimPrefix(p.Prompt[0].Text.Text, "/call "), " ")
	_, tool, _ := strings.Cut(strings.TrimPrefix(cmd, "mcp__"), "__")
	var args map[string]any
	if err := json.Unmarshal([]byte(argText), &args); err != nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	sid := string(p.SessionId)
	id := fmt.Sprintf("call_%d", a.calls.Add(1))
	_ = a.conn.SendNotification(ctx, acpsdk.ClientMethodSessionUpdate, update{SessionID: sid, Update: updateBody{
		SessionUpdate: "tool_call", ToolCallID: id, Status: "in_progress", Title: tool, Kind: "read", RawInput: args}})
	res, err := a.cs.Load().CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, acpsdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	body := updateBody{SessionUpdate: "tool_call_update", ToolCallID: id, Status: "completed", RawOutput: res}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			body.Content = append(body.Content, toolContent{Type: "content", Content: textBlock{Type: "text", Text: t.Text}})
		}
	}
	_ = a.conn.SendNotification(ctx, acpsdk.ClientMethodSessionUpdate, update{SessionID: sid, Update: body})
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
}
