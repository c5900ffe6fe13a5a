package session

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
)

// subagentProvider plays a parent that calls task once and a child that
// reports, told apart by the system prompt.
type subagentProvider struct{}

func (subagentProvider) Name() string { return "scripted" }

func (subagentProvider) Complete(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
	u := gateway.Usage{InputTokens: 10, OutputTokens: 1, Requests: 1}
	last := req.Messages[len(req.Messages)-1]
	switch {
	case req.System == runner.DefaultSubagentPrompt:
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("child report")}}, Usage: u}, nil
	case last.Role == gateway.RoleTool:
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("parent done")}}, Usage: u}, nil
	}
	return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: "t1", Name: gateway.TaskToolName,
		Args: map[string]any{"description": "Look", "prompt": "child task"}}}}, Usage: u}, nil
}

// A subagent's run is stored with its parent's turn, in the store's
// transcript, and a reopened session gets it back for replay; its usage is
// in the parent turn's.
func TestSession_SubagentRunIsStoredWithTheParent(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "sessions.db")
	open := func() (*Core, store.Store) {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		history := NewHistory(st, nil)
		core := NewCore(&CoreOptions{Store: st, History: history, Gateway: runner.NewLocal(&runner.Options{History: history,
			Models: []gateway.Model{{ID: "scripted", Provider: subagentProvider{}}}, Subagents: &runner.Subagents{}})})
		t.Cleanup(func() { core.Shutdown(); _ = st.Close() })
		return core, st
	}
	core, _ := open()
	s, err := core.Open(ctx, OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if stop, err := s.Prompt(ctx, PromptRequest{Content: []gateway.Content{gateway.TextContent("go")}, System: "parent"}); err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Prompt = %s, %v", stop, err)
	}
	id := s.ID()
	s.End()
	core.Shutdown()

	again, _ := open()
	var turns []store.Turn
	if _, err := again.Open(ctx, OpenRequest{ID: id, Cwd: s.Cwd(), Replay: func(ts []store.Turn) { turns = ts }}); err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || len(turns[0].Messages) != 4 {
		t.Fatalf("stored turns = %+v", turns)
	}
	res := turns[0].Messages[2].Result
	if res == nil || res.Subagent == nil || res.Subagent.Name != "task-t1" || len(res.Subagent.Turn.Messages) != 2 ||
		!strings.Contains(gateway.PromptText(res.Subagent.Turn.Messages[0].Content), "child task") || res.Subagent.Turn.Usage.Requests != 1 {
		t.Fatalf("stored task result = %+v", res)
	}
	if u := turns[0].Usage; u.Requests != 3 || u.InputTokens != 30 {
		t.Errorf("the parent turn's usage = %+v, want its 2 requests and the child's", u)
	}
}
