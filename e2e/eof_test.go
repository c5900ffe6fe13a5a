package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestEOF_RequestsReadAreAnswered: requests followed at once by the end of
// stdin are answered before the agent exits. initialize then EOF printed
// nothing about a third of the time.
func TestEOF_RequestsReadAreAnswered(t *testing.T) {
	t.Parallel()
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n" +
		fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, t.TempDir()) + "\n"
	for i := range 15 {
		cmd := exec.Command(agentBin, "--store", "memory")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		ids := map[string]bool{}
		for l := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal([]byte(l), &m) == nil && m.Method == "" && m.ID != nil {
				ids[string(m.ID)] = true
			}
		}
		if !ids["1"] || !ids["2"] {
			t.Fatalf("run %d: answered %v, want ids 1 and 2; stdout:\n%s", i, ids, out)
		}
	}
}

// TestEOF_PromptUnderWayAnswersCancelled: a prompt running when stdin ends
// is cancelled, its response (stopReason "cancelled") is written, and then
// the agent exits.
func TestEOF_PromptUnderWayAnswersCancelled(t *testing.T) {
	t.Parallel()
	a := startRaw(t, nil)
	a.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	a.result("0")
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":%q,"mcpServers":[{"name":"fixture","command":%q,"args":[],"env":[]}]}}`, t.TempDir(), fixtureBin))
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(a.result("1"), &sess); err != nil || sess.SessionID == "" {
		t.Fatalf("session/new: %v", err)
	}
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"/call mcp__fixture__slow {\"seconds\": 120}"}]}}`, sess.SessionID))
	deadline := time.After(90 * time.Second)
	for running := false; !running; {
		select {
		case m, ok := <-a.lines:
			if !ok {
				t.Fatal("the agent ended before the call ran")
			}
			switch {
			case string(m["method"]) == `"session/request_permission"`:
				a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`, m["id"]))
			case string(m["method"]) == `"session/update"`:
				running = strings.Contains(string(m["params"]), `"status":"in_progress"`)
			case m["method"] == nil:
				a.seen[string(m["id"])] = append(a.seen[string(m["id"])], m)
			}
		case <-deadline:
			t.Fatal("the call did not start within 90s")
		}
	}
	if err := a.in.Close(); err != nil { // stdin ends, the call still running
		t.Fatal(err)
	}
	if r := string(a.result("2")); !strings.Contains(r, `"stopReason":"cancelled"`) {
		t.Errorf("prompt response at EOF = %s, want stopReason cancelled", r)
	}
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the agent did not exit after stdin EOF")
	}
}

// TestEOF_ClosedStdoutEndsCleanly: an editor that stops reading (its end of
// stdout closed) does not kill the agent with SIGPIPE: the write fails,
// and at the end of stdin the agent ends its sessions and their servers
// and exits 0.
func TestEOF_ClosedStdoutEndsCleanly(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(agentBin, "--store", "memory")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
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
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	send := func(line string) { _, _ = stdin.Write([]byte(line + "\n")) }
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[{"name":"fixture","command":%q,"args":[],"env":[]}]}}`, t.TempDir(), fixtureBin))
	dec := json.NewDecoder(stdout)
	var sid string
	for sid == "" {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				SessionID string `json:"sessionId"`
			} `json:"result"`
		}
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("reading the session/new response: %v", err)
		}
		sid = m.Result.SessionID
	}
	servers := descendants(cmd.Process.Pid)
	if len(servers) == 0 {
		t.Fatal("no MCP server process under the agent")
	}
	stdout.Close() // the editor stops reading
	for i := range 5 {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"/tools"}]}}`, 10+i, sid))
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the agent's exit: %v (%v), want 0", err, cmd.ProcessState)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the agent did not exit within 60 s of the end of stdin")
	}
	for _, p := range waitAllGone(servers, 15*time.Second) {
		t.Errorf("process %d (%s) outlived the agent", p, cmdline(p))
	}
}
