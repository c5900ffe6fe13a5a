package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLifecycle_TSClient drives the built agent (direct mode, a SQLite
// store) with the official TypeScript ACP SDK 2.4.0
// (testdata/lifecycle-ts-client.mjs): it reads the capabilities first
// (sessionCapabilities list, delete, fork, title), then runs a session's
// life: prompts with session_info_update (title after the first, updatedAt
// after each, as session/list shows them), session/set_title, session/fork
// with its own server and the copied history replayed by session/load of
// the fork, and session/delete (gone from session/list; session/load of
// it and a second delete are -32002 on the wire).
func TestLifecycle_TSClient(t *testing.T) {
	t.Parallel()
	node, err := filepath.Abs(conformanceNode)
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "lifecycle-ts-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, node, script, agentBin, filepath.Join(dir, "sessions.db"), t.TempDir(), fixtureBin)
	cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("lifecycle-ts-client.mjs: %v\nstdout:\n%s\nstderr (the script's and the agent's):\n%s", err, stdout.String(), stderr.String())
	}
	if out := stdout.String(); !strings.HasPrefix(out, "ok session sess_") || !strings.Contains(out, "forked to sess_") {
		t.Fatalf("lifecycle-ts-client.mjs printed %q", out)
	}
	t.Log(strings.TrimSpace(stdout.String()))
}
