package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
)

// startMCPServerIn runs `acp-agent mcp-server --verbose args...` over stdio
// in dir, its working directory, and connects a client; closing the client
// ends the process, and the returned func reports how it exited.
func startMCPServerIn(t *testing.T, dir string, args ...string) (*mcpClient, func() error) {
	t.Helper()
	home := t.TempDir()
	stderr := &testutil.Buffer{}
	cmd := exec.Command(agentBin, append([]string{"mcp-server", "--verbose"}, args...)...)
	cmd.Dir, cmd.Stderr = dir, stderr
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home, "XDG_STATE_HOME=" + home}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("E2E_AGENT_LOGS") != "" {
			t.Logf("mcp-server stderr:\n%s", stderr.String())
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &mcpClient{ClientSession: cs, t: t}, func() error {
		_ = cs.Close() // closes stdin, waits for the exit
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			return fmt.Errorf("mcp-server ended with %v", cmd.ProcessState)
		}
		return nil
	}
}

// TestMCPServer_EditorSessionRefused: an editor makes an ACP session in
// one directory, through the agent over stdio on a SQLite store; an
// mcp-server in another directory on the same store, asked to continue it
// (its sessionId as sessionKey, the issued form), refuses with an isError
// result naming the key and both directories, runs nothing, and goes on
// serving; the editor's session is unchanged and still the editor's.
func TestMCPServer_EditorSessionRefused(t *testing.T) {
	t.Parallel()
	editorDir, serverDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(serverDir, "only-in-the-server-dir.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "sessions.db")
	editor := startAgentWith(t, nil, "--store", db)
	sid := editor.newSession(editorDir)
	if stop, _ := editor.prompt(sid, "/tools"); stop != "end_turn" {
		t.Fatalf("the editor's turn ended %q", stop)
	}
	read := func() (store.Record, int) {
		t.Helper()
		st, err := sqlite.Open(t.Context(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		rec, err := st.Get(t.Context(), sid)
		if err != nil {
			t.Fatal(err)
		}
		turns, err := st.Turns(t.Context(), sid)
		if err != nil {
			t.Fatal(err)
		}
		return rec, len(turns)
	}
	before, n := read()
	if n != 1 || before.Cwd != editorDir {
		t.Fatalf("the editor's session: %d turns, cwd %q", n, before.Cwd)
	}

	c, stop := startMCPServerIn(t, serverDir, "--store", db)
	r := c.ask(`/call mcp__acp__list_directory {"path":"."}`, sid, nil)
	if !r.isError || !strings.Contains(r.text, `sessionKey "`+sid+`"`) || !strings.Contains(r.text, editorDir) || !strings.Contains(r.text, serverDir) {
		t.Errorf("ask_agent with the editor's sessionId: isError %v, %q; want a refusal naming the key and both directories", r.isError, r.text)
	}
	if strings.Contains(r.text, "only-in-the-server-dir.txt") {
		t.Errorf("list_directory ran in the server's directory: %q", r.text)
	}
	if r := c.ask("/help", "", nil); r.isError || !strings.HasPrefix(r.out.SessionKey, "sess_") {
		t.Errorf("a new conversation after the refusal: isError %v, %q", r.isError, r.text)
	}
	if err := stop(); err != nil {
		t.Errorf("mcp-server exited: %v", err)
	}

	after, n := read()
	if n != 1 || !after.Updated.Equal(before.Updated) || after.Cwd != editorDir || after.Key != before.Key || after.Title != before.Title {
		t.Errorf("the editor's session changed: %d turns, %+v; was %+v", n, after, before)
	}
	if stop, _ := editor.prompt(sid, "/servers"); stop != "end_turn" {
		t.Errorf("the editor's next turn ended %q", stop)
	}
}
