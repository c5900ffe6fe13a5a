package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/telemetry"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// Input is the arguments of ask_agent.
type Input struct {
	// Message is the user's prompt, passed to the agent unmodified.
	Message string `json:"message" jsonschema:"the task or question for the agent, passed unmodified as the user's message; the slash commands /help, /tools, /call <tool> {json arguments} and /servers work without a model"`
	// SessionKey names the conversation: "" starts a new one under a key
	// the agent issues; any other key (CheckKey) continues the
	// conversation of that key, or starts it on its first use.
	SessionKey string `json:"sessionKey,omitempty" jsonschema:"the conversation: pass the sessionKey of an earlier result, or a key of your own (1 to 128 visible ASCII characters, such as user-123-conversation), to continue that conversation with its history (a key's first use starts it); leave it out to start a new conversation under a fresh unguessable key"`
}

// Output is the structuredContent of an ask_agent result.
type Output struct {
	// Answer is the agent's answer: the text of the turn (for a slash
	// command, its output).
	Answer string `json:"answer" jsonschema:"the agent's answer"`
	// SessionKey continues this conversation in a later call.
	SessionKey string `json:"sessionKey" jsonschema:"pass it back as sessionKey to continue this conversation"`
	// StopReason says why the turn ended: end_turn, max_tokens,
	// max_turn_requests, refusal or cancelled (ACP's stop reasons).
	StopReason string `json:"stopReason" jsonschema:"why the turn ended: end_turn, max_tokens, max_turn_requests, refusal or cancelled"`
	// ToolCalls are the tool calls the agent made during the turn, in order.
	ToolCalls []ToolCall `json:"toolCalls" jsonschema:"the tool calls the agent made during the turn, in order"`
}

// ToolCall is one tool call of a turn.
type ToolCall struct {
	// Name is the tool's name as the agent's model sees it
	// ("mcp__<server>__<tool>").
	Name string `json:"name" jsonschema:"the tool's name"`
	// Status is completed or failed (pending or in_progress if the turn
	// ended first).
	Status string `json:"status" jsonschema:"completed or failed (pending or in_progress if the turn ended first)"`
}

// ask is ask_agent's handler. A call with a requestState resumes a run
// parked on a permission question (multi round-trip requests); any other
// call opens (or finds) the conversation and starts a turn.
func (sv *conversations) ask(ctx context.Context, req *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, *Output, error) {
	client := clientOf(req)
	if state := req.Params.RequestState; state != "" {
		r, err := sv.resume(ctx, req, state, client, in.SessionKey, req.Params.InputResponses)
		if err != nil {
			return nil, nil, err
		}
		return r.wait(ctx, req)
	}
	key, fresh := in.SessionKey, in.SessionKey == ""
	if fresh {
		key = newKey()
	} else if err := CheckKey(key); err != nil {
		return nil, nil, err
	}
	id := storedID(client, key)
	// The message is classified once (session.Classify): a command runs
	// without a model; the turn routes on the same Input.
	cls := session.Classify(in.Message)
	if sv.core.DefaultModel() == runner.DirectModelID && !cls.IsCommand() {
		// Refused before a new conversation is stored: one the client
		// names is new when the store has none under its key.
		if fresh {
			return nil, nil, errNoModel
		}
		if _, err := sv.core.Store().Get(ctx, id); errors.Is(err, store.ErrNotFound) {
			return nil, nil, errNoModel
		}
	}
	for attempt := 1; ; attempt++ {
		c, err := sv.acquire(ctx, id, key, fresh)
		if err != nil {
			// The client sees the error's text only: the remedy with it.
			return nil, nil, errors.New(gateway.ErrorText(err))
		}
		fresh = false // stored now: a second attempt reopens it
		if c.s.Model() == runner.DirectModelID && !cls.IsCommand() {
			sv.release(c)
			return nil, nil, errNoModel
		}
		r, err := sv.start(ctx, c, client, key, in.SessionKey, in.Message, cls, req)
		if err != nil {
			sv.release(c)
			return nil, nil, err
		}
		res, out, err := r.wait(ctx, req)
		if errors.Is(err, session.ErrEnded) && in.SessionKey != "" && attempt == 1 {
			// The session ended under the conversation (the core closed
			// it) before the turn began: reopen it once.
			continue
		}
		return res, out, err
	}
}

