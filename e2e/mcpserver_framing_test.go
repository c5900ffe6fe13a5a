package e2e

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// TestMCPServer_MalformedLines writes the malformed lines of
// testutil.MalformedJSONRPC (broken JSON, ids of every wrong kind such as
// 1e400, responses to ids never sent, batches, NUL bytes, a 1 MiB line...)
// to `acp-agent mcp-server`'s stdin one after another, each followed by a
// ping: each line gets its answer (or none), every ping is answered, and
// the process exits 0 once stdin closes, not before.
func TestMCPServer_MalformedLines(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	stderr := &testutil.Buffer{}
	cmd := exec.Command(agentBin, "mcp-server", "--verbose", "--store", "memory")
	cmd.Dir, cmd.Stderr = t.TempDir(), stderr
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home, "XDG_STATE_HOME=" + home}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := testutil.ScanLines(stdout)
	// exit waits at most d for the process to exit (Wait once: later calls
	// return the same error); after d it kills it and reports false.
	wait := sync.OnceValue(cmd.Wait)
	exit := func(d time.Duration) (bool, error) {
		exited := make(chan error, 1)
		go func() { exited <- wait() }()
		select {
		case err := <-exited:
			return true, err
		case <-time.After(d):
			_ = cmd.Process.Kill()
			return false, <-exited
		}
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		exit(30 * time.Second)
		if t.Failed() || os.Getenv("E2E_AGENT_LOGS") != "" {
			t.Logf("mcp-server stderr:\n%s", stderr.String())
		}
	})

	testutil.FeedMalformed(t, []testutil.Malformed{
		{Name: "initialize", Line: `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`, ID: `"init"`, Result: true},
		{Name: "initialized", Line: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	}, stdin, out)
	lines := testutil.MalformedJSONRPC()
	if len(lines) < 40 {
		t.Fatalf("%d malformed lines, want at least 40", len(lines))
	}
	testutil.FeedMalformed(t, lines, stdin, out)
	if !testutil.Alive(cmd.Process.Pid) {
		t.Fatalf("mcp-server is gone after the malformed lines")
	}

	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	for line := range out { // until stdout closes
		t.Errorf("mcp-server wrote %.200q after its stdin closed", line)
	}
	switch ok, err := exit(60 * time.Second); {
	case !ok:
		t.Errorf("mcp-server did not exit within 60s of stdin closing")
	case err != nil:
		t.Errorf("mcp-server exited with %v once stdin closed, want 0", err)
	}
	if log := stderr.String(); strings.Contains(log, "ended with error") {
		t.Errorf("mcp-server logged a session ended with an error:\n%s", log)
	}
}
