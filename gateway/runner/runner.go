package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
)

// Defaults of Options.
const (
	// DefaultMaxTurnRequests is the limit of model requests in one prompt
	// turn, after which the turn ends with StopMaxTurnRequests.
	DefaultMaxTurnRequests = 50
	// DefaultParallelTools bounds the tool calls of one model response that
	// run at once.
	DefaultParallelTools = 4
)

// Options configure a Runner. The zero value is valid.
type Options struct {
	// Models are the models sessions can choose from, the default first.
	// The direct provider is added last as "direct" when absent, so it is
	// the default when no other model is configured.
	Models []gateway.Model
	// Tools are built-in tools offered in every session, before its extra tools.
	Tools []*gateway.Tool
	// History keeps conversations. Nil means a new [gateway.MemoryHistory].
	History gateway.History
	// Permissions is the tool permissions policy.
	Permissions Permissions
	// MaxTurnRequests limits model requests per turn; zero or negative means
	// DefaultMaxTurnRequests.
	MaxTurnRequests int
	// ParallelTools bounds concurrent tool calls of one model response; zero
	// or negative means DefaultParallelTools.
	ParallelTools int
	// Logger receives the runner's logs. Nil discards them.
	Logger *slog.Logger
}

// Runner is the agent loop. It reads a session's tools from the Registry at
// the start of every model turn, so a refreshed tool set is seen on the next
// turn. Run may be called concurrently for different sessions; the caller
// serializes turns of one session (ACP allows one prompt at a time).
type Runner struct {
	registry *gateway.Registry
	opts     Options
	grants   grants // "allow always" answers, by session
	callIDs  callIDIndex
}

// New returns a Runner over registry. opts may be nil.
func New(registry *gateway.Registry, opts *Options) *Runner {
	r := &Runner{registry: registry}
	if opts != nil {
		r.opts = *opts
	}
	r.opts.Models = slices.Clone(r.opts.Models)
	if !slices.ContainsFunc(r.opts.Models, func(m gateway.Model) bool { return m.ID == DirectModelID }) {
		r.opts.Models = append(r.opts.Models, gateway.Model{ID: DirectModelID, Label: "Direct (no model: slash commands)", Provider: NewDirect()})
	}
	if r.opts.History == nil {
		r.opts.History = &gateway.MemoryHistory{}
	}
	if r.opts.MaxTurnRequests <= 0 {
		r.opts.MaxTurnRequests = DefaultMaxTurnRequests
	}
	if r.opts.ParallelTools <= 0 {
		r.opts.ParallelTools = DefaultParallelTools
	}
	if r.opts.Logger == nil {
		r.opts.Logger = slog.New(slog.DiscardHandler)
	}
	return r
}

// DirectModelID is the model ID of the direct provider.
const DirectModelID = "direct"

// Models returns the models sessions can choose from, the default first.
func (r *Runner) Models() []gateway.Model { return r.opts.Models }

// model returns the model with id, or the default one for "".
func (r *Runner) model(id string) (gateway.Model, error) {
	if id == "" {
		return r.opts.Models[0], nil
	}
	for _, m := range r.opts.Models {
		if m.ID == id {
			return m, nil
		}
	}
	return gateway.Model{}, fmt.Errorf("unknown model %q", id)
}

// Forget drops what the runner keeps for a session: its history and its
// "allow always" answers.
func (r *Runner) Forget(ctx context.Context, sessionKey string) {
	r.opts.History.Forget(ctx, sessionKey)
	r.grants.forget(sessionKey)
	r.callIDs.forget(sessionKey)
}

// turnOnlyProvider is a provider that reads only the running turn's
// messages (Direct, which parses the last one): the runner passes it no
// history.
type turnOnlyProvider interface{ turnOnly() }

