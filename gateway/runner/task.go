package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
)

// Defaults of Subagents.
const (
	// DefaultSubagentTurnRequests bounds the model requests of one
	// subagent's turn.
	DefaultSubagentTurnRequests = 25
	// DefaultSubagentTokens is one subagent's token budget: the prompt and
	// output tokens of all its requests, cached or not. Its calls stop
	// once it is spent.
	DefaultSubagentTokens = 500_000
)

// Subagents configure the task tool: the model hands a task to a
// subagent, a child turn with a fresh context (its own system prompt and
// the task alone, not the parent's history), the parent's tools or a
// subset (never task: one level deep), its own limits. The child's final
// answer is the call's result; its transcript is kept on the result
// (gateway.Result.Subagent); its usage adds to the parent turn's. Several
// task calls of one response run in parallel (Options.ParallelTools).
// The zero value is valid: a general-purpose subagent only.
type Subagents struct {
	// Agents are the configured subagents the model may name
	// (subagent_type); the tool's description lists them.
	Agents []Agent
	// MaxTurnRequests bounds the model requests of one child's turn; zero
	// or negative means DefaultSubagentTurnRequests.
	MaxTurnRequests int
	// MaxTokens is one child's token budget (see DefaultSubagentTokens);
	// zero or negative means the default.
	MaxTokens int64
}

// Agent is a configured subagent, as Claude Code's agents.
type Agent struct {
	// Name is what the model passes as subagent_type.
	Name string
	// Description says when to use it; the task tool lists it.
	Description string
	// Prompt is its system prompt; empty means the default one
	// (DefaultSubagentPrompt).
	Prompt string
	// Tools, if set, are the tools it may use: names or globs (path.Match,
	// such as "mcp__github__*") of the parent's tools.
	Tools []string
	// Model is the ID of the model it runs on; empty means the parent's.
	Model string
}

// DefaultSubagentPrompt is the system prompt of a subagent without one of
// its own.
const DefaultSubagentPrompt = "You are a subagent of acp-agent, a coding assistant: the main agent handed you the task below. " +
	"You do not see its conversation, only this task. Do it with the tools you have, then end with a final report: " +
	"what you did and found, concise and complete, since your report is all the main agent sees of your work."

func (s *Subagents) withDefaults() *Subagents {
	c := *s
	c.Agents = slices.Clone(s.Agents)
	if c.MaxTurnRequests <= 0 {
		c.MaxTurnRequests = DefaultSubagentTurnRequests
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultSubagentTokens
	}
	return &c
}

// agent returns the configured subagent named name.
func (s *Subagents) agent(name string) (Agent, bool) {
	i := slices.IndexFunc(s.Agents, func(a Agent) bool { return a.Name == name })
	if i < 0 {
		return Agent{}, false
	}
	return s.Agents[i], true
}

// taskInput is the task tool's arguments.
type taskInput struct {
	Description  string   `json:"description"`
	Prompt       string   `json:"prompt"`
	SubagentType string   `json:"subagent_type"`
	Tools        []string `json:"tools"`
}

// taskTool is the task tool of parent's turn: its calls run children of
// that turn.
func (r *Runner) taskTool(parent *turnState) *gateway.Tool {
	s := r.opts.Subagents
	desc := "Hand a self-contained task to a subagent. It starts with a fresh context (it does not see this conversation) " +
		"and your tools, and returns only its final report: put everything it needs in prompt. " +
		"Several task calls in one step run in parallel."
	props := `"description":{"type":"string","description":"A short title (3-5 words)"},` +
		`"prompt":{"type":"string","description":"The task, with all the context it needs"},`
	if len(s.Agents) > 0 {
		var b strings.Builder
		names := make([]string, len(s.Agents))
		b.WriteString(" subagent_type (default: general-purpose):")
		for i, a := range s.Agents {
			names[i] = a.Name
			fmt.Fprintf(&b, " %s: %s;", a.Name, summaryLine(a.Description))
		}
		desc += strings.TrimSuffix(b.String(), ";") + "."
		enum, _ := json.Marshal(names)
		props += `"subagent_type":{"type":"string","enum":` + string(enum) + `},`
	}
	props += `"tools":{"type":"array","items":{"type":"string"},"description":"Only these of your tools (default: all)"}`
	return &gateway.Tool{
		Name:        gateway.TaskToolName,
		Label:       "Task",
		Description: desc,
		InputSchema: json.RawMessage(`{"type":"object","properties":{` + props + `},"required":["description","prompt"]}`),
		Annotations: gateway.Annotations{ReadOnlyHint: true, OpenWorldHint: new(false), DestructiveHint: new(false)},
		Kind:        gateway.ToolKindThink,
		Core:        true,
		Execute: func(ctx context.Context, callID string, args map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
			return r.runTask(ctx, parent, callID, args), nil
		},
	}
}

