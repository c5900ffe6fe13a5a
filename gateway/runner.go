package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
)

// DefaultMaxTurnRequests is the default limit of model requests in one prompt
// turn, after which the turn ends with StopMaxTurnRequests.
const DefaultMaxTurnRequests = 50

// RunnerOptions configure a Runner. The zero value is valid.
type RunnerOptions struct {
	// Provider is the model. Nil means the direct provider (NewDirect).
	Provider Provider
	// Tools are built-in tools offered in every session, before its extra tools.
	Tools []*Tool
	// History keeps conversations. Nil means a new MemoryHistory.
	History History
	// MaxTurnRequests limits model requests per turn; zero or negative means
	// DefaultMaxTurnRequests.
	MaxTurnRequests int
	// Logger receives the runner's logs. Nil discards them.
	Logger *slog.Logger
}

// Runner is the agent loop. It reads a session's tools from the Registry at
// the start of every model turn, so a refreshed tool set is seen on the next
// turn. Run may be called concurrently for different sessions; the caller
// serializes turns of one session (ACP allows one prompt at a time).
type Runner struct {
	registry *Registry
	opts     RunnerOptions
}

// NewRunner returns a Runner over registry. opts may be nil.
func NewRunner(registry *Registry, opts *RunnerOptions) *Runner {
	r := &Runner{registry: registry}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Provider == nil {
		r.opts.Provider = NewDirect()
	}
	if r.opts.History == nil {
		r.opts.History = &MemoryHistory{}
	}
	if r.opts.MaxTurnRequests <= 0 {
		r.opts.MaxTurnRequests = DefaultMaxTurnRequests
	}
	if r.opts.Logger == nil {
		r.opts.Logger = slog.New(slog.DiscardHandler)
	}
	return r
}

// Provider returns the runner's model provider.
func (r *Runner) Provider() Provider { return r.opts.Provider }

// Run runs one prompt turn of sessionKey: the user message, then model
// requests and the tool calls they ask for, until the model ends the turn.
// Every step is passed to emit, from the calling goroutine, in order. The
// turn's messages are added to the session's history when it ends, whatever
// the reason, with every tool call answered, so the next turn can follow.
//
// When ctx is cancelled, Run returns StopCancelled and a nil error. A failing
// tool never ends the turn: its failure goes back to the model as an error
// result. An error is returned only when the provider fails.
func (r *Runner) Run(ctx context.Context, sessionKey string, prompt []Content, emit func(Event)) (StopReason, error) {
	turn := []Message{{Role: RoleUser, Content: prompt}}
	defer func() { r.opts.History.Append(sessionKey, turn...) }()

	for range r.opts.MaxTurnRequests {
		tools := slices.Concat(r.opts.Tools, r.registry.Tools(sessionKey))
		req := &Request{Messages: slices.Concat(r.opts.History.Messages(sessionKey), turn), Tools: tools}
		resp, err := r.opts.Provider.Complete(ctx, req, emit)
		if ctx.Err() != nil {
			return StopCancelled, nil
		}
		if err != nil {
			return "", fmt.Errorf("%s provider: %w", r.opts.Provider.Name(), err)
		}
		resp.Message.Role = RoleAssistant
		if len(resp.Message.Content) > 0 || len(resp.Message.ToolCalls) > 0 {
			turn = append(turn, resp.Message)
		}
		if len(resp.Message.ToolCalls) == 0 {
			if resp.StopReason == "" {
				return StopEndTurn, nil
			}
			return resp.StopReason, nil
		}
		for _, call := range resp.Message.ToolCalls {
			res := r.callTool(ctx, tools, call, emit)
			turn = append(turn, Message{Role: RoleTool, ToolCallID: call.ID, Result: &res})
		}
		if ctx.Err() != nil {
			return StopCancelled, nil
		}
	}
	return StopMaxTurnRequests, nil
}

// callTool runs one tool call and reports it: ToolStart (pending), ToolUpdate
// (in_progress, then progress), ToolEnd (completed or failed). It always
// returns the result to give the model.
func (r *Runner) callTool(ctx context.Context, tools []*Tool, call ToolCall, emit func(Event)) Result {
	if call.Args == nil {
		call.Args = map[string]any{}
	}
	var tool *Tool
	if i := slices.IndexFunc(tools, func(t *Tool) bool { return t.Name == call.Name }); i >= 0 {
		tool = tools[i]
	}
	ev := ToolCallEvent{ID: call.ID, Name: call.Name, Title: call.Name, Kind: ToolKindOther, RawInput: call.Args, Status: ToolPending}
	if tool != nil {
		ev.Title = tool.Title()
		if tool.Annotations.ReadOnlyHint {
			ev.Kind = ToolKindRead
		}
	}
	send := func(kind EventKind, mutate func(*ToolCallEvent)) {
		e := ev
		mutate(&e)
		emit(Event{Kind: kind, Call: &e})
	}
	send(EventToolStart, func(*ToolCallEvent) {})

	var res Result
	switch {
	case tool == nil:
		res = ErrorResult(fmt.Sprintf("unknown tool %s; /tools lists them", call.Name))
	case ctx.Err() != nil:
		res = ErrorResult("cancelled before it started")
	default:
		send(EventToolUpdate, func(e *ToolCallEvent) { e.Status = ToolInProgress })
		onUpdate := func(u ToolUpdate) {
			send(EventToolUpdate, func(e *ToolCallEvent) { e.Status = ToolInProgress; e.Update = &u })
		}
		var err error
		res, err = tool.Execute(ctx, call.ID, call.Args, onUpdate)
		switch {
		case err != nil && ctx.Err() != nil:
			res = ErrorResult("cancelled")
		case errors.Is(err, context.Canceled):
			res = ErrorResult("cancelled")
		case err != nil:
			r.opts.Logger.Warn("tool call failed", "tool", call.Name, "err", err)
			res = ErrorResult(err.Error())
		}
	}
	send(EventToolEnd, func(e *ToolCallEvent) {
		e.Status = ToolCompleted
		if res.IsError {
			e.Status = ToolFailed
		}
		e.Result = &res
	})
	return res
}
