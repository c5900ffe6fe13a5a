package runner

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"golang.org/x/sync/errgroup"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/internal/audit"
	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
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
	// ResultBudget is the budget of one tool result that reaches the
	// model, in tokens (a tool's own MaxResultChars wins); a larger result
	// is cut, and read_tool_result pages through the rest. Zero or
	// negative means DefaultResultBudget.
	ResultBudget int
	// CompactAt is the share of the model's context window a request may
	// reach before the history is compacted; zero or out of (0, 1) means
	// DefaultCompactAt. KeepRecent is the share kept verbatim (the newest
	// messages); zero or out of [0, CompactAt) means DefaultKeepRecent.
	CompactAt, KeepRecent float64
	// Context says who keeps a long conversation within the window (see
	// context.go): "" means gateway.ContextAgent. A model whose provider
	// does not manage the strategy falls back to gateway.ContextAgent.
	Context gateway.ContextStrategy
	// ToolSearch says when tools are deferred behind search_tools; ""
	// means ToolSearchAuto. DeferTools and DeferShare are its thresholds
	// (more tools than DeferTools, or definitions over DeferShare of the
	// context window); zero means DefaultDeferTools and DefaultDeferShare.
	ToolSearch ToolSearch
	DeferTools int
	DeferShare float64
	// Observer, if set, is told of every model request, turn, tool call
	// and permission decision (metrics); it must not block.
	Observer gateway.Observer
	// Logger receives the runner's logs. Nil discards them.
	Logger *slog.Logger
	// Audit, if set, receives one record per tool call the runner settles
	// (audit.go); it must not block.
	Audit audit.Auditor
	// Subagents, if set, offers the model the task tool (task.go), which
	// hands a task to a subagent with a context of its own. Nil offers no
	// task tool.
	Subagents *Subagents
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
	calib    calibration // token estimates per session
	windows  windows     // context windows the providers reported
	// parents maps the key of a running child (a task's subagent) to its
	// parent's key: a child shares its parent's "allow always" answers.
	parents sync.Map
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
	if r.opts.ResultBudget <= 0 {
		r.opts.ResultBudget = DefaultResultBudget
	}
	if r.opts.CompactAt <= 0 || r.opts.CompactAt >= 1 {
		r.opts.CompactAt = DefaultCompactAt
	}
	if r.opts.KeepRecent <= 0 || r.opts.KeepRecent >= r.opts.CompactAt {
		r.opts.KeepRecent = min(DefaultKeepRecent, r.opts.CompactAt/2)
	}
	if !r.opts.Context.Valid() {
		r.opts.Context = gateway.ContextAgent
	}
	r.logContextFallbacks()
	if r.opts.ToolSearch == "" {
		r.opts.ToolSearch = ToolSearchAuto
	}
	if r.opts.DeferTools <= 0 {
		r.opts.DeferTools = DefaultDeferTools
	}
	if r.opts.DeferShare <= 0 {
		r.opts.DeferShare = DefaultDeferShare
	}
	if r.opts.Subagents != nil {
		r.opts.Subagents = r.opts.Subagents.withDefaults()
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
	r.calib.forget(sessionKey)
}

// turnOnlyProvider is a provider that reads only the running turn (Direct,
// which reads the turn's command): the runner passes it no history.
type turnOnlyProvider interface{ turnOnly() }

// turnState is one running turn: what the model sees, what the turn has
// added and used.
type turnState struct {
	req   gateway.SendRequest
	model gateway.Model
	// command is the turn's command for the direct provider
	// (gateway.Request.Command): req.Command when the direct provider runs
	// it, else nil.
	command *gateway.Command
	// view is what the model sees of the turns before this one; a
	// compaction during the turn replaces it.
	view gateway.View
	// turn are the turn's messages so far, the user message first; the
	// first hidden of them were compacted during the turn (the user message
	// is then in the compaction's Head).
	turn       []gateway.Message
	hidden     int
	usage      gateway.Usage
	compaction *gateway.Compaction // the last compaction of the turn, or nil
	// last is the usage of the turn's latest model request: its prompt and
	// output are what the context holds after the turn. A compaction after
	// it clears it and sets estimate, the compacted context's estimated
	// size, instead.
	last     gateway.Usage
	estimate int64
	// emit reports the turn's events, one at a time.
	emit func(gateway.Event)
	// run is how the turn runs: its history, tools and limits.
	run turnOptions
}

