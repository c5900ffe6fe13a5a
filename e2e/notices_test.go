package e2e

import (
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

// tsClientRun is what e2e/testdata/notices-ts-client.mjs prints.
type tsClientRun struct {
	Initialize map[string]any `json:"initialize"`
	SessionID  string         `json:"sessionId"`
	Updates    []struct {
		SessionID string         `json:"sessionId"`
		Update    map[string]any `json:"update"`
	} `json:"updates"`
	Stops []string `json:"stops"`
}

// runNoticesClient runs the TypeScript SDK client of notices-ts-client.mjs
// against the agent (memory store, direct mode) with mcpServers servers,
// prompts and the notice to wait for.
func runNoticesClient(t *testing.T, servers []map[string]any, prompts []string, awaitNotice string) tsClientRun {
	t.Helper()
	script, err := filepath.Abs("testdata/notices-ts-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	node, err := filepath.Abs(conformanceNode) // Node 22, whatever node the machine has
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := json.Marshal(servers)
	ps, _ := json.Marshal(prompts)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, agentBin, "--store", "memory")
	cmd.Dir = t.TempDir() // the session's cwd
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "MCP_SERVERS=" + string(srv), "PROMPTS=" + string(ps), "AWAIT_NOTICE=" + awaitNotice}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the TypeScript ACP client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var run tsClientRun
	if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
		t.Fatalf("client output: %v\n%s", err, stdout.String())
	}
	return run
}

// notices returns the notice updates of run.
func (r tsClientRun) notices() []map[string]any {
	var out []map[string]any
	for _, u := range r.Updates {
		if u.Update["sessionUpdate"] == "notice" {
			out = append(out, u.Update)
		}
	}
	return out
}

// TestNotices_TypeScriptClient: an editor on the official TypeScript SDK
// (the current schema, which validates every update it gets) that
// advertises session.notices hears of a server that failed to start, and
// later of one that stopped, as warning notices naming the server, and no
// agent message about either; a tool_call names its tool beside its
// title.
func TestNotices_TypeScriptClient(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join("node_modules", "@agentclientprotocol", "sdk")); err != nil {
		t.Fatalf("%v: the TypeScript ACP SDK is missing; run `make test` (it runs npm ci in e2e/)", err)
	}
	run := runNoticesClient(t, []map[string]any{
		{"name": "broken", "command": "/nonexistent/acp-agent-e2e-server", "args": []string{}, "env": []any{}},
		{"name": "everything", "command": "node", "args": []string{everything, "stdio"}, "env": []any{}},
		{"name": "fixture", "command": fixtureBin, "args": []string{}, "env": []any{}},
	}, []string{`/call mcp__everything__echo {"message":"hi"}`, "/call mcp__fixture__crash"}, "stopped")

	ns := run.notices()
	if len(ns) != 2 {
		t.Fatalf("%d notices, want 2 (broken failed, fixture stopped): %+v", len(ns), ns)
	}
	if ns[0]["severity"] != "warning" || ns[0]["title"] != `MCP server "broken" failed` || !strings.Contains(ns[0]["description"].(string), "/nonexistent/acp-agent-e2e-server") {
		t.Errorf("first notice = %+v, want broken failed, with why", ns[0])
	}
	if ns[1]["severity"] != "warning" || ns[1]["title"] != `MCP server "fixture" stopped` {
		t.Errorf("second notice = %+v, want fixture stopped", ns[1])
	}
	var named bool
	for _, u := range run.Updates {
		switch u.Update["sessionUpdate"] {
		case "agent_message_chunk":
			if text, _ := u.Update["content"].(map[string]any)["text"].(string); strings.Contains(text, "broken") {
				t.Errorf("an agent message about the failed server besides the notice: %q", text)
			}
		case "tool_call":
			if u.Update["title"] == "Echo Tool (everything)" {
				named = u.Update["name"] == "mcp__everything__echo"
			}
		}
	}
	if !named {
		t.Errorf("no tool_call titled \"Echo Tool (everything)\" with name mcp__everything__echo in %+v", run.Updates)
	}
}
