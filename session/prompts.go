package session

// MCP prompts as slash commands: "/<server>:<prompt> key=value ..." runs
// prompts/get and the prompt's messages become the user's turn.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// Commands returns the session's slash commands: runner.Commands, then one
// per prompt of its MCP servers ([bridge.Manager.Prompts]) named
// "<server>:<prompt>", with the prompt's description and a hint built
// from its arguments ([PromptHint]). The slice is the caller's.
func (s *Session) Commands() []runner.Command {
	cmds := runner.Commands()
	for _, p := range s.manager.Prompts() {
		cmds = append(cmds, promptCommand(p))
	}
	return cmds
}

// promptCommand is the slash command of prompt p.
func promptCommand(p bridge.PromptCommand) runner.Command {
	desc := p.Description
	if desc == "" {
		desc = p.Title
	}
	if desc == "" {
		desc = "Prompt " + p.Prompt
	}
	return runner.Command{Name: p.Name, Hint: PromptHint(p), Description: desc + " (MCP server " + p.Server + ")"}
}

// PromptHint is the input hint of a prompt command: "" when it takes no
// arguments, "<name>" (or "[name]" when optional) for a single argument,
// which may be given as bare text, else "key=<key> ..." for each argument,
// optional ones in brackets: "owner=<owner> repo=<repo> [branch=<branch>]".
func PromptHint(p bridge.PromptCommand) string {
	if len(p.Arguments) == 1 {
		a := p.Arguments[0]
		if a.Required {
			return "<" + a.Name + ">"
		}
		return "[" + a.Name + "]"
	}
	parts := make([]string, 0, len(p.Arguments))
	for _, a := range p.Arguments {
		part := a.Name + "=<" + a.Name + ">"
		if !a.Required {
			part = "[" + part + "]"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " ")
}

// ParsePromptArgs parses the input of prompt command p: key=value words,
// where a value may be quoted ("a b" or 'a b'; in double quotes a
// backslash escapes the next character); or, when p takes exactly one
// argument, the whole text, unquoted if it is one quoted string, unless it
// starts with "<name>=". Blank text is no arguments. Errors name the
// command and the rule broken.
func ParsePromptArgs(p bridge.PromptCommand, text string) (map[string]string, error) {
	text = strings.TrimSpace(text)
	args := map[string]string{}
	if text == "" {
		return args, nil
	}
	if len(p.Arguments) == 1 && !strings.HasPrefix(text, p.Arguments[0].Name+"=") {
		words, err := splitWords(text)
		if q := text[0]; (q == '"' || q == '\'') && err == nil && len(words) == 1 {
			text = words[0] // one quoted string
		}
		args[p.Arguments[0].Name] = text
		return args, nil
	}
	words, err := splitWords(text)
	if err != nil {
		return nil, fmt.Errorf("/%s: %v", p.Name, err)
	}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("/%s: %q is not key=value (usage: /%s %s)", p.Name, w, p.Name, PromptHint(p))
		}
		if _, dup := args[k]; dup {
			return nil, fmt.Errorf("/%s: argument %q is given twice", p.Name, k)
		}
		args[k] = v
	}
	return args, nil
}

// splitWords splits s at unquoted blanks; quotes group and are removed.
func splitWords(s string) ([]string, error) {
	var words []string
	var b strings.Builder
	inWord := false
	var quote rune
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == '"' && r == '\\' && i+1 < len(runes):
			i++
			b.WriteRune(runes[i])
		case quote != 0:
			b.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, b.String())
	}
	return words, nil
}

// findPrompt returns the session's prompt command named name (an
// InputPrompt's Name), or, when no server has it, one with only that name
// (GetPrompt says it is unknown). It is looked up when the prompt runs, so
// a list refreshed since the prompt was classified counts.
func (s *Session) findPrompt(name string) bridge.PromptCommand {
	for _, p := range s.manager.Prompts() {
		if p.Name == name {
			return p
		}
	}
	return bridge.PromptCommand{Name: name}
}

