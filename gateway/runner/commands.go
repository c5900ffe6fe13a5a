package runner

import (
	"fmt"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Command is one slash command of a session (ACP "Slash Commands",
// https://agentclientprotocol.com/protocol/slash-commands). The table of
// them ([Commands]) is the one place a command is declared: the editor's
// menu (available_commands_update), the /help text ([DirectHelp]) and
// dispatch are all derived from it. Package session reads a prompt's text
// against it once (session.Classify) and hands the runner the command typed
// ([gateway.SendRequest.Command]); the runner never parses a prompt.
type Command struct {
	// Name is the command word without the slash ("call").
	Name string
	// Hint describes the input after the name ("<tool> {json arguments}"),
	// or "" when the command takes none.
	Hint string
	// Description is one line for the editor's menu and /help.
	Description string
	// FrontEnd marks a command the front end answers from its own view of
	// the session (/servers: the MCP connections live with the front end).
	// The others go to the gateway, whose direct provider answers them
	// whatever the model.
	FrontEnd bool
	// Runner marks a command the runner answers itself from the session's
	// conversation (/usage, /compact).
	Runner bool
}

// commands is the table behind Commands, in display order.
var commands = [...]Command{
	{Name: "tools", Description: "List the tools of this session"},
	{Name: "call", Hint: "<tool> {json arguments}", Description: "Call a tool; the arguments are a JSON object, {} when left out"},
	{Name: "servers", Description: "Show each MCP server: state, transport, tool count, last error", FrontEnd: true},
	{Name: "mcp", Hint: "[add|remove|reconnect|…]", Description: "List the session's MCP servers; add, remove, reconnect, disable or enable one while the session runs", FrontEnd: true},
	{Name: "login", Hint: "<server>", Description: "Sign in to an MCP server again, after a declined or expired sign-in or /logout", FrontEnd: true},
	{Name: "logout", Hint: "<server>", Description: "Sign out of an MCP server: its tokens are deleted and revoked, and it disconnects", FrontEnd: true},
	{Name: "resources", Description: "List the resources and resource templates of the session's MCP servers", FrontEnd: true},
	{Name: "read", Hint: "<uri>", Description: "Show a resource of an MCP server: its text, binary data summarized", FrontEnd: true},
	{Name: "status", Description: "Show the session's mode, what the kernel enforces of it, and the mode each server's process runs under", FrontEnd: true},
	{Name: "usage", Description: "Show the session's token use, cost and how full the model's context is", Runner: true},
	{Name: "compact", Description: "Summarize the conversation for the model, to free its context window", Runner: true},
	{Name: "help", Description: "Show the commands and how to configure a model"},
}

// Commands returns the slash commands of every session, in display order.
// The slice is a copy.
func Commands() []Command { return append([]Command(nil), commands[:]...) }

// command returns the row of [Commands] that c names, if it is one of the
// runner's: direct is true for a row the direct provider answers (marked
// neither FrontEnd nor Runner) and for an unknown command; ok is false for
// nil and for a name that is no row (a front-end row is a row: the caller
// checks FrontEnd).
func command(c *gateway.Command) (row Command, direct, ok bool) {
	if c == nil {
		return Command{}, false, false
	}
	if c.Unknown {
		return Command{}, true, true
	}
	for _, r := range commands {
		if r.Name == c.Name {
			return r, !r.FrontEnd && !r.Runner, true
		}
	}
	return Command{}, false, false
}

// UnknownCommandText is the answer to a prompt starting with the unknown
// command word (a [gateway.Command] marked Unknown; word with its slash,
// "/halp").
func UnknownCommandText(word string) string {
	return "Unknown command " + word + "; /help lists them."
}

// commandsHelp is the command list of DirectHelp.
func commandsHelp() string {
	var b strings.Builder
	for _, c := range commands {
		use := "/" + c.Name
		if c.Hint != "" {
			use += " " + c.Hint
		}
		fmt.Fprintf(&b, "  %-30s %s\n", use, c.Description)
	}
	return b.String()
}
