package gateway

import (
	"context"
	"log/slog"
)

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