// turnOptions say how a turn runs: a prompt turn (Run) with the runner's
// options, or a subagent's (task.go) with its own.
type turnOptions struct {
	// history keeps the turn.
	history gateway.History
	// toolsKey is the session whose registry tools the turn offers (a
	// child's parent's); only, if set, keeps those it allows.
	toolsKey string
	only     func(*gateway.Tool) bool
	// maxRequests bounds the model requests; budget, when positive, the
	// tokens of the turn (StopMaxTokens once spent).
	maxRequests int
	budget      int64
	// child: a subagent's turn (no task tool: one level deep).
	child bool
}

// used is how many tokens the model's context holds after the turn: the
// last request's prompt and output as the provider counted them, or the
// estimate of a context compacted since.
func (t *turnState) used() int64 {
	if n := t.last.PromptTokens() + t.last.OutputTokens; n > 0 {
		return n
	}
	return t.estimate
}

// messages are all the messages the model sees, verbatim: the view's and
// the turn's so far.
func (t *turnState) messages() []gateway.Message {
	return slices.Concat(t.view.Messages, t.turn[t.hidden:])
}

// Run runs one prompt turn: the user message, then model requests and the
// tool calls they ask for, until the model ends the turn. Every step reaches
// emit in order, one event at a time. The turn's messages are added to the
// session's history when it ends, whatever the reason, with every tool call
// answered, so the next turn can follow. A turn that asked a model ends
// with an EventUsage. Before a request would pass Options.CompactAt of the
// model's context window, or when the provider refuses a prompt as too
// long (then the request is retried once), the history is compacted (see
// [SummaryMessage]) and an EventCompaction reports it.
//
// When ctx is cancelled, Run returns StopCancelled and a nil error. A failing
// tool never ends the turn: its failure goes back to the model as an error
// result. An error is returned only when the model (provider) fails, or
// when the history cannot keep the finished turn (gateway.History.Append):
// Run returns once the turn is kept, so a prompt answered is a turn stored.
func (r *Runner) Run(ctx context.Context, req gateway.SendRequest, emit func(gateway.Event)) (stop gateway.StopReason, err error) {
	return r.run(ctx, req, emit, turnOptions{history: r.opts.History, toolsKey: req.SessionKey, maxRequests: r.opts.MaxTurnRequests})
}