// run is one ask_agent turn. It runs in its own goroutine (owned by the
// server's WaitGroup), so that it can outlive one request while the client
// answers a permission question in a retried call.
type run struct {
	sv      *conversations
	c       *conv
	client  string // the identity of the client that started it (clientOf)
	key     string // the conversation's sessionKey
	inKey   string // the sessionKey argument of the call that started it
	message string
	input   session.Input // message as session.Classify read it, once
	mode    askMode
	cancel  context.CancelFunc
	done    chan struct{}  // closed when the turn has returned
	asks    chan *question // the turn's permission questions, to the waiting handler

	// set before done is closed
	stop gateway.StopReason
	err  error

	span trace.Span // the turn's (telemetry.StartTurn)

	// mu guards the fields below.
	mu       sync.Mutex
	answer   strings.Builder
	calls    []ToolCall
	callIdx  map[string]int // index in calls by tool call ID
	refused  []string       // notes on calls refused without asking
	sink     *requestSink   // the request waiting for the run; nil while none waits
	progress float64
}

// requestSink is the request a run reports progress and log messages to.
type requestSink struct {
	ctx   context.Context // the request's: it carries a 2026-07-28 request's logLevel
	ss    *mcp.ServerSession
	token any // the progress token; nil: no progress
}

// start starts the turn of message (classified as input) in c, the
// conversation key of client, asked for with the sessionKey argument
// inKey, reporting to req (whose context is reqCtx) from its first event;
// the run releases c when it ends.
func (sv *conversations) start(reqCtx context.Context, c *conv, client, key, inKey, message string, input session.Input, req *mcp.CallToolRequest) (*run, error) {
	// The turn is a span of the caller's trace when its request's _meta
	// carries one (telemetry.Extract), ended by run.
	base := sv.base
	if sc := trace.SpanContextFromContext(telemetry.Extract(context.Background(), req.Params.Meta)); sc.IsValid() {
		base = trace.ContextWithRemoteSpanContext(base, sc)
	}
	tctx, span := telemetry.StartTurn(base, c.s.ID())
	ctx, cancel := context.WithCancel(tctx)
	r := &run{
		sv: sv, c: c, client: client, key: key, message: message, input: input, inKey: inKey, mode: askModeOf(req), cancel: cancel,
		done: make(chan struct{}), asks: make(chan *question), callIdx: make(map[string]int), span: span,
	}
	// Before the turn starts: a quick turn (a /call) emits its events
	// before the caller's wait could attach, and they would not reach it.
	r.attach(reqCtx, req)
	sv.mu.Lock()
	closed := sv.closed
	if !closed {
		sv.wg.Add(1)
		sv.turns.Go(func() {
			defer sv.wg.Done()
			r.run(ctx)
		})
	}
	sv.mu.Unlock()
	if closed {
		cancel()
		span.End()
		return nil, errClosed
	}
	return r, nil
}

// run runs the turn and closes r.done.
func (r *run) run(ctx context.Context) {
	defer close(r.done)
	defer func() { telemetry.EndTurn(r.span, string(r.stop), r.err) }()
	defer r.cancel()
	defer r.sv.release(r.c)
	s := r.c.s
	if r.input.Kind == session.InputFrontEnd {
		r.stop, r.err = s.Turn(ctx, func(ctx context.Context) (gateway.StopReason, error) {
			text := s.Answer(ctx, r.input)
			r.emit(gateway.Event{Kind: gateway.EventTextDelta, Text: text})
			return gateway.StopEndTurn, nil
		})
	} else {
		r.stop, r.err = s.Prompt(ctx, session.PromptRequest{
			Content: []gateway.Content{gateway.TextContent(r.message)},
			Input:   &r.input,
			System:  systemPrompt(s.Cwd()),
			Ask:     r.askFunc(),
			Emit:    r.emit,
		})
	}
	if errors.Is(r.err, session.ErrEnded) {
		r.sv.forget(r.c)
	}
}

// wait waits for the run to end, or to need a permission answer, while
// reporting progress to req; ctx's cancellation (notifications/cancelled)
// cancels the turn.
func (r *run) wait(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *Output, error) {
	r.attach(ctx, req)
	defer r.detach()
	for {
		select {
		case <-r.done:
			r.logEnd()
			return r.result()
		case q := <-r.asks:
			if r.mode == askElicit {
				q.reply <- elicit(ctx, req.Session, q)
				continue
			}
			state := r.sv.park(r, q)
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{q.id: q.params}, RequestState: state}, nil, nil
		case <-ctx.Done():
			r.sv.log.Info("ask_agent cancelled by the client: cancelling the turn", "sessionKey", r.key, "cause", context.Cause(ctx))
			r.cancel()
			<-r.done
			return r.result()
		}
	}
}

// logEnd sends the client a log message on a turn that failed or was
// cancelled.
func (r *run) logEnd() {
	switch {
	case r.err != nil && !errors.Is(r.err, session.ErrEnded):
		r.log(levelError, "the turn failed: "+gateway.ErrorText(r.err))
	case r.err == nil && r.stop == gateway.StopCancelled:
		r.log(levelNotice, "the turn was cancelled")
	}
}

