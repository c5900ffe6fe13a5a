package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAcpx drives the agent with a third-party ACP client: acpx exec with an
// --mcp-config file, asserting on its JSON-RPC trace.
func TestAcpx(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cwd := t.TempDir()
	cfg := filepath.Join(home, "mcp.json")
	servers := map[string]any{"mcpServers": []map[string]any{
		{"name": "everything", "command": "node", "args": []string{everything, "stdio"}},
		{"name": "fixture", "command": fixtureBin},
	}}
	data, _ := json.Marshal(servers)
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", acpxCLI, "--format", "json", "--approve-all", "--timeout", "90",
		"--cwd", cwd, "--agent", agentBin, "--mcp-config", cfg,
		"exec", `/call mcp__everything__echo {"message":"from acpx"}`)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("acpx: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	var toolCallID string
	var completed, ended bool
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
					ToolCallID    string `json:"toolCallId"`
					Title         string `json:"title"`
					Status        string `json:"status"`
					Content       []struct {
						Content struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"content"`
				} `json:"update"`
			} `json:"params"`
			Result struct {
				StopReason string `json:"stopReason"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil {
			continue
		}
		u := msg.Params.Update
		switch {
		case u.SessionUpdate == "tool_call" && u.Title == "Echo Tool (everything)":
			toolCallID = u.ToolCallID
		case u.SessionUpdate == "tool_call_update" && u.ToolCallID == toolCallID && u.Status == "completed":
			completed = len(u.Content) == 1 && u.Content[0].Content.Text == "Echo: from acpx"
		case msg.Result.StopReason == "end_turn":
			ended = true
		}
	}
	if toolCallID == "" || !completed || !ended {
		t.Errorf("trace lacks the tool call (%q), its result (%v) or end_turn (%v):\n%s", toolCallID, completed, ended, stdout.String())
	}
	if strings.Contains(stdout.String(), `"error"`) {
		t.Errorf("trace has an error:\n%s", stdout.String())
	}
}
