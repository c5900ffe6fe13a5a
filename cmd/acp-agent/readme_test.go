package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeBlock returns the first ```sh block after the heading in README.md.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README.md has no section %q", heading)
	}
	s = s[i:]
	start := strings.Index(s, "\n```sh\n")
	if start < 0 {
		t.Fatalf("README.md section %q has no sh block", heading)
	}
	s = s[start+len("\n```sh\n"):]
	end := strings.Index(s, "\n```")
	if end < 0 {
		t.Fatalf("README.md section %q: unterminated sh block", heading)
	}
	return s[:end]
}

// The gateway example works for a new user when pasted as is: its setup
// commands (everything before the first acp-agent command) succeed in an
// empty home directory, and the token file the acp-agent commands name is
// there, private, and readable as a token.
func TestREADME_GatewayExampleWorksInAnEmptyHome(t *testing.T) {
	block := readmeBlock(t, "## A shared gateway")
	var setup []string
	for line := range strings.SplitSeq(block, "\n") {
		if regexp.MustCompile(`(^|\s)acp-agent\s`).MatchString(line) {
			break
		}
		setup = append(setup, line)
	}
	if len(setup) == 0 {
		t.Fatalf("no setup commands before the first acp-agent command:\n%s", block)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "sh", "-eu")
	cmd.Stdin = strings.NewReader(strings.Join(setup, "\n") + "\n")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	cmd.Dir = home
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the gateway example's setup fails in an empty home: %v\n%s\n--- commands:\n%s", err, out, strings.Join(setup, "\n"))
	}

	files := regexp.MustCompile(`--token-file\s+(\S+)`).FindAllStringSubmatch(block, -1)
	if len(files) == 0 {
		t.Fatalf("the gateway example names no --token-file:\n%s", block)
	}
	for _, m := range files {
		path := strings.Replace(m[1], "~", home, 1)
		fi, err := os.Stat(path)
		if err != nil {
			t.Errorf("--token-file %s: %v", m[1], err)
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("--token-file %s has mode %v: others can read the token", m[1], fi.Mode().Perm())
		}
		if tok, err := gatewayToken(path); err != nil || len(tok) < 32 {
			t.Errorf("gatewayToken(%s) = %d characters, %v", m[1], len(tok), err)
		}
	}
}

// Every make target the README names (`make X`, and make lines in its sh
// blocks) is a rule of the Makefile, so a documented command cannot be missing.
func TestREADME_MakeTargetsExist(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z0-9_.$()/%-]+):`).FindAllStringSubmatch(string(makefile), -1) {
		rules[m[1]] = true
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)(?:`|^)make ((?:[A-Z_]+=\\S+ )*)([a-z][a-z0-9-]*)").FindAllStringSubmatch(string(readme), -1) {
		target := m[2]
		if seen[target] {
			continue
		}
		seen[target] = true
		if !rules[target] {
			t.Errorf("README.md documents `make %s`, but the Makefile has no rule %q", target, target)
		}
	}
	for _, want := range []string{"install", "dist", "test", "demo"} {
		if !seen[want] {
			t.Errorf("README.md does not mention `make %s`", want)
		}
	}
}
