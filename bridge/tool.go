package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
)

// newBridgedTool wraps the MCP tool t of server s as a gateway.Tool named name.
func newBridgedTool(name string, s *client, t *mcp.Tool) *gateway.Tool {
	schema, ok := t.InputSchema.(json.RawMessage) // leanTools made it so
	if !ok || len(schema) == 0 {
		var err error
		schema, err = json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object"}`)
		}
	}
	ann := annotationsFromMCP(t.Annotations)
	if ann.Title == "" {
		ann.Title = t.Title
	}
	label := toolTitle(s.spec.Name, t)
	toolName, kind := t.Name, toolKind(t)
	return &gateway.Tool{
		Name:        name,
		Label:       label,
		Group:       s.spec.Name,
		Description: t.Description,
		InputSchema: schema,
		Annotations: ann,
		Kind:        kind,
		// The agent's own in-process servers (its built-in tools) are
		// always offered; other servers' tools may be deferred behind tool
		// search.
		Core:           s.spec.Transport == TransportInProcess,
		Confined:       s.spec.Transport == TransportInProcess && t.Meta[MetaConfined] == true,
		MaxResultChars: maxResultChars(t),
		Execute: func(ctx context.Context, callID string, args map[string]any, onUpdate func(gateway.ToolUpdate)) (gateway.Result, error) {
			ctx = withCall(ctx, callInfo{id: callID, title: label, kind: kind})
			res, err := s.call(ctx, toolName, args, onUpdate)
			if err != nil {
				return gateway.Result{}, fmt.Errorf("MCP server %q, tool %q: %w", s.spec.Name, toolName, err)
			}
			return s.withDeniedNote(res), nil
		},
	}
}

// MetaConfined is the key of an in-process server's tool _meta that marks
// the tool as confined by the session's mode in the kernel (true):
// gateway.Tool.Confined. Other servers' tools cannot claim it.
const MetaConfined = "acp-agent/confined"

// MetaMaxResultChars is the key of an MCP tool's _meta under which a server
// gives the tool's own budget for one result that reaches the model, in
// characters (Claude Code's convention).
const MetaMaxResultChars = "anthropic/maxResultSizeChars"

// maxResultChars reads t's _meta[MetaMaxResultChars]: a positive number, or
// 0 for none.
func maxResultChars(t *mcp.Tool) int {
	switch v := t.Meta[MetaMaxResultChars].(type) {
	case float64:
		if v >= 1 && v <= 1<<30 {
			return int(v)
		}
	case json.Number:
		if n, err := v.Int64(); err == nil && n >= 1 && n <= 1<<30 {
			return int(n)
		}
	case int:
		if v >= 1 {
			return v
		}
	}
	return 0
}

// leanToolLists is a sending middleware that makes every tools/list
// result cheap to hold for as long as the session lives, before go-sdk
// returns it and (on 2026-07-28 sessions) keeps it in its tools/list cache:
// go-sdk decodes each tool's input and output schema as nested
// map[string]any, several times the size of the JSON it came from, and a
// session keeps its servers' tools while it idles. Each tool's schemas
// become their compact JSON (json.RawMessage), which newBridgedTool hands
// on as is and go-sdk reads as well as a map (its x-mcp-header checks
// re-encode whatever the schema is); a schema that cannot be encoded is
// left as it was. The result is still go-sdk's alone here, so it is changed
// in place: the session holds one copy of its tools, the one go-sdk's cache
// and the bridge share, read-only.
func leanToolLists(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
			for _, t := range list.Tools {
				if t != nil {
					t.InputSchema = compactSchema(t.InputSchema)
					t.OutputSchema = compactSchema(t.OutputSchema)
				}
			}
		}
		return res, err
	}
}

// compactSchema is schema as compact JSON; nil stays nil.
func compactSchema(schema any) any {
	switch schema.(type) {
	case nil, json.RawMessage:
		return schema
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return schema
	}
	return json.RawMessage(b)
}

// MetaToolKind is the key of an MCP tool's _meta under which a server may
// declare the ACP tool kind of its calls ("read", "edit", "search",
// "execute", "think", "fetch", "delete", "move", "other"): acp-agent's
// built-in tools do, and so can any server. An unknown value is ignored.
const MetaToolKind = "acp-agent/kind"

