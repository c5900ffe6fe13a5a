package gateway

import (
	"context"
	"log/slog"
)

// Gateway is what the ACP translator drives: the extra tools of each session
// and its prompt turns. It is implemented in process by Local; a remote
// gateway implements the same methods over its own protocol. Methods are safe
// for concurrent use; the caller runs one Send per session at a time.
type Gateway interface {
	// SetExtraTools replaces the extra tools of sessionKey atomically
	// (sessions.setExtraTools).
	SetExtraTools(ctx context.Context, sessionKey string, tools []*Tool) error
	// ClearExtraTools removes them and forgets the session's conversation
	// (sessions.clearExtraTools).
	ClearExtraTools(ctx context.Context, sessionKey string) error
	// Send runs one prompt turn (chat.send); cancelling ctx aborts it
	// (chat.abort) and the turn ends with StopCancelled. Events reach emit in
	// order, from one goroutine at a time.
	Send(ctx context.Context, req SendRequest, emit func(Event)) (StopReason, error)
	// Models lists the models a session can choose from, the default first.
	Models() []ModelInfo
}

// ModelInfo describes a model a session can choose.
type ModelInfo struct {
	ID, Label string
}

// SendRequest is one user message for a session.
type SendRequest struct {
	SessionKey string
	// RunID identifies the turn in logs and, for a remote gateway, on the wire.
	RunID string
	// Message is the user's prompt content.
	Message []Content
	// Model is the ID of the model the session uses; "" means the default.
	Model string
	// System is the system prompt of the session (who the agent is, its
	// working directory), or "".
	System string
	// Ask asks the user to permit a tool call (ACP
	// session/request_permission). Nil allows every call the policy would
	// ask about.
	Ask AskFunc
	// CallerHistory says the caller keeps the conversation (a translator
	// talking to a remote gateway): History is the conversation so far, and
	// the turn's messages go to OnTurn instead of the gateway's History.
	CallerHistory bool
	History       []Message
	OnTurn        func(stop StopReason, msgs []Message)
}

// Local is the in-process Gateway: a Registry and a Runner.
type Local struct {
	registry *Registry
	runner   *Runner
	log      *slog.Logger
}

var _ Gateway = (*Local)(nil)

// NewLocal returns an in-process gateway. opts may be nil (the direct
// provider only, no built-in tools).
func NewLocal(opts *RunnerOptions) *Local {
	reg := &Registry{}
	runner := NewRunner(reg, opts)
	return &Local{registry: reg, runner: runner, log: runner.opts.Logger}
}

// Registry returns the gateway's extra-tools registry.
func (g *Local) Registry() *Registry { return g.registry }

// SetExtraTools implements Gateway.
func (g *Local) SetExtraTools(_ context.Context, sessionKey string, tools []*Tool) error {
	g.registry.Set(sessionKey, tools)
	return nil
}

// ClearExtraTools implements Gateway.
func (g *Local) ClearExtraTools(_ context.Context, sessionKey string) error {
	g.registry.Clear(sessionKey)
	g.runner.Forget(sessionKey)
	return nil
}

// Send implements Gateway.
func (g *Local) Send(ctx context.Context, req SendRequest, emit func(Event)) (StopReason, error) {
	g.log.Debug("turn start", "session", req.SessionKey, "run", req.RunID)
	stop, err := g.runner.Run(ctx, req, emit)
	g.log.Debug("turn end", "session", req.SessionKey, "run", req.RunID, "stop", stop, "err", err)
	return stop, err
}

// Models implements Gateway.
func (g *Local) Models() []ModelInfo {
	ms := g.runner.Models()
	out := make([]ModelInfo, len(ms))
	for i, m := range ms {
		out[i] = ModelInfo{ID: m.ID, Label: m.Label}
	}
	return out
}
