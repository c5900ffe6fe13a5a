package runner

import (
	"fmt"
	"strings"
	"unicode"
)

// Command is one slash command of a session (ACP "Slash Commands",
// https://agentclientprotocol.com/protocol/slash-commands). The table of
// them ([Commands]) is the one place a command is declared: the editor's
// menu (available_commands_update), the /help text ([DirectHelp]) and
// dispatch (the direct provider, [IsDirectCommand], and the front end for
// [Command.FrontEnd] commands) are all derived from it.
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

// ParseCommand splits a prompt text into its command and the rest, if it
// starts with one of [Commands] ("/call x {}" → call, "x {}").
func ParseCommand(text string) (cmd Command, rest string, ok bool) {
	word, rest, _ := strings.Cut(strings.TrimSpace(text), " ")
	name, slash := strings.CutPrefix(word, "/")
	if !slash {
		return Command{}, "", false
	}
	for _, c := range commands {
		if c.Name == name {
			return c, strings.TrimSpace(rest), true
		}
	}
	return Command{}, "", false
}

// UnknownCommand reports whether text starts with a word shaped like a
// command that is none of [Commands]: a slash, then a letter, then letters,
// digits, "_" or "-", up to the first space or the end ("/halp", "/Tools
// x"; the first word ends at any white space). Such a prompt is answered "Unknown command /word; /help lists them."
// ([UnknownCommandText]) in every mode, never sent to a model. A slash
// word of any other shape is a message: "/usr/bin/foo is broken", "/tmp.",
// "/ 2" go to the model as written, and "/<server>:<prompt>" is an MCP
// prompt (package session). Matching is exact: "/Tools" is unknown, as
// commands are lower case.
func UnknownCommand(text string) (word string, ok bool) {
	text = strings.TrimSpace(text)
	first := text
	if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
		first = text[:i]
	}
	name, slash := strings.CutPrefix(first, "/")
	if !slash || !commandShaped(name) {
		return "", false
	}
	for _, c := range commands {
		if c.Name == name {
			return "", false
		}
	}
	return first, true
}

// UnknownCommandText is the answer to a prompt starting with the unknown
// command word (see [UnknownCommand]).
func UnknownCommandText(word string) string {
	return "Unknown command " + word + "; /help lists them."
}

// commandShaped reports whether name is a letter then letters, digits,
// "_" or "-" (ASCII).
func commandShaped(name string) bool {
	if name == "" || !isLetter(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !isLetter(c) && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// IsDirectCommand reports whether text starts with a command the direct
// provider answers (every command of [Commands] but the front end's and the
// runner's); such a prompt runs without the model.
func IsDirectCommand(text string) bool {
	c, _, ok := ParseCommand(text)
	return ok && !c.FrontEnd && !c.Runner
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
