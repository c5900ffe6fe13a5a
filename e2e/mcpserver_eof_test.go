package e2e

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// mcpEOFInit are the first lines of a client of `acp-agent mcp-server` on
// stdio.
const mcpEOFInit = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}` + "\n" +
	`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

// mcpEOFCommand is `acp-agent mcp-server --verbose args...` in a minimal
// environment, its stderr in the returned buffer.
func mcpEOFCommand(t *testing.T, args ...string) (*exec.Cmd, *testutil.Buffer) {
	t.Helper()
	home, stderr := t.TempDir(), &testutil.Buffer{}
	cmd := exec.Command(agentBin, append([]string{"mcp-server", "--verbose"}, args...)...)
	cmd.Dir, cmd.Stderr = t.TempDir(), stderr
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home, "XDG_STATE_HOME=" + home}
	return cmd, stderr
}

// mcpAnswers are the responses in out (JSON-RPC lines), by id.
func mcpAnswers(t *testing.T, out []byte) map[string]map[string]json.RawMessage {
	t.Helper()
	got := map[string]map[string]json.RawMessage{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("mcp-server wrote %q: %v", line, err)
		}
		if _, isRequest := m["method"]; !isRequest && m["id"] != nil {
			got[string(m["id"])] = m
		}
	}
	return got
}

// TestMCPServer_EOFAnswersEveryRequest: a client that writes initialize,
// initialized and several requests at once and closes stdin gets every
// answer (an ask_agent call too), and `acp-agent mcp-server` exits 0.
// Before the fix only the first request or two were answered.
func TestMCPServer_EOFAnswersEveryRequest(t *testing.T) {
	t.Parallel()
	in := mcpEOFInit +
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask_agent","arguments":{"message":"/help"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":5,"method":"resources/list"}` + "\n" +
		`{"jsonrpc":"2.0","id":"last","method":"ping"}` + "\n"
	for i := range 5 {
		cmd, stderr := mcpEOFCommand(t, "--store", "memory")
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run %d: mcp-server exited with %v, want 0; stderr:\n%s", i, err, stderr)
		}
		got := mcpAnswers(t, out)
		for _, id := range []string{`"init"`, "1", "2", "3", "4", "5", `"last"`} {
			if got[id] == nil {
				t.Errorf("run %d: request %s was not answered", i, id)
			}
		}
		if t.Failed() {
			t.Fatalf("run %d: stdout:\n%s\nstderr:\n%s", i, out, stderr)
		}
	}
}

// TestMCPServer_EOFCancelsCallUnderWay: a tool call running when the client
// closes stdin is cancelled (the fixture server gets
// notifications/cancelled), its tools/call answers that the turn was
// cancelled, and mcp-server exits 0 leaving no process behind.
func TestMCPServer_EOFCancelsCallUnderWay(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "fixture.log")
	cfg := mcpTestConfig(t, log, map[string]any{"permissions": map[string]any{"allow": []string{"mcp__fixture__slow"}}})
	cmd, stderr := mcpEOFCommand(t, "--config", cfg, "--store", "memory")
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
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() || os.Getenv("E2E_AGENT_LOGS") != "" {
			t.Logf("mcp-server stderr:\n%s", stderr)
		}
	})
	outc := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(stdout); outc <- b; exited <- cmd.Wait() }()
	if _, err := io.WriteString(stdin, mcpEOFInit+
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask_agent","arguments":{"message":"/call mcp__fixture__slow {\"seconds\": 300, \"steps\": 1}"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	waitFile(t, log, "called slow", 60*time.Second)
	pids := descendants(cmd.Process.Pid)
	if len(pids) == 0 {
		t.Fatal("no fixture process under mcp-server")
	}
	if err := stdin.Close(); err != nil { // the call still running
		t.Fatal(err)
	}
	var out []byte
	select {
	case out = <-outc:
	case <-time.After(60 * time.Second):
		t.Fatal("mcp-server did not close stdout within 60 s of the end of stdin")
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("mcp-server exited with %v, want 0", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("mcp-server did not exit within 60 s of the end of stdin")
	}
	res := mcpAnswers(t, out)["7"]
	if res == nil {
		t.Fatalf("the tools/call under way was not answered; stdout:\n%s", out)
	}
	if s := string(res["result"]); !strings.Contains(s, `"isError":true`) || !strings.Contains(s, "the turn was cancelled") {
		t.Errorf("the tools/call under way answered %s, want an isError result saying the turn was cancelled", s)
	}
	waitFile(t, log, "received notifications/cancelled", 60*time.Second)
	for _, p := range waitAllGone(pids, 15*time.Second) {
		t.Errorf("process %d (%s) outlived mcp-server", p, cmdline(p))
	}
}
