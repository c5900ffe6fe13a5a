package session

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// recordingModel records the last user message it was sent and answers "ok".
type recordingModel struct {
	mu   sync.Mutex
	last []gateway.Content
	n    int
}

func (*recordingModel) Name() string { return "rec" }

func (r *recordingModel) Complete(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
	if req.Purpose == gateway.PurposeTitle { // the session's title, after its first turn: not a turn's request
		return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("A title")}}}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == gateway.RoleUser {
		r.last = req.Messages[n-1].Content
	}
	return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("ok")}}}, nil
}

func (r *recordingModel) sent() ([]gateway.Content, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.n
}

// promptsServer is an in-process server "docs" with the prompts "review"
// (arguments owner, repo required; branch optional), "explain" (one
// argument, topic) and "chat" (a user and an assistant message).
func promptsServer(InProcessEnv) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "review", Description: "Review a repository", Arguments: []*mcp.PromptArgument{
		{Name: "owner", Required: true}, {Name: "repo", Required: true}, {Name: "branch"},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Review %s/%s at %q", a["owner"], a["repo"], a["branch"])}},
		}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "explain", Arguments: []*mcp.PromptArgument{{Name: "topic", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Explain " + req.Params.Arguments["topic"]}}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "sneaky"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "/tools"}}}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "chat", Title: "A chat"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "Hi"}},
			{Role: "assistant", Content: &mcp.TextContent{Text: "Hello, how can I help?"}},
			{Role: "user", Content: &mcp.TextContent{Text: "Tell me a joke"}},
		}}, nil
	})
	return srv
}

