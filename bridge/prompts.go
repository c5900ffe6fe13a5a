package bridge

// MCP prompts (https://modelcontextprotocol.io/specification/2025-11-25/server/prompts):
// each server's prompts are listed at connect and after
// notifications/prompts/list_changed, and offered to the session as
// commands named "<server>:<prompt>" (PromptCommandNames).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// Errors of Manager.GetPrompt.
var (
	// ErrUnknownPrompt: no prompt command of the session has that name.
	ErrUnknownPrompt = errors.New("unknown prompt")
	// ErrPromptArguments: required arguments are missing, or an argument
	// the prompt does not declare was given.
	ErrPromptArguments = errors.New("bad prompt arguments")
)

// maxPromptDescription caps a prompt's or argument's description as the
// editor's command menu shows it, in characters.
const maxPromptDescription = 500

// PromptCommand is one MCP prompt of a session, offered as the slash command
// "/<Name>".
type PromptCommand struct {
	// Name is the command word without the slash: "<server>:<prompt>", each
	// piece sanitized like a tool name's ([a-zA-Z0-9_-], other runes '_'),
	// with a short hash suffix when two prompts would share a name or the
	// name is longer than MaxToolNameLen (PromptCommandNames).
	Name string
	// Server and Prompt are the server's name and the prompt's own name.
	Server, Prompt string
	// Title and Description are the prompt's, possibly empty.
	Title, Description string
	// Arguments are the prompt's arguments, in the server's order.
	Arguments []PromptArgument
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name, Title, Description string
	// Required: prompts/get is not sent without it.
	Required bool
}

// PromptMessage is one message of a prompts/get result: its Role ("user"
// or "assistant") and one content block, mapped as tool results are.
type PromptMessage struct {
	Role    string
	Content gateway.Content
}

// PromptResult is the outcome of Manager.GetPrompt.
type PromptResult struct {
	// Description is the server's description of the result, possibly empty.
	Description string
	// Messages are the prompt's messages in order.
	Messages []PromptMessage
}

// PromptCommandNames returns the command name of each ref (Tool holding the
// prompt's name), in order: "<server>:<prompt>" with both pieces sanitized,
// cut and de-duplicated under the rules of BridgedNames, so a name depends
// only on the refs, never on their order.
func PromptCommandNames(refs []ToolRef) []string {
	return uniqueNames(refs, func(r ToolRef) string { return sanitizePiece(r.Server) + ":" + sanitizePiece(r.Tool) })
}

// promptCache is a server's prompts (prompts/list): listCache, in
// toolcache.go.
type promptCache = listCache[*mcp.Prompt]

// listPrompts pages through prompts/list when the server offers prompts,
// bounded by the list timeout like tools/list.
func (s *client) listPrompts(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Prompt, error) {
	if res := cs.InitializeResult(); res == nil || res.Capabilities == nil || res.Capabilities.Prompts == nil {
		return nil, nil
	}
	lctx, cancel := context.WithTimeout(ctx, s.timeouts.ToolsList)
	defer cancel()
	var list []*mcp.Prompt
	for p, err := range cs.Prompts(lctx, nil) {
		if err != nil {
			if errors.Is(lctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("%w: prompts/list took longer than %s", ErrTimeout, s.timeouts.ToolsList)
			}
			return nil, fmt.Errorf("prompts/list failed: %w", err)
		}
		list = append(list, p)
	}
	return list, nil
}

// loadPrompts lists the prompts at connect: a failure is logged and leaves
// the server without prompts, never failing it.
func (s *client) loadPrompts(ctx context.Context, cs *mcp.ClientSession) {
	list, err := s.listPrompts(ctx, cs)
	if err != nil {
		s.log.Warn("listing the prompts failed; the server's prompts are not offered", "err", err)
		return
	}
	s.prompts.set(list)
}

// onPromptListChanged handles notifications/prompts/list_changed as
// onToolListChanged does tools: one refresh at a time, in the background.
func (s *client) onPromptListChanged(ctx context.Context, _ *mcp.PromptListChangedRequest) {
	s.listChanged(ctx, &s.prompts.refresh, s.refreshPrompts)
}

// refreshPrompts lists the prompts again and, when that worked, tells the
// Manager; a failure keeps the old list. ctx ends when the server closes.
func (s *client) refreshPrompts(ctx context.Context) {
	cs, err := s.conn.session()
	var list []*mcp.Prompt
	if err == nil {
		list, err = s.listPrompts(ctx, cs)
	}
	closing := ctx.Err() != nil
	if err == nil && !closing {
		s.prompts.set(list)
	}
	if err != nil {
		s.log.Warn("refreshing the prompts after prompts/list_changed failed; keeping the old list", "err", err)
	} else if !closing && s.onPromptsChanged != nil {
		s.log.Info("prompts changed", "prompts", len(list))
		s.onPromptsChanged()
	}
}

