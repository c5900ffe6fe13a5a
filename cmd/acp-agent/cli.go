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
	{"gateway", "serve the agent runtime to remote translators over WebSocket (docs/gateway-protocol.md)",
		func(args []string, _ io.Reader, stdout, stderr io.Writer) error {
			return runGateway(args, stdout, stderr)
		}},
	{"mcp-server", "serve the agent to MCP clients (Claude Code, Cursor, …) as one tool, ask_agent, on stdio or Streamable HTTP",
		runMCPServer},
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
  acp-agent <subcommand> [flags]     see "acp-agent <subcommand> --help"

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
	printHelpFooter(w)
}

// printHelpFooter ends every --help: where the config file is, and where
// logs go.
func printHelpFooter(w io.Writer) {
	path := defaultConfigPath()
	if path == "" {
		path = "(no home directory: none)"
	}
	fmt.Fprintf(w, `
Config file: $XDG_CONFIG_HOME/acp-agent/config.json, else ~/.config/acp-agent/config.json
  (here: %s); --config names another. A missing default file is no settings.
Logs go to stderr (or --log-file); stdout carries protocol frames only.
`, path)
}

// terminalBanner is what a person who runs acp-agent at a terminal sees
// instead of a silent wait for JSON-RPC.
const terminalBanner = `acp-agent is an ACP (Agent Client Protocol) agent: an editor starts it and
talks to it in JSON-RPC over stdin/stdout. It is not meant to be typed at.

Use it from an editor or an ACP client:
  Zed (settings.json):  "agent_servers": {"acp-agent": {"command": "acp-agent", "args": []}}
  acpx:                 acpx --agent acp-agent exec "/tools"

Try it (in a clone of the repository):
  make demo             a scripted ACP session against real MCP servers
  make build && acpx --agent ./bin/acp-agent exec "/tools"

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