// runPrompt runs the prompt command in (an InputPrompt): it returns the
// user message the turn sends to the model instead of the prompt's text
// (done false), or, in direct mode or on an error, emits the answer as
// agent text and reports done (the turn ends normally).
//
// The model gets the prompt's messages as one user message: the content
// blocks of every message in order, as tool results map them. When the
// prompt has assistant-role messages, a text block "[assistant]" or
// "[user]" precedes each run of messages of one role, so the model can
// tell what the prompt puts in its own mouth; a prompt of user messages
// only is passed as is. A message whose text would read as one of
// the direct provider's commands ("/call …", [Input.IsDirect]) gets a
// first text block "Prompt /<name>:", so that the model reads it as the
// prompt's text, not as a command the user typed (the runner itself runs
// only the command the user's prompt was classified as). In direct mode
// the messages are shown as agent text, each under its role.
func (s *Session) runPrompt(ctx context.Context, in Input, emit func(gateway.Event)) (msg []gateway.Content, done bool) {
	p, rest := s.findPrompt(in.Name), in.Args
	say := func(t string) { emit(gateway.Event{Kind: gateway.EventTextDelta, Text: t}) }
	args := map[string]string{}
	var err error
	if p.Server != "" { // a known prompt: parse its arguments
		args, err = ParsePromptArgs(p, rest)
	}
	var res *bridge.PromptResult
	if err == nil {
		res, err = s.manager.GetPrompt(ctx, p.Name, args)
	}
	switch {
	case errors.Is(err, bridge.ErrUnknownPrompt):
		say(fmt.Sprintf("%v; the session's commands are in the editor's menu and /help.\n", err))
		return nil, true
	case err != nil:
		say(fmt.Sprintf("Prompt /%s failed: %s\n", p.Name, gateway.ErrorText(err)))
		return nil, true
	case len(res.Messages) == 0:
		say(fmt.Sprintf("Prompt /%s returned no messages: nothing to send.\n", p.Name))
		return nil, true
	}
	s.core.log.Info("prompt command", "session", s.id, "prompt", p.Name, "messages", len(res.Messages))
	if s.Model() == runner.DirectModelID {
		say(promptText(p.Name, res))
		return nil, true
	}
	msg = promptMessage(res)
	if Classify(gateway.PromptText(msg)).IsDirect() {
		// A prompt whose text reads as a command ("/call …") is a message
		// for the model, marked as the prompt's.
		msg = append([]gateway.Content{gateway.TextContent("Prompt /" + p.Name + ":")}, msg...)
	}
	return msg, false
}

// promptMessage is the user message of a prompt's result (see runPrompt).
func promptMessage(res *bridge.PromptResult) []gateway.Content {
	mixed := false
	for _, m := range res.Messages {
		mixed = mixed || m.Role != "user"
	}
	out := make([]gateway.Content, 0, len(res.Messages))
	role := ""
	for _, m := range res.Messages {
		if mixed && m.Role != role {
			role = m.Role
			out = append(out, gateway.TextContent("["+role+"]"))
		}
		out = append(out, m.Content)
	}
	return out
}

// promptText renders a prompt's messages for direct mode.
func promptText(name string, res *bridge.PromptResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Prompt /%s", name)
	if res.Description != "" {
		b.WriteString(": " + res.Description)
	}
	b.WriteString("\n")
	for _, m := range res.Messages {
		fmt.Fprintf(&b, "\n[%s] %s\n", m.Role, contentText(m.Content))
	}
	return b.String()
}

// contentText is how direct mode shows one block: text as is, media and
// resources as a one-line note (a text resource with its text).
func contentText(c gateway.Content) string {
	switch c.Type {
	case gateway.ContentText:
		return c.Text
	case gateway.ContentImage, gateway.ContentAudio:
		return fmt.Sprintf("(%s %s, %d bytes)", c.Type, c.MIMEType, len(c.Data))
	case gateway.ContentResourceLink:
		return fmt.Sprintf("(resource link %s %s)", c.Name, c.URI)
	case gateway.ContentResource:
		if r := c.Resource; r != nil {
			if r.Text != "" {
				return fmt.Sprintf("(resource %s)\n%s", r.URI, r.Text)
			}
			return fmt.Sprintf("(resource %s %s, %d bytes)", r.URI, r.MIMEType, len(r.Blob))
		}
	}
	return "(" + string(c.Type) + ")"
}

// commandsChanged returns the bridge.Options OnPromptsChanged of session
// s: it hands the session's commands to its front end's CommandsChanged,
// one call at a time so that the last list sent is the newest.
func (c *Core) commandsChanged(s *Session, req OpenRequest) func() {
	fe := req.FrontEnd
	if fe == nil {
		return nil
	}
	var mu sync.Mutex
	return func() {
		mu.Lock()
		defer mu.Unlock()
		ctx, cancel := context.WithTimeout(s.base, tellTimeout)
		defer cancel()
		fe.CommandsChanged(ctx, s.id, s.Commands())
	}
}