// runTask runs the child of the task call callID of parent's turn and
// returns the call's result: the child's final answer, with its run
// (Result.Subagent). Bad input is an error result. Cancelling ctx (the
// parent's turn) cancels the child; its run so far is kept.
func (r *Runner) runTask(ctx context.Context, parent *turnState, callID string, args map[string]any) gateway.Result {
	s := r.opts.Subagents
	var in taskInput
	if b, err := json.Marshal(args); err != nil || json.Unmarshal(b, &in) != nil {
		return gateway.ErrorResult("task: the arguments are description (string), prompt (string), subagent_type (string) and tools (array of strings)")
	}
	in.Description = textsafe.Line(in.Description, gateway.MaxToolTitle)
	if strings.TrimSpace(in.Prompt) == "" || in.Description == "" {
		return gateway.ErrorResult("task: description and prompt are required")
	}
	agent := Agent{Prompt: DefaultSubagentPrompt}
	if in.SubagentType != "" && in.SubagentType != "general-purpose" {
		a, ok := s.agent(in.SubagentType)
		if !ok {
			names := []string{"general-purpose"}
			for _, a := range s.Agents {
				names = append(names, a.Name)
			}
			return gateway.ErrorResult(fmt.Sprintf("task: no subagent_type %q; the subagents are %s", in.SubagentType, strings.Join(names, ", ")))
		}
		agent = a
		if agent.Prompt == "" {
			agent.Prompt = DefaultSubagentPrompt
		}
	}
	model := parent.req.Model
	if agent.Model != "" {
		if _, err := r.model(agent.Model); err != nil {
			return gateway.ErrorResult(fmt.Sprintf("task: subagent %s: %v", agent.Name, err))
		}
		model = agent.Model
	}
	parentKey := parent.req.SessionKey
	only, err := r.childTools(parent.run.toolsKey, agent.Tools, in.Tools)
	if err != nil {
		return gateway.ErrorResult("task: " + err.Error())
	}
	name := "task-" + callID
	key := parentKey + "/" + name
	description := agent.Description
	if description == "" {
		description = textsafe.Line(in.Prompt, gateway.MaxToolTitle)
	}
	info := gateway.SubagentEvent{CallID: callID, Name: name, Title: in.Description, Type: agent.Name, Description: description}
	req := gateway.SendRequest{
		SessionKey: key, RunID: parent.req.RunID + "/" + name,
		Message: []gateway.Content{gateway.TextContent(in.Prompt)},
		Model:   model, Toggles: parent.req.Toggles, System: agent.Prompt, ReadOnly: parent.req.ReadOnly,
		Tenant: parent.req.Tenant,
	}
	if parent.req.SessionID != "" {
		req.SessionID = parent.req.SessionID + "/" + name // the subagent's id, as ACP's subagent_update names it
	}
	if ask := parent.req.Ask; ask != nil {
		req.Ask = func(ctx context.Context, pr gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
			pr.Call.Title = textsafe.Line(in.Description+": "+pr.Call.Title, gateway.MaxToolTitle)
			pr.Subagent = name
			return ask(ctx, pr)
		}
	}
	r.parents.Store(key, r.grantKey(parentKey))
	defer func() {
		r.parents.Delete(key)
		r.callIDs.forget(key)
		r.calib.forget(key)
	}()

	var prog progress
	say := func(e gateway.SubagentEvent) {
		e.Progress = prog.String()
		parent.emit(gateway.Event{Kind: gateway.EventSubagent, Subagent: &e})
	}
	start := info
	start.State, start.Prompt = gateway.SubagentRunning, in.Prompt
	say(start)
	hist := &oneTurn{}
	stop, err := r.run(ctx, req, func(ev gateway.Event) {
		prog.see(ev)
		e := info
		e.State, e.Event = gateway.SubagentRunning, &ev
		say(e)
	}, turnOptions{history: hist, toolsKey: parent.run.toolsKey, only: only, maxRequests: s.MaxTurnRequests, budget: s.MaxTokens, child: true})
	turn := hist.get()
	if turn.StopReason == "" { // run failed before it could keep the turn
		turn.StopReason = gateway.StopEndTurn
	}
	end := info
	end.State, end.Stop, end.Usage = gateway.SubagentDone, stop, turn.Usage
	if err != nil {
		end.Stop = gateway.StopEndTurn
	}
	say(end)
	res := taskResult(turn, stop, err)
	res.Subagent = &gateway.Subagent{Name: name, Title: in.Description, Type: agent.Name, Description: description, Turn: turn}
	return res
}

