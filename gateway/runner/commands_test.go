package runner

import (
	"strings"
	"testing"
)

// TestCommands_TableDrivesHelpAndDispatch: every command of the table is in
// the /help text, and the direct provider's dispatch follows the table.
func TestCommands_TableDrivesHelpAndDispatch(t *testing.T) {
	help := DirectHelp()
	for _, c := range Commands() {
		if !strings.Contains(help, "/"+c.Name) || !strings.Contains(help, c.Description) {
			t.Errorf("/help lacks /%s or its description:\n%s", c.Name, help)
		}
		if got := IsDirectCommand("/" + c.Name + " x"); got == (c.FrontEnd || c.Runner) {
			t.Errorf("IsDirectCommand(/%s) = %v with FrontEnd %v, Runner %v", c.Name, got, c.FrontEnd, c.Runner)
		}
	}
	for _, tt := range []struct {
		text, name, rest string
		ok               bool
	}{
		{"/call mcp__a__b {\"x\": 1}", "call", `mcp__a__b {"x": 1}`, true},
		{"  /tools  ", "tools", "", true},
		{"/servers", "servers", "", true},
		{"/callx", "", "", false},
		{"call x", "", "", false},
		{"/", "", "", false},
		{"hello /tools", "", "", false},
	} {
		c, rest, ok := ParseCommand(tt.text)
		if ok != tt.ok || c.Name != tt.name || rest != tt.rest {
			t.Errorf("ParseCommand(%q) = %q %q %v, want %q %q %v", tt.text, c.Name, rest, ok, tt.name, tt.rest, tt.ok)
		}
	}
}
