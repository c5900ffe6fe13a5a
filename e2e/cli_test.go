package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The binary as a person at a terminal meets it: --help (or help) on stdout, exit 0;
// an unknown flag or a config mistake printed once, exit 1, a mistyped flag
// or subcommand with the one meant; no stack
// frames.
func TestCLI_HelpAndErrorsPrintedOnce(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	bad := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(bad, []byte("{\n  \"timeouts\": {\"conect\": \"30s\"}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args       []string
		code       int
		want       string // in stdout for exit 0, else in stderr, exactly once
		wantStdout bool
	}{
		{[]string{"--help"}, 0, "Subcommands:", true},
		{[]string{"gateway", "--help"}, 0, "(default 127.0.0.1:7777)", true},
		{[]string{"mcp-server", "--help"}, 0, "Config file:", true},
		{[]string{"--bogus"}, 1, "-bogus", false},
		{[]string{"gateway", "--bogus"}, 1, "-bogus", false},
		{[]string{"nosuch"}, 1, `unknown subcommand "nosuch"`, false},
		{[]string{"help"}, 0, "Subcommands:", true},
		{[]string{"help", "gateway"}, 0, `see the README, section "A shared gateway"`, true},
		{[]string{"--modle", "x"}, 1, "unknown flag --modle: did you mean --model?", false},
		{[]string{"gatway"}, 1, `unknown subcommand "gatway": did you mean "gateway"?`, false},
		{[]string{"--config", bad, "--store", "memory"}, 1, bad + `:2:16: key "timeouts.conect": unknown key (valid keys here: connect,`, false},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(agentBin, tt.args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		} else if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		out := stderr.String()
		if tt.wantStdout {
			out = stdout.String()
			if stderr.Len() > 0 {
				t.Errorf("%q: stderr %q, want nothing", tt.args, stderr.String())
			}
		}
		if code != tt.code || strings.Count(out, tt.want) != 1 {
			t.Errorf("%q: exit %d, output:\n%s\nwant exit %d with %q once", tt.args, code, out, tt.code, tt.want)
		}
		if strings.Contains(stderr.String(), ".go:") {
			t.Errorf("%q: stack frames on stderr:\n%s", tt.args, stderr.String())
		}
	}
}

// Run at a terminal (a pseudo-terminal from util-linux script(1)), the
// agent says what it is and how to use it, and exits 2 at once.
func TestCLI_TerminalBanner(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script(1) from util-linux is required: %v", err)
	}
	home := t.TempDir()
	cmd := exec.Command(script, "-q", "-e", "-c", agentBin+" --store memory", "/dev/null")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home}
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2; output:\n%s", err, out)
	}
	for _, want := range []string{"ACP (Agent Client Protocol) agent", "agent_servers", "acpx", "make demo", "--help"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the banner lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "starting") {
		t.Errorf("the agent started serving at a terminal:\n%s", out)
	}
}
