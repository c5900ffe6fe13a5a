package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// readyPids returns the pids the fixture servers reporting to path
// (FIXTURE_READY_FILE) started as, waiting until there are n.
func readyPids(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	if !testutil.Eventually(60*time.Second, func() bool {
		data, _ := os.ReadFile(path)
		pids = nil
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				if pid, err := strconv.Atoi(f[0]); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		return len(pids) >= n
	}) {
		t.Fatalf("%s: %d fixture starts, want %d", path, len(pids), n)
	}
	return pids
}

// say runs a prompt and returns the agent's message text.
func (a *agent) say(sid, line string) string {
	_, out := a.prompt(sid, line)
	return text(out)
}

// TestMCP_ServersManagedInARunningSession adds a stdio server with /mcp
// add, uses it, disables and enables it, reconnects it (a new process, the
// old one gone), finds it restored by session/load in another agent
// process, removes it (its process gone, also after the next load), and
// replaces the client's servers with _acp-agent/session/set_mcp_servers.
func TestMCP_ServersManagedInARunningSession(t *testing.T) {
	cfg := writeConfig(t, map[string]any{"permissions": map[string]any{"allow": []string{"mcp__fx__*", "mcp__ed__*"}}})
	db := filepath.Join(t.TempDir(), "sessions.db")
	a := startAgentWith(t, nil, "--config", cfg, "--store", db)
	cwd := t.TempDir()
	ready := filepath.Join(cwd, "ready")
	sid := a.newSession(cwd)

	// A literal value would not be stored with the session (nor restored
	// by a load); a ${VAR} reference, with its default, is.
	if out := a.say(sid, "/mcp add --env FIXTURE_READY_FILE=${READY_FILE:-"+ready+"} fx "+fixtureBin); !strings.Contains(out, `Added MCP server "fx" (stdio): connected`) || strings.Contains(out, "Not stored") {
		t.Fatalf("/mcp add: %q", out)
	}
	first := readyPids(t, ready, 1)[0]
	if out := a.callText(t, sid, `/call mcp__fx__echo {"message": "one"}`); !strings.Contains(out, "Echo: one") {
		t.Fatalf("calling the added server: %q", out)
	}
	if out := a.say(sid, "/mcp"); !strings.Contains(out, "- fx: connected (stdio,") || !strings.Contains(out, "from /mcp add") {
		t.Errorf("/mcp list: %q", out)
	}
	if out := a.say(sid, "/mcp disable fx"); !strings.Contains(out, "Disabled") {
		t.Errorf("/mcp disable: %q", out)
	}
	if out := a.say(sid, "/tools"); strings.Contains(out, "mcp__fx__echo") {
		t.Errorf("a disabled server's tool is listed: %q", out)
	}
	if !testutil.Alive(first) {
		t.Error("disabling the server stopped its process")
	}
	if out := a.say(sid, "/mcp enable fx"); !strings.Contains(out, "Enabled") {
		t.Errorf("/mcp enable: %q", out)
	}
	if out := a.say(sid, "/mcp reconnect fx"); !strings.Contains(out, `Reconnected MCP server "fx"`) {
		t.Errorf("/mcp reconnect: %q", out)
	}
	second := readyPids(t, ready, 2)[1]
	if left := waitAllGone([]int{first}, 30*time.Second); len(left) > 0 || second == first {
		t.Errorf("after reconnect the first process %d is left (%v), the second is %d", first, left, second)
	}
	if out := a.callText(t, sid, `/call mcp__fx__echo {"message": "two"}`); !strings.Contains(out, "Echo: two") {
		t.Fatalf("calling after reconnect: %q", out)
	}
	if err := a.Stop(20 * time.Second); err != nil {
		t.Logf("stop: %v", err)
	}
	if left := waitAllGone([]int{second}, 30*time.Second); len(left) > 0 {
		t.Errorf("the agent's end left the server's process %v", left)
	}

	// Another agent process loads the session: fx is back, started again.
	b := startAgentWith(t, nil, "--config", cfg, "--store", db)
	load := func(p *agent) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		from := len(p.Client.Updates())
		if _, err := p.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
			t.Fatalf("session/load: %v", err)
		}
		if _, _, err := p.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.Update.AvailableCommandsUpdate != nil }); err != nil {
			t.Fatal(err)
		}
	}
	load(b)
	third := readyPids(t, ready, 3)[2]
	if out := b.callText(t, sid, `/call mcp__fx__echo {"message": "three"}`); !strings.Contains(out, "Echo: three") {
		t.Fatalf("calling the restored server: %q", out)
	}
	if out := b.say(sid, "/mcp remove fx"); !strings.Contains(out, `Removed MCP server "fx"`) {
		t.Errorf("/mcp remove: %q", out)
	}
	if left := waitAllGone([]int{third}, 30*time.Second); len(left) > 0 {
		t.Errorf("/mcp remove left the server's process %v (%s)", left, cmdline(left[0]))
	}
	if out := b.say(sid, "/tools"); strings.Contains(out, "mcp__fx__") {
		t.Errorf("a removed server's tool is listed: %q", out)
	}

	// The client replaces its servers, as an editor does once it has read
	// the method among those the agent advertised: one added, then none.
	if exts, _ := b.init.AgentCapabilities.Meta["acp-agent/extensions"].([]any); !slices.Contains(exts, any("_acp-agent/session/set_mcp_servers")) {
		t.Fatalf("initialize does not advertise set_mcp_servers: _meta %v", b.init.AgentCapabilities.Meta)
	}
	ext := func(servers []acpsdk.McpServer) []map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		raw, err := b.Conn.CallExtension(ctx, "_acp-agent/session/set_mcp_servers", map[string]any{"sessionId": sid, "mcpServers": servers})
		if err != nil {
			t.Fatalf("set_mcp_servers: %v", err)
		}
		var res struct {
			Servers []map[string]any `json:"servers"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		return res.Servers
	}
	got := ext([]acpsdk.McpServer{acpclient.Stdio("ed", fixtureBin, nil, map[string]string{"FIXTURE_READY_FILE": ready})})
	if len(got) != 1 || got[0]["name"] != "ed" || got[0]["action"] != "added" || got[0]["state"] != "connected" {
		t.Fatalf("set_mcp_servers [ed] = %v", got)
	}
	edPid := readyPids(t, ready, 4)[3]
	if out := b.callText(t, sid, `/call mcp__ed__echo {"message": "four"}`); !strings.Contains(out, "Echo: four") {
		t.Fatalf("calling the server the client set: %q", out)
	}
	if got := ext([]acpsdk.McpServer{}); len(got) != 1 || got[0]["action"] != "removed" {
		t.Errorf("set_mcp_servers [] = %v", got)
	}
	if left := waitAllGone([]int{edPid}, 30*time.Second); len(left) > 0 {
		t.Errorf("set_mcp_servers [] left the process %v", left)
	}
	if err := b.Stop(20 * time.Second); err != nil {
		t.Logf("stop: %v", err)
	}

	// Loaded again, the removed server stays out.
	c := startAgentWith(t, nil, "--config", cfg, "--store", db)
	load(c)
	if out := c.say(sid, "/mcp"); !strings.Contains(out, "1 MCP servers") || strings.Contains(out, "fx") {
		t.Errorf("/mcp after the removal and a load: %q", out)
	}
}

// TestMCP_ProjectServersAskOnceThenRemembered opens a session in a
// project whose .mcp.json declares a server: it does not start until the
// user allows it, asked once at the first prompt ("always"), and then
// starts at session/new in the next agent process without asking.
func TestMCP_ProjectServersAskOnceThenRemembered(t *testing.T) {
	cfg := writeConfig(t, map[string]any{"permissions": map[string]any{"allow": []string{"mcp__proj__*"}}})
	cwd := t.TempDir()
	ready := filepath.Join(cwd, "ready")
	project := map[string]any{"mcpServers": map[string]any{"proj": map[string]any{"command": fixtureBin, "env": map[string]string{"FIXTURE_READY_FILE": "${PWD_READY:-" + ready + "}"}}}}
	data, _ := json.Marshal(project)
	if err := os.WriteFile(filepath.Join(cwd, ".mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	answer := func(p acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse {
		if p.ToolCall.Title != nil && strings.Contains(*p.ToolCall.Title, ".mcp.json") {
			asked.Add(1)
		}
		for _, o := range p.Options {
			if o.Kind == acpsdk.PermissionOptionKindAllowAlways {
				return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(o.OptionId)}
			}
		}
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}
	}
	a := startAgentClient(t, &acpclient.Recorder{Permission: answer}, nil, "--config", cfg)
	from := len(a.Client.Updates())
	sid := a.newSession(cwd)
	if opening := text(a.Client.Updates()[from:]); !strings.Contains(opening, "proj: runs `"+fixtureBin) {
		t.Errorf("the opening messages do not name the pending server: %q", opening)
	}
	if _, err := os.Stat(ready); err == nil {
		t.Fatal("the project's server started before it was approved")
	}
	if out := a.callText(t, sid, `/call mcp__proj__echo {"message": "hi"}`); !strings.Contains(out, "Echo: hi") {
		t.Fatalf("calling the approved project server: %q", out)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("asked %d times, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "projects.json")); err != nil {
		t.Errorf("the approval is not kept beside the config: %v", err)
	}
	b := startAgentClient(t, &acpclient.Recorder{Permission: answer}, nil, "--config", cfg)
	sid2 := b.newSession(cwd)
	readyPids(t, ready, 2)
	if out := b.callText(t, sid2, `/call mcp__proj__echo {"message": "again"}`); !strings.Contains(out, "Echo: again") {
		t.Fatalf("the remembered project server: %q", out)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("asked %d times in all, want 1 (remembered)", n)
	}
}
