package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// subcommand is one entry of "acp-agent <subcommand>": its name, the one
// line "acp-agent --help" gives it, and its entry point (args are those after
// the name). A subcommand prints its own --help (to stdout, exit 0) and
// returns its errors unprinted: main prints them once.
type subcommand struct {
	name, summary string
	run           func(args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// subcommands are acp-agent's subcommands, in the order --help lists them.
// A new subcommand (login, logout, …) is one entry here.
var subcommands = []subcommand{
	{"gateway", "serve ACP over the network (Streamable HTTP and WebSocket at /acp) to editors and acp-agent connect",
		func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return runGateway(args, stdout, stderr)
		}},
	{"mcp-server", "serve the agent to MCP clients (Claude Code, Cursor, …) as one tool, ask_agent, on stdio or Streamable HTTP",
		runMCPServer},
	{"mcp", "find MCP servers in the MCP Registry and add them to the config (search, add, list, remove)",
		runMCP},
	{"connect", "connect an editor that starts agents over stdio to a gateway on the network; its stdio MCP servers run here",
		runConnect},
	{"login", "store a model API key (asked for, hidden, checked with one request) for when the environment has none",
		func(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
			return runLogin(args, stdin, stdout, stderr, defaultCredentials())
		}},
	{"logout", "remove the API key stored by login, for one provider or all",
		func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return runLogout(args, stdout, stderr, defaultCredentials())
		}},
}

// lookupSubcommand returns the subcommand called name.
func lookupSubcommand(name string) (subcommand, bool) {
	for _, s := range subcommands {
		if s.name == name {
			return s, true
		}
	}
	return subcommand{}, false
}

// subcommandNames is "gateway", "mcp-server", … quoted and joined for errors.
func subcommandNames() string {
	q := make([]string, len(subcommands))
	for i, s := range subcommands {
		q[i] = fmt.Sprintf("%q", s.name)
	}
	return strings.Join(q, ", ")
}

// unknownSubcommand is the error of "acp-agent <name>" for a name that is
// no subcommand, suggesting the closest one when one is close ([suggest]).
func unknownSubcommand(name string) error {
	names := []string{"help"}
	for _, s := range subcommands {
		names = append(names, s.name)
	}
	if s, ok := suggest(name, names); ok {
		return fmt.Errorf("unknown subcommand %q: did you mean %q? (run with no arguments to serve ACP on stdio; see acp-agent --help)", name, s)
	}
	return fmt.Errorf("unknown subcommand %q (run with no arguments to serve ACP on stdio, or use one of %s; see acp-agent --help)", name, subcommandNames())
}

const agentAbout = `acp-agent is an ACP (Agent Client Protocol) agent. An editor (Zed, or any
ACP client such as acpx) starts it and speaks ACP (JSON-RPC, one message per
line) on its stdin and stdout. The MCP servers the editor passes at
session/new, and the config file's default servers, become the agent's tools
for that session; a model (--model) answers prompts, or without one the
agent runs in direct mode (slash commands such as /tools and /call).
`

// printAgentUsage is "acp-agent --help": what the program is, its
// subcommands, the config file and the flags of fs (the ACP mode's).
func printAgentUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, agentAbout)
	fmt.Fprint(w, `
Usage:
  acp-agent [flags]                  serve ACP on stdin/stdout (what an editor runs)
  acp-agent <subcommand> [flags]     see "acp-agent help <subcommand>" (or <subcommand> --help)
  acp-agent help                     this text, as --help

Subcommands:
`)
	for _, s := range subcommands {
		fmt.Fprintf(w, "  %-12s %s\n", s.name, s.summary)
	}
	fmt.Fprint(w, `
Zed (settings.json):
  "agent_servers": {"acp-agent": {"command": "acp-agent", "args": ["--model", "anthropic:claude-sonnet-4-5"]}}

Flags:
`)
	printFlags(w, fs)
	printHelpFooter(w, "Using it")
}

// printHelpFooter ends every --help: where the config file is, where logs
// go, and the section of the README (by its heading, since a relative path
// means nothing to an installed binary) that tells more.
func printHelpFooter(w io.Writer, section string) {
	path := defaultConfigPath()
	if path == "" {
		path = "(no home directory: none)"
	}
	fmt.Fprintf(w, `
Config file: $XDG_CONFIG_HOME/acp-agent/config.json, else ~/.config/acp-agent/config.json
  (here: %s); --config names another. A missing default file is no settings.
Logs go to stderr (or --log-file); stdout carries protocol frames only.
More: see the README, section %q; the config file's keys are in its section "Configuration".
`, path, section)
}

// terminalBanner is what a person who runs acp-agent at a terminal sees
// instead of a silent wait for JSON-RPC.
const terminalBanner = `acp-agent is an ACP (Agent Client Protocol) agent: an editor starts it and
talks to it in JSON-RPC over stdin/stdout. It is not meant to be typed at.

Use it from an editor or an ACP client:
  Zed (settings.json):  "agent_servers": {"acp-agent": {"command": "acp-agent", "args": []}}
  acpx (Node 22.13+):   npx -y acpx@0.19.1 --agent acp-agent exec "/tools"

Try it (in a clone of the repository):
  make demo             a scripted ACP session against real MCP servers
  make build && npx -y acpx@0.19.1 --agent ./bin/acp-agent exec "/tools"

"acp-agent --help" lists the subcommands and flags.
`

// isTerminal reports whether r is a terminal (stdin typed at by a person).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// exitError ends the process with its code and prints nothing more: what
// there was to say is on stderr already.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// flagError is the error of a failed fs.Parse, for the command see names
// ("acp-agent", "acp-agent gateway"): a flag fs does not define is
// "unknown flag --modle: did you mean --model? (see acp-agent --help)",
// the suggestion the closest of fs's flags (see [suggest]) when one is
// close; any other error is kept as flag reports it.
func flagError(fs *flag.FlagSet, err error, see string) error {
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !unknown {
		return fmt.Errorf("%v (see %s --help)", err, see)
	}
	name = strings.TrimLeft(name, "-")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if s, ok := suggest(name, names); ok {
		return fmt.Errorf("unknown flag --%s: did you mean --%s? (see %s --help)", name, s, see)
	}
	return fmt.Errorf("unknown flag --%s (see %s --help)", name, see)
}

// suggest returns the one of names closest to the mistyped word, when it
// is close: within an edit distance (letters inserted, deleted, replaced,
// or two neighbours swapped) of 1 for words of up to 4 letters and 2 for
// longer ones, or a name that word begins (at least 3 letters typed).
// Ties go to the first of names.
func suggest(word string, names []string) (string, bool) {
	best, bestD := "", -1
	for _, n := range names {
		d := editDistance(word, n)
		if bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	limit := 2
	if len(word) <= 4 {
		limit = 1
	}
	if bestD >= 0 && bestD <= limit {
		return best, true
	}
	if len(word) >= 3 {
		for _, n := range names {
			if strings.HasPrefix(n, word) {
				return n, true
			}
		}
	}
	return "", false
}

// editDistance is the optimal string alignment distance between a and b
// (Levenshtein plus the swap of two neighbouring letters), by bytes.
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
