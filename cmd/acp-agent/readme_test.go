package main

import (
	"encoding/json"
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

// The gateway and fleet examples work for a new user when pasted as is:
// their setup commands (everything before the first acp-agent or createdb
// command) succeed in an empty home directory, and the token files the
// acp-agent commands name are there, private, and readable as what the flag
// takes: --token-file a gateway token, --tokens-file "TENANT TOKEN" lines.
func TestREADME_TokenExamplesWorkInAnEmptyHome(t *testing.T) {
	for _, heading := range []string{"## A shared gateway", "## Running a fleet"} {
		t.Run(strings.TrimPrefix(heading, "## "), func(t *testing.T) {
			block := readmeBlock(t, heading)
			var setup []string
			for line := range strings.SplitSeq(block, "\n") {
				if regexp.MustCompile(`(^|\s)(acp-agent|createdb)\s`).MatchString(line) {
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
				t.Fatalf("the example's setup fails in an empty home: %v\n%s\n--- commands:\n%s", err, out, strings.Join(setup, "\n"))
			}

			files := regexp.MustCompile(`(--tokens?-file)\s+(\S+)`).FindAllStringSubmatch(block, -1)
			if len(files) == 0 {
				t.Fatalf("the example names no --token-file or --tokens-file:\n%s", block)
			}
			for _, m := range files {
				flag, path := m[1], strings.Replace(m[2], "~", home, 1)
				fi, err := os.Stat(path)
				if err != nil {
					t.Errorf("%s %s: %v", flag, m[2], err)
					continue
				}
				if fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("%s %s has mode %v: others can read the token", flag, m[2], fi.Mode().Perm())
				}
				if flag == "--tokens-file" {
					if tokens, err := readTokensFile(path, "tenant"); err != nil || len(tokens) == 0 {
						t.Errorf("readTokensFile(%s) = %d tokens, %v", m[2], len(tokens), err)
					}
					continue
				}
				if tok, err := readToken("--token-file", path, tokenEnv); err != nil || len(tok) < 32 {
					t.Errorf("readToken(%s) = %d characters, %v", m[2], len(tok), err)
				}
			}
		})
	}
}

// readmeAgentCommands returns the acp-agent command lines of README.md as
// argument lists (after "acp-agent"): those of its sh blocks (continued
// lines joined; inside acpx's quoted --agent too), the "args" of its JSON
// blocks' acp-agent commands, and its inline code spans that start with
// acp-agent.
func readmeAgentCommands(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	var cmds [][]string
	for _, m := range regexp.MustCompile("(?s)\n```sh\n(.*?)\n```").FindAllStringSubmatch(readme, -1) {
		for line := range strings.SplitSeq(strings.ReplaceAll(m[1], "\\\n", " "), "\n") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			words := strings.Fields(line)
			for i, w := range words {
				if strings.Trim(w, `'"`) != "acp-agent" && !strings.HasSuffix(strings.Trim(w, `'"`), "/acp-agent") {
					continue
				}
				quoted := strings.HasPrefix(w, "'") || strings.HasPrefix(w, `"`)
				var args []string
				if quoted && (strings.HasSuffix(w, "'") || strings.HasSuffix(w, `"`)) || !quoted && i > 0 && words[i-1] == "--agent" {
					cmds = append(cmds, args) // a command line of one word: acpx --agent acp-agent
					continue
				}
				for _, a := range words[i+1:] {
					end := quoted && (strings.HasSuffix(a, "'") || strings.HasSuffix(a, `"`))
					args = append(args, strings.Trim(a, `'"`))
					if end || (!quoted && (a == "exec" || a == "|")) {
						break
					}
				}
				cmds = append(cmds, args)
			}
		}
	}
	for _, m := range regexp.MustCompile(`"command":\s*"[^"]*acp-agent",\s*"args":\s*(\[[^\]]*\])`).FindAllStringSubmatch(readme, -1) {
		var args []string
		if err := json.Unmarshal([]byte(m[1]), &args); err != nil {
			t.Errorf("README.md: an acp-agent command's args %s: %v", m[1], err)
		}
		cmds = append(cmds, args)
	}
	for _, m := range regexp.MustCompile("`acp-agent ([^`<\\[]*)`").FindAllStringSubmatch(readme, -1) {
		cmds = append(cmds, strings.Fields(m[1]))
	}
	return cmds
}

// Every flag of an acp-agent command in README.md is one that acp-agent (or
// the subcommand the command names) lists in its --help, so a pasted command
// is not refused for a flag that was renamed or never existed.
func TestREADME_FlagsExist(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "acp-agent")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	help := map[string]string{}
	helpOf := func(sub string) string {
		if h, ok := help[sub]; ok {
			return h
		}
		args := []string{"--help"}
		if sub != "" {
			args = []string{sub, "--help"}
		}
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("acp-agent %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		help[sub] = string(out)
		return help[sub]
	}
	subcommands := map[string]bool{"gateway": true, "connect": true, "mcp-server": true, "mcp": true, "login": true, "logout": true}
	cmds := readmeAgentCommands(t)
	flags := 0
	for _, args := range cmds {
		sub := ""
		if len(args) > 0 && subcommands[args[0]] {
			sub = args[0]
		}
		for _, a := range args {
			if !strings.HasPrefix(a, "--") || a == "--" || a == "--help" {
				continue
			}
			name, _, _ := strings.Cut(a, "=")
			flags++
			if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(name) + `(\s|$)`).MatchString(helpOf(sub)) {
				t.Errorf("README.md runs acp-agent %s, but acp-agent %s--help lists no %s", strings.Join(args, " "), sub+map[bool]string{true: " ", false: ""}[sub != ""], name)
			}
		}
	}
	if len(cmds) < 10 || flags < 10 {
		t.Errorf("found %d acp-agent commands with %d flags in README.md; the extraction is broken", len(cmds), flags)
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

// README.md's sh blocks run acpx through npx (a fresh machine has no acpx
// installed), at the version the e2e suite pins and tests.
func TestREADME_AcpxThroughNpxAtTheTestedVersion(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile(filepath.Join(root, "e2e", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var deps struct{ DevDependencies, Dependencies map[string]string }
	if err := json.Unmarshal(pkg, &deps); err != nil {
		t.Fatal(err)
	}
	version := deps.Dependencies["acpx"] + deps.DevDependencies["acpx"]
	if version == "" {
		t.Fatal("e2e/package.json does not pin acpx")
	}
	runs := 0
	for _, m := range regexp.MustCompile("(?s)\n```sh\n(.*?)\n```").FindAllStringSubmatch(string(readme), -1) {
		for line := range strings.SplitSeq(m[1], "\n") {
			if i := strings.Index(line, "#"); i >= 0 { // a comment
				line = line[:i]
			}
			words := strings.Fields(line)
			for i, w := range words {
				if w != "acpx" && !strings.HasPrefix(w, "acpx@") {
					continue
				}
				runs++
				if w != "acpx@"+version || i < 2 || words[i-2] != "npx" || words[i-1] != "-y" {
					t.Errorf("README.md runs %q: want acpx as npx -y acpx@%s", line, version)
				}
			}
		}
	}
	if runs == 0 {
		t.Error("README.md's sh blocks run no acpx")
	}
}
