package runner

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Local is the in-process [gateway.Gateway]: a [gateway.Registry] and a [Runner].
type Local struct {
	registry *gateway.Registry
	runner   *Runner
	log      *slog.Logger
}

var _ gateway.Gateway = (*Local)(nil)

// NewLocal returns an in-process gateway. opts may be nil (the direct
// provider only, no built-in tools).
func NewLocal(opts *Options) *Local {
	reg := &gateway.Registry{}
	runner := New(reg, opts)
	return &Local{registry: reg, runner: runner, log: runner.opts.Logger}
}

// Registry returns the gateway's extra-tools registry.
func (g *Local) Registry() *gateway.Registry { return g.registry }

// SetExtraTools implements [gateway.Gateway].
func (g *Local) SetExtraTools(_ context.Context, sessionKey string, tools []*gateway.Tool) error {
	g.registry.Set(sessionKey, tools)
	return nil
}

// ClearExtraTools implements [gateway.Gateway].
func (g *Local) ClearExtraTools(ctx context.Context, sessionKey string) error {
	g.registry.Clear(sessionKey)
	g.runner.Forget(ctx, sessionKey)
	return nil
}

// Send implements [gateway.Gateway].
func (g *Local) Send(ctx context.Context, req gateway.SendRequest, emit func(gateway.Event)) (gateway.StopReason, error) {
	g.log.Debug("turn start", "session", req.SessionKey, "run", req.RunID)
	stop, err := g.runner.Run(ctx, req, emit)
	g.log.Debug("turn end", "session", req.SessionKey, "run", req.RunID, "stop", stop, "err", err)
	return stop, err
}

// Models implements [gateway.Gateway].
func (g *Local) Models() []gateway.ModelInfo {
	ms := g.runner.Models()
	out := make([]gateway.ModelInfo, len(ms))
	for i, m := range ms {
		out[i] = gateway.ModelInfo{ID: m.ID, Label: m.Label, ToolSearch: m.ID != DirectModelID && g.runner.opts.ToolSearch != ToolSearchOff}
		if th, ok := m.Provider.(gateway.Thinker); ok {
			out[i].Thinking, out[i].ThinkingOn = true, th.ThinksByDefault()
		}
	}
	return out
}

var _ gateway.Sampler = (*Local)(nil)

// CanSample implements [gateway.Sampler]: every configured model but the
// direct provider can sample.
func (g *Local) CanSample(model string) bool {
	m, err := g.runner.model(model)
	return err == nil && m.ID != DirectModelID
}

// Sample implements [gateway.Sampler] with the provider of req.Model: one
// Complete call without tools, its streamed events dropped.
func (g *Local) Sample(ctx context.Context, req gateway.SampleRequest) (*gateway.Response, error) {
	m, err := g.runner.model(req.Model)
	if err != nil {
		return nil, fmt.Errorf("sampling: %w", err)
	}
	if m.ID == DirectModelID {
		return nil, fmt.Errorf("sampling: model %q is the direct provider (no model): it cannot answer a sampling request", m.ID)
	}
	purpose := req.Purpose
	if purpose == "" {
		purpose = gateway.PurposeSampling
	}
	res, err := m.Provider.Complete(ctx, &gateway.Request{System: req.System, Messages: req.Messages, MaxTokens: req.MaxTokens, Purpose: purpose}, func(gateway.Event) {})
	if err != nil {
		return nil, fmt.Errorf("sampling with model %q: %w", m.ID, err)
	}
	if res == nil {
		return nil, fmt.Errorf("sampling with model %q: the provider returned no message", m.ID)
	}
	return res, nil
}
