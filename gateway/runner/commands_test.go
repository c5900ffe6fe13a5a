package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// TestCommands_TableDrivesHelpAndDispatch: every command of the table is in
// the /help text, and the runner's dispatch follows the table: a command
// it is handed goes to the direct provider unless the front end or the
// runner answers it. (Reading a prompt's text for a command is
// session.Classify's, tested there.)
func TestCommands_TableDrivesHelpAndDispatch(t *testing.T) {
	help := DirectHelp(nil)
	for _, c := range Commands() {
		if !strings.Contains(help, "/"+c.Name) || !strings.Contains(help, c.Description) {
			t.Errorf("/help lacks /%s or its description:\n%s", c.Name, help)
		}
		if row, direct, ok := command(&gateway.Command{Name: c.Name, Args: "x"}); !ok || row != c || direct == (c.FrontEnd || c.Runner) {
			t.Errorf("command(/%s) = %+v, direct %v, %v with FrontEnd %v, Runner %v", c.Name, row, direct, ok, c.FrontEnd, c.Runner)
		}
	}
	for _, tt := range []struct {
		cmd        *gateway.Command
		direct, ok bool
	}{
		{nil, false, false},
		{&gateway.Command{Name: "callx"}, false, false},
		{&gateway.Command{Name: "halp", Unknown: true}, true, true},
	} {
		if _, direct, ok := command(tt.cmd); direct != tt.direct || ok != tt.ok {
			t.Errorf("command(%+v) = direct %v, %v, want %v, %v", tt.cmd, direct, ok, tt.direct, tt.ok)
		}
	}
}

// TestRunner_UnknownCommandIsSaidUnknown: with a model, a prompt starting
// with an unknown command is answered "Unknown command" without asking the
// model; a path at the start of a message still goes to the model.
func TestRunner_UnknownCommandIsSaidUnknown(t *testing.T) {
	var asked []string
	p := &fakeProvider{complete: func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		asked = append(asked, gateway.PromptText(req.Messages[len(req.Messages)-1].Content))
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("ok")}}}, nil
	}}
	r := New(&gateway.Registry{}, &Options{Models: []gateway.Model{{ID: "fake", Provider: p}}})
	for _, tt := range []struct {
		prompt string
		cmd    *gateway.Command // as session.Classify types it
		said   string
	}{
		{"/halp me", &gateway.Command{Name: "halp", Args: "me", Unknown: true}, "Unknown command /halp; /help lists them."},
		{"/usr/bin/foo is broken", nil, ""},
	} {
		evs, emit := collect()
		if stop, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent(tt.prompt)}, Command: tt.cmd}, emit); err != nil || stop != gateway.StopEndTurn {
			t.Fatalf("%s: Run = %s, %v", tt.prompt, stop, err)
		}
		var said strings.Builder
		for _, e := range *evs {
			if e.Kind == gateway.EventTextDelta {
				said.WriteString(e.Text)
			}
		}
		if said.String() != tt.said {
			t.Errorf("%s: said %q, want %q", tt.prompt, said.String(), tt.said)
		}
	}
	if len(asked) != 1 || asked[0] != "/usr/bin/foo is broken" {
		t.Errorf("the model was asked %q, want only the message about a path", asked)
	}
}

// TestDirectHelp_ExampleNamesASessionTool: /help's example /call names a
// tool of the session (a read-only MCP tool first), with its required
// arguments; without tools it says so instead of naming one.
func TestDirectHelp_ExampleNamesASessionTool(t *testing.T) {
	write := &gateway.Tool{Name: "mcp__fs__write_file", Group: "fs", InputSchema: json.RawMessage(`{"type":"object"}`)}
	builtin := &gateway.Tool{Name: "mcp__acp__read_file", Group: "acp", Core: true, Annotations: gateway.Annotations{ReadOnlyHint: true}}
	search := &gateway.Tool{Name: "mcp__gh__search", Group: "gh", Annotations: gateway.Annotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"all":{"type":"boolean"}},"required":["query","limit"]}`)}
	for _, tt := range []struct {
		tools []*gateway.Tool
		want  string
	}{
		{[]*gateway.Tool{write, builtin, search}, `e.g. /call mcp__gh__search {"query":"...","limit":1}`},
		{[]*gateway.Tool{write, builtin}, "e.g. /call mcp__acp__read_file {}"},
		{[]*gateway.Tool{write}, "e.g. /call mcp__fs__write_file {}"},
		{nil, "This session has no tools yet; /servers shows its MCP servers."},
	} {
		help := DirectHelp(tt.tools)
		if !strings.Contains(help, tt.want) {
			t.Errorf("/help with %d tools lacks %q:\n%s", len(tt.tools), tt.want, help)
		}
		if strings.Contains(help, "mcp__everything__echo") {
			t.Errorf("/help names a tool the session does not have:\n%s", help)
		}
	}
	// /call without a tool gives the same example.
	evs, emit := collect()
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{search})
	if _, err := New(reg, nil).Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("/call")}, Command: &gateway.Command{Name: "call"}}, emit); err != nil {
		t.Fatal(err)
	}
	if len(*evs) == 0 || !strings.Contains((*evs)[0].Text, `e.g. /call mcp__gh__search {"query":"...","limit":1}`) {
		t.Errorf("/call alone said %+v", *evs)
	}
}
