package session

// Classifying a prompt: the one place its text is read for a slash command.

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// InputKind is what a prompt is, as [Classify] reads it.
type InputKind int

const (
	// InputMessage is a message for the model: no slash command.
	InputMessage InputKind = iota
	// InputFrontEnd is a command the front end answers from the session's
	// own state (a row of runner.Commands marked FrontEnd: /servers, /mcp,
	// …), through [Session.Answer] inside [Session.Turn]; it is not stored.
	InputFrontEnd
	// InputPrompt is an MCP prompt as a slash command,
	// "/<server>:<prompt> args": [Session.Prompt] runs prompts/get and its
	// messages become the user's message (see [Session.Commands]).
	InputPrompt
	// InputRunner is a command the gateway's runner answers whatever the
	// model (any other row of runner.Commands: /tools, /call and /help
	// through its direct provider, /usage and /compact itself); it reaches
	// the runner as a gateway.Command ([Input.Gateway]).
	InputRunner
	// InputUnknown is a first word shaped like a command (a slash, a
	// letter, then letters, digits, "_" or "-") that is none of
	// runner.Commands: the runner answers "Unknown command /word; /help
	// lists them." (runner.UnknownCommandText) in every mode, never asking
	// a model.
	InputUnknown
)

// String returns the kind's name for logs: "message", "front-end command",
// "MCP prompt", "runner command" or "unknown command".
func (k InputKind) String() string {
	switch k {
	case InputMessage:
		return "message"
	case InputFrontEnd:
		return "front-end command"
	case InputPrompt:
		return "MCP prompt"
	case InputRunner:
		return "runner command"
	case InputUnknown:
		return "unknown command"
	}
	return "InputKind(" + strconv.Itoa(int(k)) + ")"
}

// Input is a prompt's text as [Classify] read it: what it is, which command
// and the text after the command word. The zero value is a message.
type Input struct {
	// Kind is what the prompt is.
	Kind InputKind
	// Name is the command word without its slash: a row's name ("call"),
	// an MCP prompt's ("docs:review"), or the unknown word as typed
	// ("halp"); "" for a message.
	Name string
	// Args is the text after the command word, trimmed of white space;
	// "" for a message or a command given none.
	Args string
	// Command is the row of runner.Commands for InputFrontEnd and
	// InputRunner; the zero Command otherwise.
	Command runner.Command
}

// IsCommand reports whether in runs without a model's answer: a command of
// the table (front-end or runner) or an unknown one. A message and an MCP
// prompt (whose messages go to the model) are not.
func (in Input) IsCommand() bool {
	return in.Kind == InputFrontEnd || in.Kind == InputRunner || in.Kind == InputUnknown
}

// IsDirect reports whether in is a command the runner's direct provider
// answers (/tools, /call, /help: an InputRunner row marked neither
// FrontEnd nor Runner).
func (in Input) IsDirect() bool {
	return in.Kind == InputRunner && !in.Command.Runner
}

// Gateway returns the command the runner is handed for in
// (gateway.SendRequest.Command): {Name, Args} for InputRunner, with
// Unknown set for InputUnknown; nil for every other kind, whose text the
// runner treats as a message.
func (in Input) Gateway() *gateway.Command {
	switch in.Kind {
	case InputRunner:
		return &gateway.Command{Name: in.Name, Args: in.Args}
	case InputUnknown:
		return &gateway.Command{Name: in.Name, Args: in.Args, Unknown: true}
	}
	return nil
}

// promptName is the shape of a prompt command's name
// (bridge.PromptCommandNames): "<server>:<prompt>". No row of
// runner.Commands has a colon, so a prompt never shadows a command.
var promptName = regexp.MustCompile(`^[a-zA-Z0-9_-]+:[a-zA-Z0-9_-]+$`)

// Classify reads a prompt's text once, for every layer below: leading and
// trailing white space is ignored; the first word, up to the first space
// (" "), is the command word. In order:
//
//   - "/name" where name is a row of runner.Commands (exactly: commands are
//     lower case) is InputFrontEnd or InputRunner, as the row says; Args
//     is the rest ("/call x {}" → call, "x {}");
//   - "/server:prompt" (letters, digits, "_", "-" either side of one
//     colon) is InputPrompt, whether or not one of the session's servers
//     has that prompt: running it says so ([Session.Prompt]);
//   - a first word, up to any white space, shaped like a command (a slash,
//     a letter, then letters, digits, "_" or "-") that is no row is
//     InputUnknown ("/halp", "/Tools");
//   - anything else is InputMessage: "/" alone, "/usr/bin/foo is broken",
//     "/tmp.", "/2fa", "hello /tools", and a row's name followed by a
//     white space other than " " ("/tools\nmore": the word is "/tools\nmore").
//
// It is a pure function of text, safe for concurrent use; a front end
// calls it once per prompt and routes on the result.
func Classify(text string) Input {
	text = strings.TrimSpace(text)
	word, rest, _ := strings.Cut(text, " ")
	if name, slash := strings.CutPrefix(word, "/"); slash {
		if c, ok := commandRow(name); ok {
			kind := InputRunner
			if c.FrontEnd {
				kind = InputFrontEnd
			}
			return Input{Kind: kind, Name: name, Args: strings.TrimSpace(rest), Command: c}
		}
		if promptName.MatchString(name) {
			return Input{Kind: InputPrompt, Name: name, Args: strings.TrimSpace(rest)}
		}
	}
	first, after := text, ""
	if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
		first, after = text[:i], text[i:]
	}
	if name, slash := strings.CutPrefix(first, "/"); slash && commandShaped(name) {
		if _, ok := commandRow(name); !ok {
			return Input{Kind: InputUnknown, Name: name, Args: strings.TrimSpace(after)}
		}
	}
	return Input{}
}

// commandRow returns the row of runner.Commands named name.
func commandRow(name string) (runner.Command, bool) {
	for _, c := range runner.Commands() {
		if c.Name == name {
			return c, true
		}
	}
	return runner.Command{}, false
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
