package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// lastCommands returns the commands of the last available_commands_update of
// session sid in updates, or nil.
func lastCommands(updates []acpsdk.SessionNotification, sid string) []acpsdk.AvailableCommand {
	var cmds []acpsdk.AvailableCommand
	for _, u := range updates {
		if string(u.SessionId) == sid && u.Update.AvailableCommandsUpdate != nil {
			cmds = u.Update.AvailableCommandsUpdate.AvailableCommands
		}
	}
	return cmds
}

func findCommand(cmds []acpsdk.AvailableCommand, name string) *acpsdk.AvailableCommand {
	for i := range cmds {
		if cmds[i].Name == name {
			return &cmds[i]
		}
	}
	return nil
}

func hint(c *acpsdk.AvailableCommand) string {
	if c == nil || c.Input == nil || c.Input.Unstructured == nil {
		return ""
	}
	return c.Input.Unstructured.Hint
}

// TestPrompts_EverythingInDirectMode: server-everything's prompts are
// commands with their descriptions and argument hints; running one shows its
// messages; a missing argument is named.
func TestPrompts_EverythingInDirectMode(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	sid := a.newSession(t.TempDir(), everythingServer("everything"))
	cmds := lastCommands(a.Client.Updates(), sid)
	args := findCommand(cmds, "everything:args-prompt")
	if args == nil || args.Description != "A prompt with two arguments, one required and one optional (MCP server everything)" || hint(args) != "city=<city> [state=<state>]" {
		t.Fatalf("everything:args-prompt = %+v (hint %q) among %d commands", args, hint(args), len(cmds))
	}
	if c := findCommand(cmds, "everything:simple-prompt"); c == nil || c.Input != nil {
		t.Errorf("everything:simple-prompt = %+v, want it without input", c)
	}
	if findCommand(cmds, "tools") == nil || findCommand(cmds, "call") == nil {
		t.Errorf("the built-in commands are gone: %+v", cmds)
	}

	for _, tt := range []struct{ prompt, want string }{
		{"/everything:args-prompt city=Paris state=TX", "[user] What's weather in Paris, TX?"},
		{`/everything:args-prompt city="New York"`, "[user] What's weather in New York?"},
		{"/everything:simple-prompt", "[user] This is a simple prompt without arguments."},
		{"/everything:resource-prompt resourceType=Text resourceId=1", "This prompt includes the Text resource with id: 1"},
		{"/everything:args-prompt state=TX", "Prompt /everything:args-prompt failed: bad prompt arguments: /everything:args-prompt: missing required arguments: city"},
		{"/everything:nope", "/everything:nope is not a prompt of this session's MCP servers"},
	} {
		stop, out := a.prompt(sid, tt.prompt)
		if stop != acpsdk.StopReasonEndTurn || !strings.Contains(text(out), tt.want) {
			t.Errorf("%s: stop %s, said %q; want %q", tt.prompt, stop, text(out), tt.want)
		}
	}
}

// TestPrompts_ModelGetsTheUserTurn: with a model, a prompt command's
// messages reach the model as the user's message, not the command.
func TestPrompts_ModelGetsTheUserTurn(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	a := modelBackends[0].start(t, fake.URL)
	sid := a.newSession(t.TempDir(), everythingServer("everything"))
	fake.Push(fakemodel.Turn{Text: "It is sunny."})
	stop, out := a.prompt(sid, "/everything:args-prompt city=Paris state=TX")
	if stop != acpsdk.StopReasonEndTurn || text(out) != "It is sunny." {
		t.Fatalf("stop %s, said %q\n%s", stop, text(out), dump(out))
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the model got %d requests, want 1", len(reqs))
	}
	msgs, _ := reqs[0].JSON["messages"].([]any)
	last, _ := json.Marshal(msgs[len(msgs)-1])
	if !strings.Contains(string(last), "weather in Paris, TX?") || strings.Contains(string(last), "args-prompt") || !strings.Contains(string(last), `"user"`) {
		t.Errorf("the model's last message = %s, want the prompt's user text", last)
	}
}

// TestPrompts_ListChangedRefreshesTheCommands: a server's
// prompts/list_changed sends a new available_commands_update with the new
// prompt, which then runs (key=value, or bare text for its one argument).
func TestPrompts_ListChangedRefreshesTheCommands(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""))
	if c := findCommand(lastCommands(a.Client.Updates(), sid), "fixture:greeting"); c == nil || hint(c) != "<name>" {
		t.Fatalf("fixture:greeting = %+v", c)
	}
	from := len(a.Client.Updates())
	if _, out := a.prompt(sid, `/call mcp__fixture__add_prompt {"name":"late"}`); !strings.Contains(contentText(finalToolUpdate(t, out)), "added prompt late") {
		t.Fatalf("add_prompt: %s", dump(out))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		u := n.Update.AvailableCommandsUpdate
		return string(n.SessionId) == sid && u != nil && findCommand(u.AvailableCommands, "fixture:late") != nil
	}); err != nil {
		t.Fatalf("no available_commands_update with fixture:late: %v", err)
	}
	for _, tt := range []struct{ prompt, want string }{
		{"/fixture:late arg=x", "[user] late says x"},
		{"/fixture:late hello there", "[user] late says hello there"},
		{"/fixture:greeting Ada", "[user] Say hello to Ada"},
	} {
		if _, out := a.prompt(sid, tt.prompt); !strings.Contains(text(out), tt.want) {
			t.Errorf("%s: said %q, want %q", tt.prompt, text(out), tt.want)
		}
	}
}

