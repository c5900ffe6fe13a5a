package acp

import (
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// TestCommands_Advertised: the front end advertises every command of the
// table (session.TestCommands_FrontEndHandlers checks the handlers).
func TestCommands_Advertised(t *testing.T) {
	cmds := runner.Commands()
	adv := availableCommands(cmds).AvailableCommandsUpdate.AvailableCommands
	if len(adv) != len(cmds) {
		t.Fatalf("advertised %d commands, the table has %d", len(adv), len(cmds))
	}
	for i, c := range cmds {
		if adv[i].Name != c.Name || adv[i].Description != c.Description || (c.Hint != "") != (adv[i].Input != nil) {
			t.Errorf("advertised %+v for %+v", adv[i], c)
		}
	}
}
