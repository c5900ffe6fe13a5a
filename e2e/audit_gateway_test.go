package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/acp/remote"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// TestAudit_GatewayTenant: on a gateway with tenants, a tool call of a
// session opened over an authenticated connection is audited under the
// token's tenant and the session's id.
func TestAudit_GatewayTenant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens, path := filepath.Join(dir, "tokens"), filepath.Join(dir, "audit.jsonl")
	alice := "alice-token-0123456789abcdefghijklmnop"
	if err := os.WriteFile(tokens, []byte("alice "+alice+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, "", nil, "--store", "memory", "--tokens-file", tokens, "--audit-log", path, "--config", gatewayConfig(t, ""))
	fixture := startFixtureHTTP(t)
	c := dialGateway(t, g.url(), alice, remote.TransportHTTP, nil)
	sid := c.newSession(t.TempDir(), httpServer("web", fixture+"/mcp", nil))
	if _, out := c.mustPrompt(sid, `/call mcp__web__echo {"message":"hi"}`); *finalToolUpdate(t, out).Status != acpsdk.ToolCallStatusCompleted {
		t.Fatalf("echo: %s", dump(out))
	}
	var data []byte
	testutil.WaitFor(t, 30*time.Second, func() bool { // the Log's goroutine writes the line
		data, _ = os.ReadFile(path)
		return strings.HasSuffix(string(data), "\n")
	}, "no audit line in %s", path)
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	for k, v := range map[string]any{"tenant": "alice", "sessionId": sid, "server": "web", "tool": "mcp__web__echo", "outcome": "completed"} {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v\n%s", k, rec[k], v, data)
		}
	}
}
