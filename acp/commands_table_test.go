package acp

import (
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// TestCommands_FrontEndHandlers: the front end answers exactly the commands
// the table marks FrontEnd, and advertises every command of the table.
func TestCommands_FrontEndHandlers(t *testing.T) {
	cmds := runner.Commands()
	frontEnd := 0
	for _, c := range cmds {
		if _, ok := frontEndCommands[c.Name]; ok != c.FrontEnd {
			t.Errorf("/%s: FrontEnd %v, handler here %v", c.Name, c.FrontEnd, ok)
		}
		if c.FrontEnd {
			frontEnd++
		}
	}
	if len(frontEndCommands) != frontEnd {
		t.Errorf("%d front-end handlers for %d front-end commands", len(frontEndCommands), frontEnd)
	}
	adv := availableCommands().AvailableCommandsUpdate.AvailableCommands
	if len(adv) != len(cmds) {
		t.Fatalf("advertised %d commands, the table has %d", len(adv), len(cmds))
	}
	for i, c := range cmds {
		if adv[i].Name != c.Name || adv[i].Description != c.Description || (c.Hint != "") != (adv[i].Input != nil) {
			t.Errorf("advertised %+v for %+v", adv[i], c)
		}
	}
}
