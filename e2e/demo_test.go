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

// TestDemo runs cmd/acp-demo, the program `make demo` runs, against the
// built agent and fixture, and checks its transcript: it succeeds, every
// permission question appears with the answer the demo gives (allow once,
// and the rejected call shown as declined), and none of the fixture's
// test-only tools is listed.
func TestDemo(t *testing.T) {
	t.Parallel()
	demo := filepath.Join(t.TempDir(), "acp-demo")
	if out, err := exec.Command("go", "build", "-o", demo, "../cmd/acp-demo").CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/acp-demo: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, demo, "--agent", agentBin, "--fixture", fixtureBin, "--fs-server", filesystem)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("acp-demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"/tools",
		"mcp__fixture__image (fixture)",
		`? permission asked: "fixture/image" [Allow once | Always allow fixture/image in this session | Reject] → the demo answers: Allow once`,
		`? permission asked: "fixture/audio" [Allow once | Always allow fixture/audio in this session | Reject] → the demo answers: Reject`,
		"The user declined to run mcp__fixture__audio",
		`? permission asked: "web/headers"`,
		"demo ok",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's transcript lacks %q:\n%s", want, out)
		}
	}
	// Every tool of the fixture that only tests use, by its bridged name.
	for _, tool := range []string{"slow", "fail", "crash", "spawn_grandchild", "spawn_escapee", "env", "roots", "ask_name", "sign_in", "sample", "a_tool_with", "add_prompt", "meta"} {
		for _, server := range []string{"fixture", "web"} {
			if name := "mcp__" + server + "__" + tool; strings.Contains(out, name) {
				t.Errorf("the demo's transcript shows the test-only tool %s:\n%s", name, out)
			}
		}
	}
	// Each permission question follows the tool_call it asks about.
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		_, asked, ok := strings.Cut(line, "? permission asked: ")
		if !ok {
			continue
		}
		title, _, _ := strings.Cut(asked, " [")
		if i == 0 || !strings.Contains(lines[i-1], "tool_call ") || !strings.Contains(lines[i-1], title) {
			t.Errorf("the permission question %q does not follow its tool_call:\n%s", title, out)
		}
	}
}
