package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// A person who runs acp-agent at a terminal is told what it is, how an
// editor runs it and how to try it, and it exits 2 at once instead of
// waiting for JSON-RPC; flags that do not ask for something else change
// nothing.
func TestRun_TerminalStdinPrintsTheBanner(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	_, tty := testutil.OpenPTY(t)
	for _, args := range [][]string{nil, {"--store", "memory", "--model", "direct"}} {
		var stdout, stderr bytes.Buffer
		err := run(args, tty, &stdout, &stderr)
		var code exitError
		if !errors.As(err, &code) || code != 2 {
			t.Fatalf("%q: run = %v, want exit status 2", args, err)
		}
		for _, want := range []string{"ACP (Agent Client Protocol) agent", "agent_servers", `"command": "acp-agent"`, "npx -y acpx@0.19.1 --agent", "make demo", "acp-agent --help"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("%q: the banner lacks %q:\n%s", args, want, stderr.String())
			}
		}
		if stdout.Len() > 0 {
			t.Errorf("%q: stdout (the protocol channel) = %q, want nothing", args, stdout.String())
		}
	}
	// --version and --help still answer at a terminal.
	var stdout bytes.Buffer
	if err := run([]string{"--version"}, tty, &stdout, &bytes.Buffer{}); err != nil || !strings.HasPrefix(stdout.String(), "acp-agent ") {
		t.Errorf("--version at a terminal: %v, %q", err, stdout.String())
	}
}
