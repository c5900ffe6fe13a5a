package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestConformance_MCPClient runs every client scenario of the official MCP
// conformance suite (`conformance client --suite all`: the suite serves each
// scenario on loopback and runs the client against it, in parallel) against
// testfixtures/conformanceclient, a client that reaches servers through
// package bridge as a session does. It fails on each scenario that fails and
// is not in testdata/conformance-client-baseline.yml, on each baseline entry
// that now passes or that the suite no longer has, and on each listed
// scenario that left no result.
func TestConformance_MCPClient(t *testing.T) {
	node, cli := conformanceTools(t, conformanceCLI)
	client := buildConformanceClient(t)
	runConformance(t, node, cli, conformanceClient, nil, "--command", client)
}

// buildConformanceClient builds testfixtures/conformanceclient and returns
// the binary's path. It is built without the race detector even under
// -race: the suite starts all 44 scenarios' clients at once, and 44
// race-instrumented processes on a 2-core machine made scenarios fail on
// their timing (a reset connection, a late SSE reconnect), not on the
// bridge. The bridge's races are checked by its own tests and by the
// race-built agent in every other e2e test.
func buildConformanceClient(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "conformance-client")
	args := []string{"build", "-o", bin}
	var stderr bytes.Buffer
	cmd := exec.Command("go", append(args, "../testfixtures/conformanceclient")...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build ../testfixtures/conformanceclient: %v\n%s", err, stderr.String())
	}
	return bin
}