// Run runs one prompt turn: the user message, then model requests and the
// tool calls they ask for, until the model ends the turn. Every step reaches
// emit in order, one event at a time. The turn's messages are added to the
// session's history when it ends, whatever the reason, with every tool call
// answered, so the next turn can follow.
//
// When ctx is cancelled, Run returns StopCancelled and a nil error. A failing
// tool never ends the turn: its failure goes back to the model as an error
// result. An error is returned only when the model (provider) fails.
func (r *Runner) Run(ctx context.Context, req gateway.SendRequest, emit func(gateway.Event)) (stop gateway.StopReason, err error) {
	model, err := r.model(req.Model)
	if err != nil {
		return "", err
	}
	if IsDirectCommand(gateway.PromptText(req.Message)) {
		// Slash commands work whatever the model: the direct provider runs
		// them, and the model sees them in the history afterwards.
		model, _ = r.model(DirectModelID)
	}
	var emitMu sync.Mutex
	emitOne := func(e gateway.Event) { emitMu.Lock(); defer emitMu.Unlock(); emit(e) }

	turn := []gateway.Message{{Role: gateway.RoleUser, Content: req.Message}}
	defer func() {
		s := stop
		if err != nil {
			s = gateway.StopEndTurn // the turn failed: what there is of it is kept
		}
		t := gateway.Turn{Messages: turn, StopReason: s}
		if req.CallerHistory {
			if req.OnTurn != nil {
				req.OnTurn(t)
			}
			return
		}
		// The turn is kept even when ctx was cancelled.
		r.opts.History.Append(context.WithoutCancel(ctx), req.SessionKey, t)
	}()
	past := func() []gateway.Message {
		if req.CallerHistory {
			return req.History.Messages
		}
		return r.opts.History.View(ctx, req.SessionKey).Messages
	}
	// A provider that reads only this turn (Direct) gets no history: copying
	// the whole history into each request cost O(session length) per /call.
	_, turnOnly := model.Provider.(turnOnlyProvider)

	for range r.opts.MaxTurnRequests {
		all := slices.Concat(r.opts.Tools, r.registry.Tools(req.SessionKey))
		offered := slices.DeleteFunc(slices.Clone(all), func(t *gateway.Tool) bool { return r.opts.Permissions.Decide(t) == DecisionDeny })
		msgs := turn
		if !turnOnly {
			msgs = slices.Concat(past(), turn)
		}
		preq := &gateway.Request{System: req.System, Messages: msgs, Tools: offered}
		resp, err := model.Provider.Complete(ctx, preq, emitOne)
		if ctx.Err() != nil {
			if resp != nil && len(resp.Message.Content) > 0 {
				resp.Message.Role = gateway.RoleAssistant
				resp.Message.ToolCalls = nil // not run: the turn was cancelled
				turn = append(turn, resp.Message)
			}
			return gateway.StopCancelled, nil
		}
		if err != nil {
			var pe *provider.Error
			if errors.As(err, &pe) { // it names the provider already
				return "", err
			}
			return "", fmt.Errorf("%s: %w", model.Provider.Name(), err)
		}
		resp.Message.Role = gateway.RoleAssistant
		if len(resp.Message.ToolCalls) > 0 {
			r.callIDs.unique(req.SessionKey, resp.Message.ToolCalls, past(), turn, r.opts.Logger)
		}
		if len(resp.Message.Content) > 0 || len(resp.Message.ToolCalls) > 0 {
			turn = append(turn, resp.Message)
		}
		if len(resp.Message.ToolCalls) == 0 {
			if resp.StopReason == "" {
				return gateway.StopEndTurn, nil
			}
			return resp.StopReason, nil
		}
		turn = append(turn, r.runCalls(ctx, req, all, resp.Message.ToolCalls, emitOne)...)
		if ctx.Err() != nil {
			return gateway.StopCancelled, nil
		}
	}
	return gateway.StopMaxTurnRequests, nil
}

// NewToolCallID returns a fresh random tool call ID: "call_" and 16 hex
// digits.
func NewToolCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "call_" + hex.EncodeToString(b[:])
}

// pendingCall is one tool call between its permission check and its run.
type pendingCall struct {
	call gateway.ToolCall
	tool *gateway.Tool // nil: unknown
	ev   gateway.ToolCallEvent
	res  *gateway.Result // the outcome; set before the run when the call will not run
	// started: announced in_progress (the response runs at once), so the
	// run reports no separate in_progress.
	started bool
}

// runCalls runs the tool calls of one model response: first, in order, each
// is announced (tool_call) and checked against the permissions policy,
// asking the user when needed; then the allowed ones run in parallel, at
// most ParallelTools at once. A call is announced pending and then reported
// in_progress when it starts, except when the whole response runs at once
// (no question to ask, no more calls than ParallelTools): then each is
// announced in_progress, one session/update fewer per call. It returns one
// tool message per call, in request order.
func (r *Runner) runCalls(ctx context.Context, req gateway.SendRequest, tools []*gateway.Tool, calls []gateway.ToolCall, emit func(gateway.Event)) []gateway.Message {
	pending := make([]*pendingCall, len(calls))
	for i, call := range calls {
		pending[i] = r.resolve(tools, call)
	}
	atOnce := len(calls) <= r.opts.ParallelTools && ctx.Err() == nil &&
		!slices.ContainsFunc(pending, func(p *pendingCall) bool { return p.res == nil && r.asks(req, p.tool) })
	for _, p := range pending {
		p.started = atOnce && p.res == nil
		r.announce(p, emit)
		if p.res == nil {
			r.permit(ctx, req, p)
		}
		if p.res != nil { // it will not run: unknown, denied, declined, cancelled
			finish(p, emit)
		}
	}
	var g errgroup.Group
	g.SetLimit(r.opts.ParallelTools)
	for _, p := range pending {
		if p.res == nil {
			g.Go(func() error { r.execute(ctx, p, emit); return nil })
		}
	}
	_ = g.Wait()
	msgs := make([]gateway.Message, len(pending))
	for i, p := range pending {
		msgs[i] = gateway.Message{Role: gateway.RoleTool, ToolCallID: p.call.ID, ToolName: p.call.Name, ToolTitle: p.ev.Title, ToolKind: p.ev.Kind, Result: p.res}
	}
	return msgs
}