// childTools returns the filter of a child's tools: the parent session's
// (toolsKey's registry tools and the runner's own) that agentTools (names
// or globs; none: all) and named (names; none: all) allow. A name in named
// that the parent lacks is an error.
func (r *Runner) childTools(toolsKey string, agentTools, named []string) (func(*gateway.Tool) bool, error) {
	if len(agentTools) == 0 && len(named) == 0 {
		return nil, nil
	}
	have := slices.Concat(r.opts.Tools, r.registry.Tools(toolsKey))
	var unknown []string
	for _, n := range named {
		if !slices.ContainsFunc(have, func(t *gateway.Tool) bool { return t.Name == n }) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("tools: you have no tool %s", strings.Join(unknown, ", "))
	}
	return func(t *gateway.Tool) bool {
		if len(named) > 0 && !slices.Contains(named, t.Name) {
			return false
		}
		if len(agentTools) == 0 {
			return true
		}
		return slices.ContainsFunc(agentTools, func(p string) bool { ok, _ := path.Match(p, t.Name); return ok || p == t.Name })
	}, nil
}

// taskResult is the task call's result of a child's turn: its last
// message's text, with a note when it stopped short.
func taskResult(turn gateway.Turn, stop gateway.StopReason, err error) gateway.Result {
	answer := ""
	for _, m := range slices.Backward(turn.Messages) {
		if m.Role == gateway.RoleAssistant && len(m.Content) > 0 {
			answer = gateway.PromptText(m.Content)
			break
		}
	}
	var note string
	switch {
	case err != nil:
		note = "The subagent failed: " + gateway.ErrorText(err)
	case stop == gateway.StopCancelled:
		note = "The subagent was cancelled."
	case stop == gateway.StopMaxTokens:
		note = "The subagent ran out of its token budget; this is its answer so far."
	case stop == gateway.StopMaxTurnRequests:
		note = "The subagent reached its limit of model requests; this is its answer so far."
	case stop == gateway.StopRefusal:
		note = "The subagent's model refused the task."
	case answer == "":
		note = "The subagent ended without a report."
	}
	text := answer
	if note != "" {
		text = strings.TrimSpace(answer + "\n\n[" + note + "]")
	}
	res := gateway.Result{Content: []gateway.Content{gateway.TextContent(text)}}
	res.IsError = err != nil || stop == gateway.StopCancelled
	return res
}

// oneTurn is the history of a child: it starts empty (a fresh context)
// and keeps the one turn it is given.
type oneTurn struct {
	mu   sync.Mutex
	turn gateway.Turn
}

func (h *oneTurn) View(context.Context, string) gateway.View { return gateway.View{} }

func (h *oneTurn) Append(_ context.Context, _ string, t gateway.Turn) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.turn = t
	return nil
}

func (h *oneTurn) Forget(context.Context, string) {}

func (h *oneTurn) get() gateway.Turn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.turn
}

// progress is the running summary of a child's tool calls.
type progress struct {
	calls   int
	running []gateway.ToolCallEvent // started, not ended, oldest first
}

// see counts ev.
func (p *progress) see(ev gateway.Event) {
	switch ev.Kind {
	case gateway.EventToolStart:
		p.calls++
		p.running = append(p.running, *ev.Call)
	case gateway.EventToolEnd:
		p.running = slices.DeleteFunc(p.running, func(c gateway.ToolCallEvent) bool { return c.ID == ev.Call.ID })
	}
}

// String is "3 tool calls; now: <title>", "no tool calls yet" at first.
func (p *progress) String() string {
	if p.calls == 0 {
		return "working: no tool calls yet"
	}
	s := fmt.Sprintf("%d tool calls", p.calls)
	if p.calls == 1 {
		s = "1 tool call"
	}
	if n := len(p.running); n > 0 {
		s += "; now: " + p.running[n-1].Title
	}
	return s
}