// run runs one turn as Run says, as o says.
func (r *Runner) run(ctx context.Context, req gateway.SendRequest, emit func(gateway.Event), o turnOptions) (stop gateway.StopReason, err error) {
	model, err := r.model(req.Model)
	if err != nil {
		return "", err
	}
	// The turn's command, typed by the front end (gateway.Command): the
	// runner never reads the message's text for one.
	cmd, direct, isCmd := command(req.Command)
	if o.child { // a task's prompt is the model's text, never a command
		isCmd = false
	}
	var directCmd *gateway.Command
	if isCmd && direct {
		// Slash commands work whatever the model: the direct provider runs
		// them (and says an unknown one is unknown), and the model sees
		// them in the history afterwards.
		model, _ = r.model(DirectModelID)
		directCmd = req.Command
	}
	model.ContextWindow = r.windows.of(ctx, model, r.opts.Logger)
	// t.model below, not model: a refusal may teach the turn the window.
	var emitMu sync.Mutex
	t := &turnState{
		req: req, model: model, command: directCmd,
		turn: []gateway.Message{{Role: gateway.RoleUser, Content: req.Message}},
		emit: func(e gateway.Event) { emitMu.Lock(); defer emitMu.Unlock(); emit(e) },
		run:  o,
	}
	t.view = o.history.View(ctx, req.SessionKey)
	if obs := r.opts.Observer; obs != nil && !o.child {
		start := time.Now()
		defer func() { obs.TurnEnded(t.model.ID, stop, time.Since(start), err) }()
	}
	defer func() {
		s := stop
		if err != nil {
			s = gateway.StopEndTurn // the turn failed: what there is of it is kept
		}
		if t.usage.Requests > 0 {
			t.emit(gateway.Event{Kind: gateway.EventUsage, Usage: &gateway.UsageReport{
				Turn: t.usage, Session: t.view.Usage.Add(t.usage),
				Used: t.used(), Size: t.model.ContextWindow,
			}})
		}
		done := gateway.Turn{Messages: t.turn, StopReason: s, Usage: t.usage, Compaction: t.compaction}
		// The turn is kept even when ctx was cancelled. One that cannot be
		// kept fails the prompt, since the conversation goes on without it;
		// a cancelled prompt still answers cancelled (ACP session/cancel).
		if aerr := o.history.Append(context.WithoutCancel(ctx), req.SessionKey, done); aerr != nil {
			// The History logs it; the front end logs the failed turn.
			if err == nil && stop != gateway.StopCancelled {
				stop, err = "", fmt.Errorf("%w: %w", gateway.ErrTurnNotStored, aerr)
			}
		}
	}()
	if isCmd && cmd.Runner {
		return r.runCommand(ctx, t, cmd)
	}
	// A provider that reads only this turn (Direct) gets no history: copying
	// the whole history into each request cost O(session length) per /call.
	_, turnOnly := model.Provider.(turnOnlyProvider)

	for range o.maxRequests {
		preq, tools := r.request(t, turnOnly)
		if !turnOnly && r.overThreshold(t, preq) {
			if r.compact(ctx, t, preq, "threshold") == nil {
				preq, tools = r.request(t, turnOnly)
			}
		}
		resp, err := r.complete(ctx, t, preq)
		if err != nil && !turnOnly && errors.Is(err, provider.ErrPromptTooLong) && ctx.Err() == nil {
			// Over the window after all (the estimate was short, or the
			// window unknown or set too large): learn the window the
			// provider named, compact and try once more.
			var pe *provider.Error
			if errors.As(err, &pe) && pe.Limit > 0 && (t.model.ContextWindow == 0 || pe.Limit < t.model.ContextWindow) {
				t.model.ContextWindow = r.windows.learn(t.model.ID, pe.Limit, r.opts.Logger)
			}
			if cerr := r.compact(ctx, t, preq, "too_long"); cerr == nil {
				preq, tools = r.request(t, turnOnly)
				resp, err = r.complete(ctx, t, preq)
			}
		}
		if ctx.Err() != nil {
			if resp != nil && len(resp.Message.Content) > 0 {
				resp.Message.Role = gateway.RoleAssistant
				resp.Message.ToolCalls = nil // not run: the turn was cancelled
				t.turn = append(t.turn, resp.Message)
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
		if len(resp.Message.ToolCalls) > 0 && o.budget > 0 && t.usage.TotalTokens() >= o.budget {
			// A subagent out of tokens: its calls are not run, and what it
			// said so far is its answer.
			resp.Message.ToolCalls = nil
			if len(resp.Message.Content) > 0 {
				t.turn = append(t.turn, resp.Message)
			}
			return gateway.StopMaxTokens, nil
		}
		if len(resp.Message.ToolCalls) > 0 {
			r.callIDs.unique(req.SessionKey, resp.Message.ToolCalls, t.view.Messages, t.turn, r.opts.Logger)
		}
		if len(resp.Message.Content) > 0 || len(resp.Message.ToolCalls) > 0 {
			t.turn = append(t.turn, resp.Message)
		}
		if len(resp.Message.ToolCalls) == 0 {
			if resp.StopReason == "" {
				return gateway.StopEndTurn, nil
			}
			return resp.StopReason, nil
		}
		results := r.runCalls(ctx, req, tools, resp.Message.ToolCalls, t.emit)
		for _, m := range results { // a subagent's usage is the turn's too
			if m.Result != nil && m.Result.Subagent != nil {
				t.usage = t.usage.Add(m.Result.Subagent.Turn.Usage)
			}
		}
		t.turn = append(t.turn, results...)
		if ctx.Err() != nil {
			return gateway.StopCancelled, nil
		}
	}
	return gateway.StopMaxTurnRequests, nil
}

// complete sends preq to the turn's model and counts what it used. A model
// request (not the direct provider's) is traced as a span of its own, a
// child of the turn's (telemetry.StartModelRequest).
func (r *Runner) complete(ctx context.Context, t *turnState, preq *gateway.Request) (resp *gateway.Response, err error) {
	if t.model.ID != DirectModelID {
		var span trace.Span
		ctx, span = startModelSpan(ctx, t) // observe.go
		defer func() { endModelSpan(span, resp, err) }()
	}
	start := time.Now()
	resp, err = t.model.Provider.Complete(ctx, preq, t.emit)
	var u gateway.Usage
	if resp != nil && resp.Usage.Requests > 0 {
		u = r.priced(t.model, resp.Usage)
		t.usage = t.usage.Add(u)
		if sc := resp.Message.ServerCompaction; sc != nil {
			r.serverCompacted(t, preq, sc)
		} else {
			t.last = u
			floor := minRatio
			if preq.Context != nil && preq.Context.Strategy == gateway.ContextClearToolUses {
				floor = minClearedRatio // the provider cleared part of the estimate
			}
			r.calib.observe(t.req.SessionKey, requestTokens(preq), u.PromptTokens(), floor)
		}
	}
	if r.opts.Observer != nil {
		r.opts.Observer.ModelRequest(t.model.ID, u, time.Since(start), err)
	}
	return resp, err
}

// priced returns u with its cost at model's prices, or counted unpriced.
func (r *Runner) priced(model gateway.Model, u gateway.Usage) gateway.Usage {
	if u.Requests == 0 {
		return u
	}
	if model.Pricing != nil {
		u.Cost = model.Pricing.Cost(u)
	} else {
		u.Unpriced = u.Requests
	}
	return u
}

// request builds the turn's next model request and returns it with the
// tools a call may name (the session's tools and the runner's own).
// The messages are what the model sees (the compaction's summary, then
// every message verbatim but tool results cut to their budget); the tools
// are the allowed ones, or, when they are deferred, the core ones,
// search_tools and those loaded, with read_tool_result last once a result
// was cut.
func (r *Runner) request(t *turnState, turnOnly bool) (*gateway.Request, []*gateway.Tool) {
	all := slices.Concat(r.opts.Tools, r.registry.Tools(t.run.toolsKey))
	if t.run.only != nil {
		all = slices.DeleteFunc(all, func(tl *gateway.Tool) bool { return !t.run.only(tl) })
	}
	if r.opts.Subagents != nil && !t.run.child {
		all = append(all, r.taskTool(t))
	}
	allowed := slices.DeleteFunc(slices.Clone(all), func(tl *gateway.Tool) bool { return r.opts.Permissions.Decide(tl) == DecisionDeny })
	preq := &gateway.Request{System: t.req.System, CacheKey: cacheKey(t.req.SessionKey), Thinking: t.req.Toggles.Thinking, Command: t.command}
	if turnOnly {
		preq.Messages, preq.Tools = t.turn, allowed
		return preq, all
	}
	msgs := t.messages()
	preq.Messages = r.modelMessages(msgs, allowed)
	if c := t.view.Compaction; c != nil {
		preq.Messages = slices.Concat([]gateway.Message{SummaryMessage(c)}, c.Head, preq.Messages)
	}
	var offered []*gateway.Tool
	tools := all // a call may name any: a denied one is refused by name
	if r.deferring(allowed, t.model.ContextWindow, t.req.Toggles.ToolSearch) {
		var deferred []*gateway.Tool
		for _, tl := range allowed {
			if tl.Core {
				offered = append(offered, tl)
			} else {
				deferred = append(deferred, tl)
			}
		}
		search := searchTool(func() []*gateway.Tool { return deferred })
		offered = append(offered, search)
		tools = append(tools, search)
		for _, name := range loadedTools(t.view.Compaction, msgs) {
			if i := slices.IndexFunc(deferred, func(tl *gateway.Tool) bool { return tl.Name == name }); i >= 0 {
				offered = append(offered, deferred[i])
			}
		}
	} else {
		offered = slices.Clone(allowed)
	}
	if r.anyCut(msgs, allowed) {
		read := readResultTool(t.messages, r.opts.ResultBudget*bytesPerToken*9/10)
		offered = append(offered, read)
		tools = append(tools, read)
	}
	preq.Tools = offered
	preq.Context = r.contextManagement(t.model, preq.Messages)
	return preq, tools
}

// cacheKey is the prompt cache key of a session: a hash of its key, so the
// provider learns nothing of it.
func cacheKey(sessionKey string) string {
	sum := sha256.Sum256([]byte(sessionKey))
	return "acp-agent-" + hex.EncodeToString(sum[:12])
}

// modelMessages returns msgs as the model sees them: tool results cut to
// their budget (tools are the session's, for their own budgets).
func (r *Runner) modelMessages(msgs []gateway.Message, tools []*gateway.Tool) []gateway.Message {
	out := make([]gateway.Message, len(msgs))
	for i, m := range msgs {
		if m.Role == gateway.RoleTool && m.Result != nil {
			if res, cut := budgeted(m.Result, r.resultLimit(findTool(tools, m.ToolName)), m.ToolCallID); cut {
				m.Result = res
			}
		}
		out[i] = m
	}
	return out
}

// anyCut reports whether a tool result of msgs is over its budget.
func (r *Runner) anyCut(msgs []gateway.Message, tools []*gateway.Tool) bool {
	for _, m := range msgs {
		if m.Role == gateway.RoleTool && m.Result != nil && contentTokens(m.Result.Content) > r.resultLimit(findTool(tools, m.ToolName)) {
			return true
		}
	}
	return false
}

// findTool returns the tool of tools named name, or nil.
func findTool(tools []*gateway.Tool, name string) *gateway.Tool {
	if i := slices.IndexFunc(tools, func(t *gateway.Tool) bool { return t.Name == name }); i >= 0 {
		return tools[i]
	}
	return nil
}

// overThreshold reports whether preq would pass Options.CompactAt of the
// model's context window (by the session's calibrated estimate).
func (r *Runner) overThreshold(t *turnState, preq *gateway.Request) bool {
	window := t.model.ContextWindow
	if window <= 0 {
		return false
	}
	return float64(r.calib.scale(t.req.SessionKey, requestTokens(preq))) > r.opts.CompactAt*float64(window)
}

// compact compacts the turn's view of the conversation for preq: the older
// messages become a summary, and the newest (Options.KeepRecent of the
// window) stay, the running turn's as a rule. A turn larger than that is cut
// too, after its user message, which the model keeps seeing (the
// compaction's Head). It reports each step as an EventCompaction: the
// start, the summary as the model writes it, then the end (completed,
// failed, or cancelled with ctx); errNothingToCompact is not reported.
func (r *Runner) compact(ctx context.Context, t *turnState, preq *gateway.Request, reason string) error {
	msgs := t.messages()
	keep := int64(r.opts.KeepRecent * float64(t.model.ContextWindow))
	if t.model.ContextWindow <= 0 {
		keep = messagesTokens(msgs) / 4
	}
	if reason == "command" {
		keep = 0
	}
	k := cutPoint(msgs, keep)
	if k == 0 {
		return errNothingToCompact
	}
	var head []gateway.Message
	if k > len(t.view.Messages) || t.hidden > 0 {
		head = t.turn[:1] // the turn's user message stays in view
	}
	before := r.calib.scale(t.req.SessionKey, requestTokens(preq))
	id := newCompactionID()
	report := func(rep gateway.CompactionReport) {
		rep.ID, rep.Reason = id, reason
		t.emit(gateway.Event{Kind: gateway.EventCompaction, Compaction: &rep})
	}
	report(gateway.CompactionReport{Status: gateway.CompactionInProgress, Before: before})
	streamed := false
	summary, usage, err := r.summarize(ctx, t.model, preq, t.view.Compaction, msgs[:k], func(delta string) {
		streamed = true
		report(gateway.CompactionReport{Status: gateway.CompactionInProgress, Delta: delta})
	})
	t.usage = t.usage.Add(usage)
	if err != nil {
		r.opts.Logger.Warn("compaction failed", "session", t.req.SessionKey, "reason", reason, "err", err)
		if ctx.Err() != nil {
			report(gateway.CompactionReport{Status: gateway.CompactionCancelled, Before: before})
		} else {
			report(gateway.CompactionReport{Status: gateway.CompactionFailed, Before: before, Err: gateway.ErrorText(err)})
		}
		return err
	}
	if !streamed {
		report(gateway.CompactionReport{Status: gateway.CompactionInProgress, Delta: summary})
	}
	c := &gateway.Compaction{Summary: summary, From: t.view.Base + k, Loaded: loadedTools(t.view.Compaction, msgs[:k]), Head: head}
	if n := len(t.view.Messages); k > n {
		t.hidden += k - n
		t.view.Messages = nil
	} else {
		t.view.Messages = slices.Clone(t.view.Messages[k:])
	}
	t.view = gateway.View{Compaction: c, Messages: t.view.Messages, Base: c.From, Usage: t.view.Usage}
	t.compaction = c
	after, _ := r.request(t, false)
	rep := gateway.CompactionReport{Status: gateway.CompactionCompleted, Summary: summary, Before: before, After: r.calib.scale(t.req.SessionKey, requestTokens(after))}
	t.last, t.estimate = gateway.Usage{}, rep.After
	r.opts.Logger.Info("history compacted", "session", t.req.SessionKey, "reason", reason, "before", rep.Before, "after", rep.After)
	report(rep)
	return nil
}

// newCompactionID returns a fresh random compaction ID: "compaction_" and
// 16 hex digits.
func newCompactionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "compaction_" + hex.EncodeToString(b[:])
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
	// For the audit log (observe.go): perm is what allowed or stopped the
	// call; ran, that Execute was called; cancelled, that the run was
	// cancelled; began and ended, when it was announced and settled.
	perm           audit.Permission
	ran, cancelled bool
	began, ended   time.Time
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
		pending[i] = r.resolve(req, tools, call)
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
			r.refused(p)
			finish(p, emit)
		}
	}
	var run []*pendingCall
	for _, p := range pending {
		if p.res == nil {
			run = append(run, p)
		}
	}
	if len(run) == 1 { // on this goroutine: a new one grows its stack through the call again
		r.execute(ctx, run[0], emit)
	} else {
		var g errgroup.Group
		g.SetLimit(r.opts.ParallelTools)
		for _, p := range run {
			g.Go(func() error { r.execute(ctx, p, emit); return nil })
		}
		_ = g.Wait()
	}
	msgs := make([]gateway.Message, len(pending))
	for i, p := range pending {
		r.auditCall(req, p)
		msgs[i] = gateway.Message{Role: gateway.RoleTool, ToolCallID: p.call.ID, ToolName: p.call.Name, ToolTitle: p.ev.Title, ToolKind: p.ev.Kind, Result: p.res}
	}
	return msgs
}

