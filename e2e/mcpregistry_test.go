package e2e

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakeregistry"
)

// runAgentCLI runs the agent binary with args in a home of its own and
// returns its stdout and stderr; a non-zero exit fails the test.
func runAgentCLI(t *testing.T, args ...string) (string, string) {
	t.Helper()
	home := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), agentBin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("acp-agent %q: %v\nstdout:\n%s\nstderr:\n%s", args, err, &stdout, &stderr)
	}
	return stdout.String(), stderr.String()
}

// A server found in a registry (a fixture serving the official API shape on
// loopback) and added with "acp-agent mcp add" is in every session of an agent
// started with that config: its tools answer through /call, with the header
// the add set.
func TestMCPRegistry_AddThenUseInASession(t *testing.T) {
	t.Parallel()
	fixture := startFixtureHTTP(t)
	reg := fakeregistry.New([]byte(fmt.Sprintf(`{
		"name": "io.github.e2e/go-fixture",
		"description": "The Go fixture MCP server over Streamable HTTP",
		"version": "1.0.0",
		"remotes": [{"type": "streamable-http", "url": %q,
			"headers": [{"name": "X-Team", "description": "your team", "isRequired": true}]}]
	}`, fixture+"/mcp")))
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	config := filepath.Join(t.TempDir(), "acp-agent", "config.json")

	out, _ := runAgentCLI(t, "mcp", "search", "fixture", "--registry", srv.URL)
	if got := strings.Join(strings.Fields(out), " "); got != "io.github.e2e/go-fixture 1.0.0 The Go fixture MCP server over Streamable HTTP" {
		t.Errorf("mcp search printed %q", out)
	}
	out, stderr := runAgentCLI(t, "mcp", "add", "io.github.e2e/go-fixture", "--registry", srv.URL, "--config", config, "--header", "X-Team=blue")
	if !strings.Contains(out, `Added "go-fixture" to `+config) || stderr != "" {
		t.Fatalf("mcp add printed:\n%s\nstderr:\n%s", out, stderr)
	}

	a := startAgentWith(t, nil, "--config", config)
	sid := a.newSession(t.TempDir())
	for _, c := range []struct{ prompt, want string }{
		{`/call mcp__go-fixture__echo {"message": "from the registry"}`, "Echo: from the registry"},
		{"/call mcp__go-fixture__headers", "X-Team: blue"},
	} {
		_, updates := a.prompt(sid, c.prompt)
		end := finalToolUpdate(t, updates)
		if *end.Status != acpsdk.ToolCallStatusCompleted || !strings.Contains(contentText(end), c.want) {
			t.Errorf("%s: %s %q, want %q\n%s", c.prompt, *end.Status, contentText(end), c.want, dump(updates))
		}
	}
}