// result is the tool result of an ended run.
func (r *run) result() (*mcp.CallToolResult, *Output, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &Output{Answer: r.answer.String(), SessionKey: r.key, StopReason: string(r.stop), ToolCalls: append([]ToolCall{}, r.calls...)}
	text := out.Answer
	if len(r.refused) > 0 {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(r.refused, "\n"))
	}
	switch {
	case errors.Is(r.err, session.ErrEnded):
		return nil, nil, fmt.Errorf("ask_agent: sessionKey %q: the conversation was ended before its turn (the server is stopping?); call again to reopen it: %w", r.key, r.err)
	case r.err != nil:
		out.StopReason = string(gateway.StopEndTurn)
		msg := "ask_agent: the turn failed: " + gateway.ErrorText(r.err)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: joinText(text, msg)}}}, out, nil
	case r.stop == gateway.StopCancelled:
		msg := "ask_agent: the turn was cancelled (its tool calls in flight too)"
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: joinText(text, msg)}}}, out, nil
	}
	if text == "" {
		text = "(the agent gave no text answer; stop reason " + string(r.stop) + ")"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

func joinText(a, b string) string {
	if blank(a) {
		return b
	}
	return strings.TrimRight(a, "\n") + "\n\n" + b
}

// attach makes req the receiver of the run's progress (if it sent a
// progress token) and log messages.
func (r *run) attach(ctx context.Context, req *mcp.CallToolRequest) {
	r.mu.Lock()
	r.sink = &requestSink{ctx: ctx, ss: req.Session, token: req.Params.GetProgressToken()}
	r.mu.Unlock()
}

func (r *run) detach() {
	r.mu.Lock()
	r.sink = nil
	r.mu.Unlock()
}

// emit records a turn event and reports it as progress and, for a tool
// call's start and end, as a log message. Events come one at a time, in
// order.
func (r *run) emit(ev gateway.Event) {
	var msg string
	var lv level // "": no log message
	r.mu.Lock()
	switch ev.Kind {
	case gateway.EventTextDelta:
		r.answer.WriteString(ev.Text)
		msg = ev.Text
	case gateway.EventToolStart:
		r.callIdx[ev.Call.ID] = len(r.calls)
		r.calls = append(r.calls, ToolCall{Name: ev.Call.Name, Status: string(ev.Call.Status)})
		msg, lv = fmt.Sprintf("tool %s: started", ev.Call.Name), levelInfo
	case gateway.EventToolUpdate:
		if i, ok := r.callIdx[ev.Call.ID]; ok {
			r.calls[i].Status = string(ev.Call.Status)
		}
	case gateway.EventToolEnd:
		if i, ok := r.callIdx[ev.Call.ID]; ok {
			r.calls[i].Status = string(ev.Call.Status)
		}
		msg, lv = fmt.Sprintf("tool %s: %s", ev.Call.Name, ev.Call.Status), levelInfo
		if ev.Call.Status == gateway.ToolFailed {
			lv = levelWarning
		}
		if ev.Call.Result != nil && r.input.IsDirect() {
			// A /call: its result is the answer.
			if r.answer.Len() > 0 {
				r.answer.WriteString("\n")
			}
			r.answer.WriteString(gateway.PromptText(ev.Call.Result.Content))
		}
	}
	if msg == "" || r.sink == nil {
		r.mu.Unlock()
		return
	}
	sink := *r.sink
	if sink.token != nil {
		r.progress++
	}
	n := r.progress
	r.mu.Unlock()
	if sink.token != nil {
		err := sink.ss.NotifyProgress(sink.ctx, &mcp.ProgressNotificationParams{ProgressToken: sink.token, Message: msg, Progress: n})
		if err != nil {
			r.sv.log.Debug("progress not sent", "sessionKey", r.key, "err", err)
		}
	}
	if lv != "" {
		r.sv.tell(sink.ctx, sink.ss, lv, msg, r.key)
	}
}

// log sends a log message about the run to the request waiting for it, if
// any.
func (r *run) log(lv level, msg string) {
	r.mu.Lock()
	sink := r.sink
	r.mu.Unlock()
	if sink != nil {
		r.sv.tell(sink.ctx, sink.ss, lv, msg, r.key)
	}
}

// systemPrompt tells the model who it is, who calls it and where it works.
func systemPrompt(cwd string) string {
	return "You are acp-agent, a coding assistant. Another AI agent is calling you as an MCP tool (ask_agent) to hand you a task: " +
		"its message is the user's message, and your answer goes back to it as the tool's result, so make the answer complete and self-contained. " +
		"The working directory is " + cwd + ". " +
		"Use the tools you are given (your built-in tools and MCP servers) when they help; say briefly what you did. " +
		"If a tool call fails or is refused, explain and adapt instead of retrying the same call."
}