// resolve finds the tool of call, fills its event and resolves what needs
// no question: an unknown tool, a denied one.
func (r *Runner) resolve(req gateway.SendRequest, tools []*gateway.Tool, call gateway.ToolCall) *pendingCall {
	if call.Args == nil {
		call.Args = map[string]any{}
	}
	p := &pendingCall{call: call, began: time.Now(), perm: audit.PermissionPolicyAllow}
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
	// The title reaches the editor: a model's or a server's text (a path,
	// an unknown tool's name) made one visible line.
	p.ev.Title = textsafe.Line(p.ev.Title, gateway.MaxToolTitle)
	switch {
	case p.tool == nil:
		p.res = ptr(gateway.ErrorResult(fmt.Sprintf("unknown tool %s; /tools lists them", call.Name)))
		p.perm = audit.PermissionUnknownTool
	case !ownTool(p.tool) && r.opts.Permissions.Decide(p.tool) == DecisionDeny:
		p.res = ptr(gateway.ErrorResult(deniedText(call.Name)))
		r.decided("deny")
		p.perm = audit.PermissionPolicyDeny
	case req.ReadOnly && !ownTool(p.tool) && !p.tool.Annotations.ReadOnlyHint && !p.tool.Confined:
		// The tool stays offered in read-only mode: a mode switch must not
		// change the tool definitions, the cached prefix of every request.
		p.res = ptr(gateway.ErrorResult(readOnlyText(call.Name)))
		r.decided("read_only")
		p.perm = audit.PermissionModeDeny
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
	return !ownTool(tool) && r.opts.Permissions.Decide(tool) == DecisionAsk && !r.grants.allowed(r.grantKey(req.SessionKey), tool.Name) && req.Ask != nil
}

// permit applies the permissions policy to p, asking the user when the
// policy says so and no "allow always" answer covers the tool.
func (r *Runner) permit(ctx context.Context, req gateway.SendRequest, p *pendingCall) {
	if ctx.Err() != nil {
		p.res = ptr(gateway.ErrorResult("cancelled before it started"))
		p.cancelled = true
		return
	}
	if !r.asks(req, p.tool) {
		if !ownTool(p.tool) {
			ask := r.opts.Permissions.Decide(p.tool) == DecisionAsk
			granted := r.grants.allowed(r.grantKey(req.SessionKey), p.tool.Name)
			if granted && ask {
				r.decided("granted")
			} else {
				r.decided("allow")
			}
			if ask {
				p.perm = audit.PermissionNotAsked
				if granted {
					p.perm = audit.PermissionAllowedAlways
				}
			}
		}
		return
	}
	outcome, err := req.Ask(ctx, gateway.PermissionRequest{Call: p.ev})
	switch {
	case err != nil || outcome == gateway.PermissionCancelled || ctx.Err() != nil:
		if err != nil && ctx.Err() == nil {
			r.opts.Logger.Warn("permission request failed", "tool", p.tool.Name, "err", err)
		}
		p.res = ptr(gateway.ErrorResult("cancelled: the permission request was not answered"))
		outcome = gateway.PermissionCancelled
		p.perm = audit.PermissionCancelled
	case outcome == gateway.PermissionReject:
		p.res = ptr(gateway.ErrorResult(declinedText(p.tool.Name)))
		p.perm = audit.PermissionRejected
	case outcome == gateway.PermissionUnavailable:
		p.res = ptr(gateway.ErrorResult(unaskedText(p.tool.Name)))
		p.perm = audit.PermissionUnavailable
	case outcome == gateway.PermissionAllowAlways:
		r.grants.grant(r.grantKey(req.SessionKey), p.tool.Name)
		p.perm = audit.PermissionAllowAlways
	default:
		p.perm = audit.PermissionAllowOnce
	}
	r.decided(outcome.String())
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
	start := time.Now()
	p.ran = true
	res, err := p.tool.Execute(ctx, p.call.ID, p.call.Args, onUpdate)
	took := time.Since(start)
	switch {
	case err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)):
		res = gateway.ErrorResult("cancelled")
		p.cancelled = true
	case err != nil:
		r.opts.Logger.Warn("tool call failed", "tool", p.call.Name, "err", err)
		res = gateway.ErrorResult(gateway.ErrorText(err))
	}
	p.res = &res
	if r.opts.Observer != nil {
		outcome := "ok"
		if res.IsError {
			outcome = "error"
		}
		r.opts.Observer.ToolCallEnded(p.tool.Group, p.call.Name, outcome, took)
	}
	finish(p, emit)
}