// toolTitle is the title of t's calls (ACP tool_call title): the tool's
// title, else its annotations' title (the display-name order of MCP
// "Tool": title, then annotations.title), followed by its server in
// parentheses, so that two servers' "Echo Tool" are told apart ("Echo Tool
// (everything)"); the agent's own built-in tools (ReservedServerName) keep
// the bare title. A tool with neither title, or with no visible text in
// it, is "<server>/<tool>". The title is the server's text shown to the
// user (a tool_call, a permission question, a sampling request made during
// the call): it is made one line of visible text (textsafe.Line), at most
// gateway.MaxToolTitle characters.
func toolTitle(server string, t *mcp.Tool) string {
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	switch title = textsafe.Line(title, 0); {
	case title == "":
		return textsafe.Line(server+"/"+t.Name, gateway.MaxToolTitle)
	case server == ReservedServerName:
		return textsafe.Line(title, gateway.MaxToolTitle)
	}
	// The server's name stays whole when the title is cut.
	suffix := " (" + server + ")"
	if room := gateway.MaxToolTitle - utf8.RuneCountInString(suffix); room >= 2 {
		return textsafe.Line(title, room) + suffix
	}
	return textsafe.Line(title+suffix, gateway.MaxToolTitle)
}

// toolKind returns the ACP tool kind of t's calls (ACP "Tool Calls",
// https://agentclientprotocol.com/protocol/tool-calls#creating): the kind
// says what a call does, so the editor can show it (and users trust it).
// In order, the first rule that applies:
//
//  1. the kind t declares in its _meta (MetaToolKind), if valid;
//  2. readOnlyHint: fetch when openWorldHint is true as well (it reads
//     from outside: a web search or fetch), else read;
//  3. a name or title that says what the tool does, a word of it (split at
//     "_", "-", ".", spaces and lower-to-upper case changes) being one of
//     deleteWords (delete, unless destructiveHint is false), moveWords
//     (move) or executeWords (execute);
//  4. openWorldHint true: fetch;
//  5. destructiveHint stated, true or false: edit (it changes things; a
//     destructive write such as write_file overwriting a file is still an
//     edit, not a delete);
//  6. else "" (shown as other).
//
// Only hints the tool states count, never the MCP defaults, so a tool
// without annotations gets a kind from its name alone.
func toolKind(t *mcp.Tool) gateway.ToolKind {
	k, _ := t.Meta[MetaToolKind].(string)
	if kind := gateway.ToolKind(k); gateway.ValidToolKind(kind) {
		return kind
	}
	a := t.Annotations
	if a == nil {
		a = &mcp.ToolAnnotations{}
	}
	openWorld := a.OpenWorldHint != nil && *a.OpenWorldHint
	switch {
	case a.ReadOnlyHint && openWorld:
		return gateway.ToolKindFetch
	case a.ReadOnlyHint:
		return gateway.ToolKindRead
	}
	title := t.Title
	if title == "" {
		title = a.Title
	}
	words := append(nameWords(t.Name), nameWords(title)...)
	notDestructive := a.DestructiveHint != nil && !*a.DestructiveHint
	switch {
	case hasWord(words, deleteWords) && !notDestructive:
		return gateway.ToolKindDelete
	case hasWord(words, moveWords):
		return gateway.ToolKindMove
	case hasWord(words, executeWords):
		return gateway.ToolKindExecute
	case openWorld:
		return gateway.ToolKindFetch
	case a.DestructiveHint != nil:
		return gateway.ToolKindEdit
	}
	return ""
}

// The words of a tool's name or title that say what it does (toolKind),
// lower case.
var (
	deleteWords  = []string{"delete", "remove", "rm", "unlink", "erase", "destroy", "drop", "purge", "rmdir", "trash"}
	moveWords    = []string{"move", "mv", "rename"}
	executeWords = []string{"exec", "execute", "run", "shell", "terminal", "bash", "command"}
)

// nameWords splits a tool name or title into lower-case words at "_",
// "-", ".", "/", spaces and lower-to-upper case changes
// ("deleteFile" → delete, file).
func nameWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range s {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return words
}

// hasWord reports whether words holds one of want.
func hasWord(words, want []string) bool {
	for _, w := range words {
		if slices.Contains(want, w) {
			return true
		}
	}
	return false
}