// resolve finds the tool of call, fills its event and resolves what needs
// no question: an unknown tool, a denied one.
func (r *Runner) resolve(tools []*gateway.Tool, call gateway.ToolCall) *pendingCall {
	if call.Args == nil {
		call.Args = map[string]any{}
	}
	p := &pendingCall{call: call}
	if j := slices.IndexFunc(tools, func(t *gateway.Tool) bool { return t.Name == call.Name }); j >= 0 {
		p.tool = tools[j]
	}
	p.ev = gateway.ToolCallEvent{ID: call.ID, Name: call.Name, Title: call.Name, Kind: gateway.ToolKindOther, RawInput: call.Args, Status: gateway.ToolPending}
	if p.tool != nil {
		p.ev.Title = p.tool.Title()
		switch {
		case p.tool.Kind != "":
			p.ev.Kind = p.tool.Kind
		case p.tool.Annotations.ReadOnlyHint:
			p.ev.Kind = gateway.ToolKindRead
		}
	}
	switch {
	case p.tool == nil:
		p.res = ptr(gateway.ErrorResult(fmt.Sprintf("unknown tool %s; /tools lists them", call.Name)))
	case r.opts.Permissions.Decide(p.tool) == DecisionDeny:
		p.res = ptr(gateway.ErrorResult(deniedText(call.Name)))
	}
	return p
}

// announce emits the ToolStart of p: pending, or in_progress when it starts
// at once.
func (r *Runner) announce(p *pendingCall, emit func(gateway.Event)) {
	e := p.ev
	if p.started {
		e.Status = gateway.ToolInProgress
	}
	emit(gateway.Event{Kind: gateway.EventToolStart, Call: &e})
}

// asks reports whether running tool would ask the user first.
func (r *Runner) asks(req gateway.SendRequest, tool *gateway.Tool) bool {
	return r.opts.Permissions.Decide(tool) == DecisionAsk && !r.grants.allowed(req.SessionKey, tool.Name) && req.Ask != nil
}

// permit applies the permissions policy to p, asking the user when the
// policy says so and no "allow always" answer covers the tool.
func (r *Runner) permit(ctx context.Context, req gateway.SendRequest, p *pendingCall) {
	if ctx.Err() != nil {
		p.res = ptr(gateway.ErrorResult("cancelled before it started"))
		return
	}
	if !r.asks(req, p.tool) {
		return
	}
	outcome, err := req.Ask(ctx, gateway.PermissionRequest{Call: p.ev})
	switch {
	case err != nil || outcome == gateway.PermissionCancelled || ctx.Err() != nil:
		if err != nil && ctx.Err() == nil {
			r.opts.Logger.Warn("permission request failed", "tool", p.tool.Name, "err", err)
		}
		p.res = ptr(gateway.ErrorResult("cancelled: the permission request was not answered"))
	case outcome == gateway.PermissionReject:
		p.res = ptr(gateway.ErrorResult(declinedText(p.tool.Name)))
	case outcome == gateway.PermissionUnavailable:
		p.res = ptr(gateway.ErrorResult(unaskedText(p.tool.Name)))
	case outcome == gateway.PermissionAllowAlways:
		r.grants.grant(req.SessionKey, p.tool.Name)
	}
}

// execute runs an allowed call, sets p.res and reports the call
// (in_progress, progress, end).
func (r *Runner) execute(ctx context.Context, p *pendingCall, emit func(gateway.Event)) {
	inProgress := p.ev
	inProgress.Status = gateway.ToolInProgress
	if !p.started {
		emit(gateway.Event{Kind: gateway.EventToolUpdate, Call: &inProgress})
	}
	onUpdate := func(u gateway.ToolUpdate) {
		e := inProgress
		e.Update = &u
		emit(gateway.Event{Kind: gateway.EventToolUpdate, Call: &e})
	}
	res, err := p.tool.Execute(ctx, p.call.ID, p.call.Args, onUpdate)
	switch {
	case err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)):
		res = gateway.ErrorResult("cancelled")
	case err != nil:
		r.opts.Logger.Warn("tool call failed", "tool", p.call.Name, "err", err)
		res = gateway.ErrorResult(err.Error())
	}
	p.res = &res
	finish(p, emit)
}

// finish emits the ToolEnd of p with its result.
func finish(p *pendingCall, emit func(gateway.Event)) {
	e := p.ev
	e.Status = gateway.ToolCompleted
	if p.res.IsError {
		e.Status = gateway.ToolFailed
	}
	e.Result = p.res
	emit(gateway.Event{Kind: gateway.EventToolEnd, Call: &e})
}

func ptr[T any](v T) *T { return &v }