// decided tells the Observer of a permission decision.
func (r *Runner) decided(decision string) {
	if r.opts.Observer != nil {
		r.opts.Observer.PermissionDecided(decision)
	}
}

// refused tells the Observer of a call that will not run.
func (r *Runner) refused(p *pendingCall) {
	if r.opts.Observer == nil {
		return
	}
	server, tool := "", ""
	if p.tool != nil {
		server, tool = p.tool.Group, p.call.Name
	}
	r.opts.Observer.ToolCallEnded(server, tool, "refused", 0)
}

// finish emits the ToolEnd of p with its result.
func finish(p *pendingCall, emit func(gateway.Event)) {
	p.ended = time.Now()
	e := p.ev
	e.Status = gateway.ToolCompleted
	if p.res.IsError {
		e.Status = gateway.ToolFailed
	}
	e.Result = p.res
	emit(gateway.Event{Kind: gateway.EventToolEnd, Call: &e})
}

func ptr[T any](v T) *T { return &v }

// ownTool reports whether t is one of the runner's own tools (search_tools,
// read_tool_result: read-only views of the conversation; task, whose
// child's calls are asked about one by one), outside the permissions
// policy.
func ownTool(t *gateway.Tool) bool {
	return t.Core && (t.Name == SearchToolName || t.Name == ReadResultToolName || t.Name == gateway.TaskToolName) && t.Group == ""
}

// grantKey is the session whose "allow always" answers cover the calls of
// session key: its parent's for a running subagent, else its own.
func (r *Runner) grantKey(key string) string {
	if p, ok := r.parents.Load(key); ok {
		return p.(string)
	}
	return key
}