// promptsSession opens a session with the "docs" server over a gateway
// whose models are "direct" (the default) and "rec".
func promptsSession(t *testing.T, req OpenRequest) (*Session, *recordingModel) {
	t.Helper()
	rec := &recordingModel{}
	st := memory.New()
	history := NewHistory(st, nil)
	gw := runner.NewLocal(&runner.Options{History: history, Models: []gateway.Model{
		{ID: runner.DirectModelID, Label: "Direct", Provider: runner.NewDirect()},
		{ID: "rec", Label: "Rec", Provider: rec},
	}})
	c := NewCore(&CoreOptions{Gateway: gw, Store: st, History: history, InProcess: []InProcessServer{{Name: "docs", New: promptsServer}}})
	t.Cleanup(c.Shutdown)
	req.Cwd = t.TempDir()
	s, err := c.Open(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return s, rec
}

func TestSession_CommandsIncludePrompts(t *testing.T) {
	s, _ := promptsSession(t, OpenRequest{})
	cmds := s.Commands()
	base := runner.Commands()
	if !reflect.DeepEqual(cmds[:len(base)], base) {
		t.Fatalf("the commands do not start with runner.Commands: %+v", cmds)
	}
	want := []runner.Command{
		{Name: "docs:review", Hint: "owner=<owner> repo=<repo> [branch=<branch>]", Description: "Review a repository (MCP server docs)"},
		{Name: "docs:explain", Hint: "<topic>", Description: "Prompt explain (MCP server docs)"},
		{Name: "docs:chat", Description: "A chat (MCP server docs)"},
		{Name: "docs:sneaky", Description: "Prompt sneaky (MCP server docs)"},
	}
	got := cmds[len(base):]
	byName := map[string]runner.Command{}
	for _, c := range got {
		byName[c.Name] = c
	}
	for _, w := range want {
		if byName[w.Name] != w {
			t.Errorf("command %s = %+v, want %+v", w.Name, byName[w.Name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("prompt commands = %+v, want %d", got, len(want))
	}
}

func TestParsePromptArgs(t *testing.T) {
	review := bridge.PromptCommand{Name: "s:review", Arguments: []bridge.PromptArgument{{Name: "owner", Required: true}, {Name: "repo"}}}
	one := bridge.PromptCommand{Name: "s:one", Arguments: []bridge.PromptArgument{{Name: "topic"}}}
	for _, tt := range []struct {
		p       bridge.PromptCommand
		text    string
		want    map[string]string
		wantErr string
	}{
		{review, "", map[string]string{}, ""},
		{review, "owner=me repo=x", map[string]string{"owner": "me", "repo": "x"}, ""},
		{review, `owner="a b" repo='c "d"'`, map[string]string{"owner": "a b", "repo": `c "d"`}, ""},
		{review, `owner="a \"q\""`, map[string]string{"owner": `a "q"`}, ""},
		{review, "owner=", map[string]string{"owner": ""}, ""},
		{review, "me x", nil, `"me" is not key=value (usage: /s:review owner=<owner> [repo=<repo>])`},
		{review, "owner=a owner=b", nil, `argument "owner" is given twice`},
		{review, `owner="open`, nil, "unterminated \" quote"},
		{one, "how quotes work", map[string]string{"topic": "how quotes work"}, ""},
		{one, `"  padded  "`, map[string]string{"topic": "  padded  "}, ""},
		{one, `topic=x`, map[string]string{"topic": "x"}, ""},
		{one, `a=b c`, map[string]string{"topic": "a=b c"}, ""},
	} {
		got, err := ParsePromptArgs(tt.p, tt.text)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParsePromptArgs(%s, %q) = %v, %v; want error %q", tt.p.Name, tt.text, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParsePromptArgs(%s, %q) = %v, %v; want %v", tt.p.Name, tt.text, got, err, tt.want)
		}
	}
}

// TestSession_PromptCommandIsTheUserTurn: with a model, the prompt's
// messages are the user's message; an assistant message is marked.
func TestSession_PromptCommandIsTheUserTurn(t *testing.T) {
	s, rec := promptsSession(t, OpenRequest{})
	if err := s.SetModel(t.Context(), "rec"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		text string
		want []gateway.Content
	}{
		{`/docs:review owner=acme repo="rocket ship"`, []gateway.Content{gateway.TextContent(`Review acme/rocket ship at ""`)}},
		{`/docs:explain the borrow checker`, []gateway.Content{gateway.TextContent("Explain the borrow checker")}},
		{`/docs:sneaky`, []gateway.Content{gateway.TextContent("Prompt /docs:sneaky:"), gateway.TextContent("/tools")}},
		{`/docs:chat`, []gateway.Content{
			gateway.TextContent("[user]"), gateway.TextContent("Hi"),
			gateway.TextContent("[assistant]"), gateway.TextContent("Hello, how can I help?"),
			gateway.TextContent("[user]"), gateway.TextContent("Tell me a joke"),
		}},
	} {
		stop, err := s.Prompt(t.Context(), PromptRequest{Content: []gateway.Content{gateway.TextContent(tt.text)}})
		if err != nil || stop != gateway.StopEndTurn {
			t.Fatalf("%s: %v %v", tt.text, stop, err)
		}
		if got, _ := rec.sent(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: the model got %+v, want %+v", tt.text, got, tt.want)
		}
	}
}

// TestSession_PromptCommandErrors: a missing argument, an unknown prompt
// and bad input are agent text naming the prompt and the rule; the model
// is not called and the turn ends normally.
func TestSession_PromptCommandErrors(t *testing.T) {
	s, rec := promptsSession(t, OpenRequest{})
	if err := s.SetModel(t.Context(), "rec"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ text, want string }{
		{"/docs:review owner=acme", "Prompt /docs:review failed: bad prompt arguments: /docs:review: missing required arguments: repo"},
		{"/docs:review owner=acme repo=x colour=red", "unknown arguments: colour (it takes: owner, repo, branch)"},
		{"/docs:nope", "unknown prompt: /docs:nope is not a prompt of this session's MCP servers"},
		{"/docs:review acme", `"acme" is not key=value`},
	} {
		var text strings.Builder
		stop, err := s.Prompt(t.Context(), PromptRequest{Content: []gateway.Content{gateway.TextContent(tt.text)},
			Emit: func(ev gateway.Event) { text.WriteString(ev.Text) }})
		if err != nil || stop != gateway.StopEndTurn {
			t.Errorf("%s: stop %v err %v, want a normal end", tt.text, stop, err)
		}
		if !strings.Contains(text.String(), tt.want) {
			t.Errorf("%s: said %q, want %q", tt.text, text.String(), tt.want)
		}
	}
	if _, n := rec.sent(); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
	// A message that merely starts with a path is no command.
	if _, err := s.Prompt(t.Context(), PromptRequest{Content: []gateway.Content{gateway.TextContent("/usr/lib:12 fails")}}); err != nil {
		t.Fatal(err)
	}
	if got, n := rec.sent(); n != 1 || gateway.PromptText(got) != "/usr/lib:12 fails" {
		t.Errorf("the model got %d requests, the last %+v; want the message as typed", n, got)
	}
}

// TestSession_PromptCommandInDirectMode: without a model the messages are
// shown, each under its role.
func TestSession_PromptCommandInDirectMode(t *testing.T) {
	s, _ := promptsSession(t, OpenRequest{})
	var text strings.Builder
	stop, err := s.Prompt(t.Context(), PromptRequest{Content: []gateway.Content{gateway.TextContent("/docs:chat")},
		Emit: func(ev gateway.Event) { text.WriteString(ev.Text) }})
	if err != nil || stop != gateway.StopEndTurn {
		t.Fatal(stop, err)
	}
	want := "Prompt /docs:chat\n\n[user] Hi\n\n[assistant] Hello, how can I help?\n\n[user] Tell me a joke\n"
	if text.String() != want {
		t.Errorf("direct mode shows %q, want %q", text.String(), want)
	}
}

// TestSession_CommandsChanged: a prompts/list_changed gives the front end
// the new commands (a front end that must first announce the session holds
// them back itself: acp.TestAgent_HoldsBackUntilAnnounced).
func TestSession_CommandsChanged(t *testing.T) {
	got := make(chan []runner.Command, 10)
	var srv *mcp.Server
	rec := &recordingModel{}
	st := memory.New()
	history := NewHistory(st, nil)
	gw := runner.NewLocal(&runner.Options{History: history, Models: []gateway.Model{{ID: "rec", Label: "Rec", Provider: rec}}})
	c := NewCore(&CoreOptions{Gateway: gw, Store: st, History: history, InProcess: []InProcessServer{{Name: "docs", New: func(env InProcessEnv) *mcp.Server {
		srv = promptsServer(env)
		return srv
	}}}})

	t.Cleanup(c.Shutdown)
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir(), FrontEnd: commandsFrontEnd(got)})
	if err != nil {
		t.Fatal(err)
	}
	srv.AddPrompt(&mcp.Prompt{Name: "late"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	// The front end is handed s.Commands() once the prompts were listed
	// again: when it has the new one, so has the session.
	deadline := time.After(20 * time.Second)
	for {
		select {
		case cmds := <-got:
			if has(cmds, "docs:late") {
				if !has(s.Commands(), "docs:late") {
					t.Fatal("the prompts were not refreshed after a prompt was added")
				}
				return
			}
		case <-deadline:
			t.Fatal("no new commands after a prompt was added")
		}
	}
}

func has(cmds []runner.Command, name string) bool {
	for _, c := range cmds {
		if c.Name == name {
			return true
		}
	}
	return false
}

// commandsFrontEnd is a FrontEnd that only passes the commands updates on.
type commandsFrontEnd chan<- []runner.Command

func (commandsFrontEnd) Editor(string) editor.Editor          { return nil }
func (commandsFrontEnd) Ask(string) gateway.AskFunc           { return nil }
func (commandsFrontEnd) Tell(context.Context, string, string) {}
func (f commandsFrontEnd) CommandsChanged(_ context.Context, _ string, cmds []runner.Command) {
	f <- cmds
}
func (commandsFrontEnd) Dial(context.Context, string, bridge.ServerSpec) (mcp.Transport, error) {
	return nil, errors.New("no hosted servers")
}
