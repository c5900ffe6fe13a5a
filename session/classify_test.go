package session_test

import (
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// TestClassify: every kind, and the edges of the first word.
func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		text       string
		kind       session.InputKind
		name, args string
	}{
		// Runner commands, direct and the runner's own, with arguments.
		{"/call mcp__a__b {\"x\": 1}", session.InputRunner, "call", `mcp__a__b {"x": 1}`},
		{"/call", session.InputRunner, "call", ""},
		{"  /tools  ", session.InputRunner, "tools", ""},
		{"\n\t/help", session.InputRunner, "help", ""},
		{"/usage", session.InputRunner, "usage", ""},
		{"/compact  now ", session.InputRunner, "compact", "now"},
		{"/call  echo   {}", session.InputRunner, "call", "echo   {}"},
		// Front-end commands.
		{"/servers", session.InputFrontEnd, "servers", ""},
		{"/mcp add x -- cmd", session.InputFrontEnd, "mcp", "add x -- cmd"},
		{"  /read mem://docs/readme", session.InputFrontEnd, "read", "mem://docs/readme"},
		// MCP prompts, known to a server or not; a prompt whose server or
		// name is a command's is still a prompt.
		{"/docs:review owner=acme repo=x", session.InputPrompt, "docs:review", "owner=acme repo=x"},
		{"/docs:review", session.InputPrompt, "docs:review", ""},
		{"/call:tools x", session.InputPrompt, "call:tools", "x"},
		{"/help:help", session.InputPrompt, "help:help", ""},
		{"/servers:servers", session.InputPrompt, "servers:servers", ""},
		{"/nobody:nothing a b", session.InputPrompt, "nobody:nothing", "a b"},
		{"/server:prompt arg", session.InputPrompt, "server:prompt", "arg"},
		// Unknown commands: shaped like one, none of the table.
		{"/halp", session.InputUnknown, "halp", ""},
		{"  /foo-bar_2 some text", session.InputUnknown, "foo-bar_2", "some text"},
		{"/Tools", session.InputUnknown, "Tools", ""}, // commands are lower case
		{"/halp\nmore", session.InputUnknown, "halp", "more"},
		{"/callx", session.InputUnknown, "callx", ""},
		// Messages.
		{"", session.InputMessage, "", ""},
		{"   ", session.InputMessage, "", ""},
		{"/", session.InputMessage, "", ""},
		{"  / ", session.InputMessage, "", ""},
		{"/ 2", session.InputMessage, "", ""},
		{"hello", session.InputMessage, "", ""},
		{"call x", session.InputMessage, "", ""},
		{"hello /tools", session.InputMessage, "", ""},
		{"hello /halp", session.InputMessage, "", ""},
		{"/usr/bin/foo is broken", session.InputMessage, "", ""},
		{"/tmp. is full", session.InputMessage, "", ""},
		{"/2fa setup", session.InputMessage, "", ""},
		{"/a:b:c", session.InputMessage, "", ""},
		{"/usr/x:1 y", session.InputMessage, "", ""},
		{"/tools\nmore", session.InputMessage, "", ""}, // the word ends at a space only
		{"/docs:review\nowner=acme", session.InputMessage, "", ""},
	} {
		in := session.Classify(tt.text)
		if in.Kind != tt.kind || in.Name != tt.name || in.Args != tt.args {
			t.Errorf("Classify(%q) = %v %q %q, want %v %q %q", tt.text, in.Kind, in.Name, in.Args, tt.kind, tt.name, tt.args)
		}
	}
}

// TestClassify_TableDrivesKinds: every row of the command table classifies
// as the row says, carrying the row; only runner commands and unknown ones
// reach the runner as a command, and only rows marked neither FrontEnd nor
// Runner are direct.
func TestClassify_TableDrivesKinds(t *testing.T) {
	for _, c := range runner.Commands() {
		in := session.Classify("/" + c.Name + " x")
		want := session.InputRunner
		if c.FrontEnd {
			want = session.InputFrontEnd
		}
		if in.Kind != want || in.Command != c || in.Args != "x" {
			t.Errorf("/%s x: %v %+v %q, want %v with its row", c.Name, in.Kind, in.Command, in.Args, want)
		}
		if !in.IsCommand() {
			t.Errorf("/%s is not a command", c.Name)
		}
		if got := in.IsDirect(); got == (c.FrontEnd || c.Runner) {
			t.Errorf("/%s: IsDirect %v with FrontEnd %v, Runner %v", c.Name, got, c.FrontEnd, c.Runner)
		}
		g := in.Gateway()
		if c.FrontEnd != (g == nil) || g != nil && *g != (gateway.Command{Name: c.Name, Args: "x"}) {
			t.Errorf("/%s x: Gateway() = %+v", c.Name, g)
		}
	}
	if g := session.Classify("/halp me").Gateway(); g == nil || *g != (gateway.Command{Name: "halp", Args: "me", Unknown: true}) {
		t.Errorf("/halp me: Gateway() = %+v", g)
	}
	for _, text := range []string{"hello", "/docs:review"} {
		in := session.Classify(text)
		if in.Gateway() != nil || in.IsCommand() || in.IsDirect() {
			t.Errorf("%q (%v): Gateway %+v, IsCommand %v, IsDirect %v", text, in.Kind, in.Gateway(), in.IsCommand(), in.IsDirect())
		}
	}
}

// FuzzClassify: any text classifies without panicking, and a command's
// name is its first word.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"/call x {}", "/halp", "/a:b c", "/", " /tools\t", "/usr/bin"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		in := session.Classify(text)
		if (in.Kind == session.InputMessage) != (in.Name == "") {
			t.Errorf("Classify(%q) = %v with name %q", text, in.Kind, in.Name)
		}
	})
}