// getPrompt sends prompts/get, counted against the server's rate limit and
// bounded by the call timeout. An http or sse server that lost the MCP
// session is initialized again and asked once more (prompts/get changes
// nothing, so asking twice is safe), as tool calls are (client.call).
func (s *client) getPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	if err := s.limiter.Allow(); err != nil {
		return nil, err
	}
	defer s.use()() // a lazy server rests after its last request (lazy.go)
	cs, err := s.liveSession(ctx)
	if err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]string{}
	}
	res, err := s.getPromptOnce(ctx, cs, name, args)
	if err == nil || ctx.Err() != nil || !s.redials() || !isSessionLost(err) {
		return res, err
	}
	s.log.Info("the MCP session was lost; initializing a new one", "prompt", name, "err", err)
	if cs, err = s.reconnect(ctx, cs, err); err != nil {
		return nil, err
	}
	return s.getPromptOnce(ctx, cs, name, args)
}

func (s *client) getPromptOnce(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	cctx, cancel := s.requestContext(ctx, s.timeouts.ToolCall)
	defer cancel()
	res, err := cs.GetPrompt(cctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("%w: prompts/get took longer than %s", ErrTimeout, s.timeouts.ToolCall)
	}
	return nil, err
}

// promptsChanged tells Options.OnPromptsChanged.
func (m *Manager) promptsChanged() {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if !closed && m.opts.OnPromptsChanged != nil {
		m.opts.OnPromptsChanged()
	}
}

// Prompts returns the session's prompt commands: every prompt of every
// server that listed some and is not disabled (SetEnabled), in server
// order, then the server's order.
func (m *Manager) Prompts() []PromptCommand {
	m.mu.Lock()
	servers := m.enabled()
	m.mu.Unlock()
	var refs []ToolRef
	var prompts []*mcp.Prompt
	for _, s := range servers {
		for _, p := range s.prompts.get() {
			refs = append(refs, ToolRef{Server: s.spec.Name, Tool: p.Name})
			prompts = append(prompts, p)
		}
	}
	names := PromptCommandNames(refs)
	out := make([]PromptCommand, len(prompts))
	for i, p := range prompts {
		// A server's titles and descriptions reach the editor's command
		// menu: one visible line each, as every title is (textsafe).
		c := PromptCommand{Name: names[i], Server: refs[i].Server, Prompt: p.Name,
			Title: textsafe.Line(p.Title, gateway.MaxToolTitle), Description: textsafe.Line(p.Description, maxPromptDescription)}
		for _, a := range p.Arguments {
			if a != nil {
				c.Arguments = append(c.Arguments, PromptArgument{Name: a.Name, Title: textsafe.Line(a.Title, gateway.MaxToolTitle),
					Description: textsafe.Line(a.Description, maxPromptDescription), Required: a.Required})
			}
		}
		out[i] = c
	}
	return out
}

// GetPrompt runs the prompt command named command (PromptCommand.Name,
// without the slash) with args: prompts/get on its server, counted against
// the server's rate limit like a tool call and bounded by its call
// timeout. Before any request, an unknown command is an error wrapping
// ErrUnknownPrompt, and missing required arguments or arguments the prompt
// does not declare one wrapping ErrPromptArguments, naming them. Each
// message's content is mapped as tool results are and capped by the
// session's result limits, per message. Errors name the command and are
// redacted.
func (m *Manager) GetPrompt(ctx context.Context, command string, args map[string]string) (*PromptResult, error) {
	cmds := m.Prompts()
	i := slices.IndexFunc(cmds, func(c PromptCommand) bool { return c.Name == command })
	if i < 0 {
		return nil, fmt.Errorf("%w: /%s is not a prompt of this session's MCP servers", ErrUnknownPrompt, command)
	}
	c := cmds[i]
	if err := checkPromptArgs(c, args); err != nil {
		return nil, err
	}
	srv := m.server(c.Server)
	if srv == nil {
		return nil, fmt.Errorf("%w: /%s: its server %q has gone", ErrUnknownPrompt, command, c.Server)
	}
	res, err := srv.getPrompt(ctx, c.Prompt, args)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q, prompt %q: %w", c.Server, c.Prompt, urlpolicy.RedactError(err))
	}
	out := &PromptResult{Description: res.Description}
	for _, msg := range res.Messages {
		if msg == nil || msg.Content == nil {
			continue
		}
		capped := capResult(&mcp.CallToolResult{Content: []mcp.Content{msg.Content}}, m.opts.Limits)
		for _, cc := range capped.Content {
			out.Messages = append(out.Messages, PromptMessage{Role: string(msg.Role), Content: contentFromMCP(cc)})
		}
	}
	return out, nil
}

// checkPromptArgs checks args against the arguments c declares.
func checkPromptArgs(c PromptCommand, args map[string]string) error {
	var missing, unknown []string
	declared := make(map[string]bool, len(c.Arguments))
	for _, a := range c.Arguments {
		declared[a.Name] = true
		if _, ok := args[a.Name]; a.Required && !ok {
			missing = append(missing, a.Name)
		}
	}
	for k := range args {
		if !declared[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	var why []string
	if len(missing) > 0 {
		why = append(why, "missing required arguments: "+strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		names := make([]string, len(c.Arguments))
		for i, a := range c.Arguments {
			names[i] = a.Name
		}
		known := "none"
		if len(names) > 0 {
			known = strings.Join(names, ", ")
		}
		why = append(why, fmt.Sprintf("unknown arguments: %s (it takes: %s)", strings.Join(unknown, ", "), known))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: /%s: %s", ErrPromptArguments, c.Name, strings.Join(why, "; "))
}
