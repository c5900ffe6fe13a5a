package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// DirectHelp returns the text of /help, also shown in direct mode for any
// text that is not a command. It lists [Commands], gives an example /call of
// one of tools (the session's tools: see [exampleCall]) and says how to
// configure a model.
func DirectHelp(tools []*gateway.Tool) string {
	example := "This session has no tools yet; /servers shows its MCP servers."
	if call := exampleCall(tools); call != "" {
		example = "e.g. " + call
	}
	return `acp-agent is running without a model (direct mode): you drive the session's tools yourself.

Commands:
` + commandsHelp() + `
` + example + `

This session runs without a model. To chat with one, pick it in the
session's Model setting if your editor shows one, or start acp-agent with:
  --model anthropic:claude-sonnet-4-5   and ANTHROPIC_API_KEY set
  --model openai:gpt-4.1                and OPENAI_API_KEY set
  --model openai:llama3.1               and OPENAI_BASE_URL=http://127.0.0.1:11434/v1 (Ollama)
or the "model" key of the config file. The commands above call the same
tools a model would, under the same permissions.`
}

// exampleCall is a /call of one of tools with its required arguments
// filled by placeholder values of their schema types ("..." for a string,
// 1, true, [], {}), or "" when tools is empty. It picks, in order of
// preference, a read-only tool of an MCP server (Group set, not Core: not
// one of the agent's own), a read-only tool, a tool of an MCP server, any
// tool (the first in tools' order of each), so the example is safe to try
// and names a tool that exists.
func exampleCall(tools []*gateway.Tool) string {
	var pick *gateway.Tool
	best := -1
	for _, t := range tools {
		score := 0
		if t.Annotations.ReadOnlyHint {
			score += 2
		}
		if t.Group != "" && !t.Core {
			score++
		}
		if score > best {
			pick, best = t, score
		}
	}
	if pick == nil {
		return ""
	}
	args := "{}"
	if b, err := json.Marshal(exampleArgs(pick.InputSchema)); err == nil {
		args = string(b)
	}
	return "/call " + pick.Name + " " + args
}

// exampleArgs are placeholder values for the required properties of an
// input schema, as an ordered JSON object (the order of "required").
func exampleArgs(schema json.RawMessage) orderedArgs {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := make(orderedArgs, 0, len(s.Required))
	for _, name := range s.Required {
		typ, _ := s.Properties[name].Type.(string)
		var v any = "..."
		switch typ {
		case "integer", "number":
			v = 1
		case "boolean":
			v = true
		case "array":
			v = []any{}
		case "object":
			v = map[string]any{}
		}
		out = append(out, argValue{name, v})
	}
	return out
}

// orderedArgs is a JSON object whose members keep their order.
type orderedArgs []argValue

type argValue struct {
	name  string
	value any
}

// MarshalJSON writes the members in order.
func (a orderedArgs) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Direct is the offline provider used when no model is configured. It
// answers the turn's command (gateway.Request.Command, typed by the front
// end; it never reads the message's text): /tools lists the tools, /call
// asks the runner to call one (the same path a model's tool call takes),
// an unknown command ([gateway.Command].Unknown) is said to be unknown
// ([UnknownCommandText]); /help, and a message with no command, get
// DirectHelp. Each /call gets a random tool call ID ("call_" and 16 hex
// digits), so IDs do not repeat across agent restarts or session/load. It is
// safe for concurrent use. It reads only the current turn: the runner gives
// it no history (Request.Messages holds the turn's messages alone).
type Direct struct{}

// NewDirect returns the direct provider.
func NewDirect() *Direct { return &Direct{} }

var _ gateway.Provider = (*Direct)(nil)

// Name implements [gateway.Provider].
func (*Direct) Name() string { return "direct" }

func (*Direct) turnOnly() {}

// Complete implements [gateway.Provider].
func (*Direct) Complete(_ context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
	if n := len(req.Messages); n == 0 || req.Messages[n-1].Role != gateway.RoleUser {
		// The /call has run and its result is on screen: the turn is over.
		return &gateway.Response{}, nil
	}
	say := func(s string) (*gateway.Response, error) {
		emit(gateway.Event{Kind: gateway.EventTextDelta, Text: s})
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent(s)}}}, nil
	}
	cmd := req.Command
	if cmd == nil { // a message: no model to answer it
		return say(DirectHelp(req.Tools))
	}
	if cmd.Unknown {
		return say(UnknownCommandText("/" + cmd.Name))
	}
	switch cmd.Name {
	case "tools":
		return say(listTools(req.Tools))
	case "call":
		name, argText, _ := strings.Cut(cmd.Args, " ")
		if name == "" {
			usage := "usage: /call <tool> [args]; args is a JSON object"
			if call := exampleCall(req.Tools); call != "" {
				usage += ", e.g. " + call
			}
			return say(usage + "; /tools lists the tools")
		}
		args, err := parseArgs(argText)
		if err != nil {
			return say(fmt.Sprintf("/call %s: %v", name, err))
		}
		return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{{ID: NewToolCallID(), Name: name, Args: args}}}}, nil
	default: // help, and a command of no one's
		return say(DirectHelp(req.Tools))
	}
}

// parseArgs parses the arguments of /call: a JSON object, {} when s is blank.
func parseArgs(s string) (map[string]any, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if rest(dec) != nil {
		return nil, fmt.Errorf("arguments must be a single JSON object, found more after it")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object like {\"key\": \"value\"}, not %s", jsonKind(v))
	}
	return obj, nil
}

// rest returns what the decoder has not consumed, or nil when only
// whitespace is left.
func rest(dec *json.Decoder) []byte {
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(dec.Buffered())
	if len(bytes.TrimSpace(buf.Bytes())) == 0 {
		return nil
	}
	return buf.Bytes()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// listTools renders /tools: one line per tool with its group (server) and the
// first line of its description.
func listTools(tools []*gateway.Tool) string {
	if len(tools) == 0 {
		return "This session has no tools. /servers shows why a server has none."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d tools in this session:\n", len(tools))
	for _, t := range tools {
		group := t.Group
		if group == "" {
			group = "built-in"
		}
		desc := firstLine(t.Description)
		if desc != "" {
			desc = " — " + desc
		}
		fmt.Fprintf(&b, "- %s (%s)%s\n", t.Name, group, desc)
	}
	return strings.TrimRight(b.String(), "\n")
}

// maxDescLine is the longest description /tools shows, in runes.
const maxDescLine = 120

// firstLine returns the first line of a description, cut to maxDescLine runes.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > maxDescLine {
		line = strings.TrimSpace(string(r[:maxDescLine-1])) + "…"
	}
	return line
}