// TestToolPresentation_TitleKindAndStructuredOnly: a tool's title and
// annotations make the tool_call's title and kind; a structured-only result
// shows its JSON as content and keeps it in rawOutput; a result with text
// and structured content shows the text alone, the structured content in
// rawOutput only (shown once, though the model reads both).
func TestToolPresentation_TitleKindAndStructuredOnly(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""), everythingServer("everything"))
	for _, tt := range []struct {
		prompt, title string
		kind          acpsdk.ToolKind
		content       string
	}{
		{"/call mcp__fixture__weather", "Weather Report (fixture)", acpsdk.ToolKindFetch, `{"celsius":21,"sky":"clear"}`},
		{`/call mcp__fixture__weather {"summary":true}`, "Weather Report (fixture)", acpsdk.ToolKindFetch, "21 °C, clear"},
		{`/call mcp__everything__echo {"message":"hi"}`, "Echo Tool (everything)", acpsdk.ToolKindRead, "Echo: hi"},
		{"/call mcp__fixture__slow {\"seconds\":0}", "fixture/slow", acpsdk.ToolKindOther, ""},
	} {
		_, out := a.prompt(sid, tt.prompt)
		var start *acpsdk.SessionUpdateToolCall
		for _, u := range out {
			if u.Update.ToolCall != nil {
				start = u.Update.ToolCall
			}
		}
		if start == nil || start.Title != tt.title || start.Kind != tt.kind {
			t.Errorf("%s: tool_call %+v, want title %q kind %q", tt.prompt, start, tt.title, tt.kind)
			continue
		}
		end := finalToolUpdate(t, out)
		if tt.content != "" && contentText(end) != tt.content {
			t.Errorf("%s: content %q, want %q", tt.prompt, contentText(end), tt.content)
		}
		if tt.title == "Weather Report (fixture)" {
			if n := len(end.Content); n != 1 {
				t.Errorf("%s: %d content blocks, want the result shown once", tt.prompt, n)
			}
			raw, _ := json.Marshal(end.RawOutput)
			if !strings.Contains(string(raw), `"structuredContent":{"celsius":21,"sky":"clear"}`) {
				t.Errorf("rawOutput = %s, want the structured content", raw)
			}
		}
	}
}

// TestSlashCommands_HelpExampleAndUnknown: /help's example /call names a
// tool the session has (here a read-only tool of the fixture server, no
// hard-coded tool of another server), an unknown command says it is
// unknown, and a message starting with a path is not taken for one.
func TestSlashCommands_HelpExampleAndUnknown(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""))
	_, out := a.prompt(sid, "/help")
	help := text(out)
	i := strings.Index(help, "e.g. /call mcp__fixture__")
	if i < 0 || strings.Contains(help, "mcp__everything__") {
		t.Fatalf("/help = %q, want an example /call of a fixture tool", help)
	}
	// The example runs as written.
	example := strings.TrimPrefix(strings.SplitN(help[i:], "\n", 2)[0], "e.g. ")
	if _, out := a.prompt(sid, example); finalToolUpdate(t, out).Status == nil || *finalToolUpdate(t, out).Status != acpsdk.ToolCallStatusCompleted {
		t.Errorf("%s: %+v, want completed", example, finalToolUpdate(t, out))
	}
	if _, out := a.prompt(sid, "/halp"); text(out) != "Unknown command /halp; /help lists them." {
		t.Errorf("/halp said %q", text(out))
	}
	if _, out := a.prompt(sid, "/usr/bin/foo is broken"); !strings.Contains(text(out), "Commands:") {
		t.Errorf("a message about a path said %q, want the direct-mode help (no model here)", text(out))
	}
}

// TestToolKind_FollowsWhatTheToolDoes: server-filesystem marks write_file,
// edit_file and move_file destructiveHint; the editor sees write_file as an
// edit (not a delete) and move_file as a move, read-only tools as reads.
func TestToolKind_FollowsWhatTheToolDoes(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	dir := t.TempDir()
	sid := a.newSession(dir, acpclient.Stdio("fs", "node", []string{filesystem, dir}, nil))
	a1, a2 := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	for _, tt := range []struct {
		call string
		kind acpsdk.ToolKind
	}{
		{fmt.Sprintf(`/call mcp__fs__write_file {"path":%q,"content":"hi"}`, a1), acpsdk.ToolKindEdit},
		{fmt.Sprintf(`/call mcp__fs__edit_file {"path":%q,"edits":[{"oldText":"hi","newText":"ho"}]}`, a1), acpsdk.ToolKindEdit},
		{fmt.Sprintf(`/call mcp__fs__move_file {"source":%q,"destination":%q}`, a1, a2), acpsdk.ToolKindMove},
		{fmt.Sprintf(`/call mcp__fs__read_text_file {"path":%q}`, a2), acpsdk.ToolKindRead},
	} {
		_, out := a.prompt(sid, tt.call)
		var start *acpsdk.SessionUpdateToolCall
		for _, u := range out {
			if u.Update.ToolCall != nil {
				start = u.Update.ToolCall
			}
		}
		if start == nil || start.Kind != tt.kind {
			t.Errorf("%s: tool_call %+v, want kind %q", tt.call, start, tt.kind)
		}
		if end := finalToolUpdate(t, out); end.Status == nil || *end.Status != acpsdk.ToolCallStatusCompleted {
			t.Errorf("%s: ended %+v, want completed", tt.call, end)
		}
	}
	if data, err := os.ReadFile(a2); err != nil || string(data) != "ho" {
		t.Errorf("b.txt = %q, %v; want the written, edited and moved file", data, err)
	}
}
