package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Malformed client input that acp-go-sdk itself logs at Error level (a
// $/cancel_request without a usable requestId) is one log line, with no Go
// stack frames, as is every other line.
func TestRun_BadClientLineLogsNoStackTrace(t *testing.T) {
	in := strings.NewReader("hello\n" +
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":{}}}` + "\n")
	var stdout, stderr bytes.Buffer
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	if err := run([]string{"--store", "memory"}, in, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	logs := stderr.String()
	if !strings.Contains(logs, "$/cancel_request") {
		t.Fatalf("the SDK's error line is missing; logs:\n%s", logs)
	}
	for _, frame := range []string{".go:", "acp-go-sdk.(*Connection)", "\n\t"} {
		if strings.Contains(logs, frame) {
			t.Errorf("logs contain stack frames (%q):\n%s", frame, logs)
		}
	}
	if !strings.Contains(stdout.String(), `"code":-32700`) {
		t.Errorf("stdout = %s, want a parse error for the line that is not JSON", stdout.String())
	}
}

// --help of the agent and of every subcommand describes the program, names
// every subcommand (the agent's) and every flag with its non-zero default,
// and the config file's location, on stdout, once; nothing on stderr.
func TestRun_HelpDescribesEverything(t *testing.T) {
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	cfgPath := cfgHome + "/acp-agent/config.json"
	cases := [][]string{{"--help"}, {"-h"}, {"help"}}
	for _, sc := range subcommands {
		cases = append(cases, []string{sc.name, "--help"}, []string{"help", sc.name})
	}
	for _, args := range cases {
		var stdout, stderr bytes.Buffer
		if err := run(args, strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		out := stdout.String()
		if args[0] == "help" {
			args = append(args[1:], "--help") // the same text
			if args[0] == "--help" {
				args = args[:1]
			}
		}
		wants := []string{"Usage:", "Config file:", cfgPath, "--config", "--log-file", "--model"}
		switch args[0] {
		case "login": // no agent flags: what it stores where, and its own flags
			wants = []string{"Usage:", "credentials.json", "--config", "--base-url", "--no-check"}
		case "logout":
			wants = []string{"Usage:", "credentials.json"}
		case "mcp": // no agent flags: the registry and the config file it edits
			wants = []string{"Usage:", "Config file:", cfgPath, "--config", "--registry", "--env", "--force", "sanitized"}
		case "connect": // no model: the gateway has it; the config for the local servers' sandbox
			wants = []string{"Usage:", "Config file:", cfgPath, "--config", "--log-file", "--token-file", "--verbose", "sandbox"}
		}
		if args[0] == "--help" || args[0] == "-h" {
			wants = append(wants, "ACP (Agent Client Protocol) agent", "agent_servers", "--store", "--version", "--verbose")
			for _, sc := range subcommands {
				wants = append(wants, "  "+sc.name+" ", sc.summary)
			}
		}
		if args[0] == "gateway" {
			wants = append(wants, "--listen", "(default 127.0.0.1:7777)", "--token-file", "--allowed-origins")
		}
		if strings.Contains(out, "--gateway") {
			t.Errorf("%q: the help still lists --gateway, which is no flag any more", args)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%q: the help lacks %q:\n%s", args, w, out)
			}
		}
		if n := strings.Count(out, "Usage:"); n != 1 {
			t.Errorf("%q: the help is printed %d times", args, n)
		}
		if stderr.Len() > 0 {
			t.Errorf("%q: stderr = %q, want nothing", args, stderr.String())
		}
	}
}

// An unknown flag is one error, returned for main to print once: the flag
// package prints nothing itself (no second copy, no flag dump on stderr).
func TestRun_UnknownFlagIsOneError(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, args := range [][]string{{"--bogus"}, {"gateway", "--bogus"}, {"mcp-server", "--bogus"}, {"connect", "--bogus"}} {
		var stdout, stderr bytes.Buffer
		err := run(args, strings.NewReader(""), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "-bogus") || !strings.Contains(err.Error(), "--help") {
			t.Errorf("%q: err = %v, want it to name the flag and point to --help", args, err)
		}
		if stdout.Len()+stderr.Len() > 0 {
			t.Errorf("%q: printed %q / %q besides the error", args, stdout.String(), stderr.String())
		}
	}
}

// TestRun_MistypesSuggest: a mistyped flag or subcommand names the one
// meant, when one is close; a word close to nothing gets no guess.
func TestRun_MistypesSuggest(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--modle", "x"}, "unknown flag --modle: did you mean --model? (see acp-agent --help)"},
		{[]string{"-verbos"}, "unknown flag --verbos: did you mean --verbose?"},
		{[]string{"--stor=memory"}, "unknown flag --stor: did you mean --store?"},
		{[]string{"gateway", "--lisen", "x"}, "gateway: unknown flag --lisen: did you mean --listen? (see acp-agent gateway --help)"},
		{[]string{"mcp-server", "--token-fil", "x"}, "did you mean --token-file?"},
		{[]string{"login", "--no-chek"}, "unknown flag --no-chek: did you mean --no-check? (see acp-agent login --help)"},
		{[]string{"gatway"}, `unknown subcommand "gatway": did you mean "gateway"?`},
		{[]string{"mcpserver"}, `unknown subcommand "mcpserver": did you mean "mcp-server"?`},
		{[]string{"hlep"}, `unknown subcommand "hlep": did you mean "help"?`},
		{[]string{"help", "logni"}, `unknown subcommand "logni": did you mean "login"?`},
		{[]string{"--zzzzzz"}, "unknown flag --zzzzzz (see acp-agent --help)"},
		{[]string{"frobnicate"}, `unknown subcommand "frobnicate" (run with no arguments to serve ACP on stdio, or use one of "gateway",`},
	} {
		var stdout, stderr bytes.Buffer
		err := run(tt.args, strings.NewReader(""), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"model", "model", 0}, {"modle", "model", 1}, {"mdoel", "model", 1},
		{"", "abc", 3}, {"kitten", "sitting", 3}, {"ca", "abc", 3}, {"verbos", "verbose", 1},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
}

// TestHelp_PointsAtReadmeSections: every --help names README sections by
// their headings (no relative path, which means nothing to an installed
// binary), and each heading it names is one of the README's.
func TestHelp_PointsAtReadmeSections(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			headings[strings.TrimSpace(strings.TrimLeft(h, "#"))] = true
		}
	}
	section := regexp.MustCompile(`section "([^"]+)"`)
	for _, args := range [][]string{{"--help"}, {"gateway", "--help"}, {"mcp-server", "--help"}, {"connect", "--help"}, {"mcp", "--help"}} {
		var stdout, stderr bytes.Buffer
		if err := run(args, strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		out := strings.ReplaceAll(stdout.String(), "\n", " ")
		if strings.Contains(out, ".md") {
			t.Errorf("%q: the help names a file path: %s", args, out)
		}
		found := section.FindAllStringSubmatch(out, -1)
		if len(found) == 0 {
			t.Errorf("%q: the help names no README section", args)
		}
		for _, m := range found {
			name := m[1]
			if !headings[name] {
				t.Errorf("%q: the help names README section %q, which README.md does not have", args, name)
			}
		}
	}
}
