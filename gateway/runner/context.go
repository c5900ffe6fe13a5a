package runner

import (
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Context strategies (Options.Context). With gateway.ContextClearToolUses
// or gateway.ContextServerCompaction, each request of a model whose
// provider manages that strategy (gateway.ContextManager) asks the
// provider to manage the context past a trigger below Options.CompactAt;
// the runner's own compaction stays as a backstop at CompactAt. A model
// whose provider does not fall back to gateway.ContextAgent, which New
// logs once per model.

// Defaults of the provider-side strategies, as shares of the model's
// context window (the API's own defaults when the window is unknown).
const (
	// ClearTrigger is the share of the window past which old tool results
	// are cleared (Anthropic's default: 100,000 of 200,000 tokens).
	ClearTrigger = 0.5
	// ClearKeep is the fewest of the newest tool uses that keep their
	// results (Anthropic's default keep).
	ClearKeep = 3
	// ClearStep is the share of the window of tool results by which the
	// cleared part of the conversation grows at once (see clearKeep).
	ClearStep = 0.1
	// ClearAtLeast is the share of the window a clearing must free, so
	// that a cleared prompt, which the cache no longer holds, is worth it.
	ClearAtLeast = 0.1
	// ServerCompactTrigger is the share of the window past which the
	// provider compacts (Anthropic's default: 150,000 of 200,000 tokens
	// is 0.75; lower, so a turn's growth stays under CompactAt).
	ServerCompactTrigger = 0.7
	// MinServerCompactTrigger is the smallest trigger Anthropic's
	// compaction accepts, in tokens; a model whose window puts CompactAt
	// under it compacts with the agent alone.
	MinServerCompactTrigger = 50_000
	// backstopMargin is the least share of the window between a
	// provider's trigger and CompactAt.
	backstopMargin = 0.1
)

// managesContext reports whether model's provider carries out s.
func managesContext(model gateway.Model, s gateway.ContextStrategy) bool {
	cm, ok := model.Provider.(gateway.ContextManager)
	return ok && s != gateway.ContextAgent && cm.ManagesContext(s)
}

// contextManagement is what a request to model of msgs asks its provider
// to do of the context, or nil: the agent alone.
func (r *Runner) contextManagement(model gateway.Model, msgs []gateway.Message) *gateway.ContextManagement {
	s := r.opts.Context
	if !managesContext(model, s) {
		return nil
	}
	c := &gateway.ContextManagement{Strategy: s}
	window := float64(model.ContextWindow)
	share := func(def float64) int64 { return int64(min(def, r.opts.CompactAt-backstopMargin) * window) }
	switch s {
	case gateway.ContextClearToolUses:
		c.Keep = ClearKeep
		if window > 0 {
			c.Trigger, c.ClearAtLeast = share(ClearTrigger), int64(ClearAtLeast*window)
			c.Keep = clearKeep(msgs, int64(ClearStep*window))
		}
	case gateway.ContextServerCompaction:
		if window > 0 {
			c.Trigger = max(share(ServerCompactTrigger), MinServerCompactTrigger)
			if float64(c.Trigger) >= r.opts.CompactAt*window {
				return nil // the window is too small for the API's compaction
			}
		}
	}
	return c
}

// clearKeep is the keep of a clear_tool_uses request of msgs that moves
// the cleared part in steps of step tokens of results, not one tool use a
// request. The API clears every request's history anew, all but the
// newest keep tool uses: with a fixed keep, each request clears one more
// result, and the prompt cache is rewritten from there on every request.
// Here the tool uses are cut, oldest first, into segments of at least step
// tokens of results; every closed segment but the newest is cleared, so
// the cleared part, and the cached prefix with it, stays the same until
// another segment closes, and between step and about twice step tokens of
// results stay. It is at least ClearKeep. A function of msgs alone: a
// stored session reloads to the same requests.
func clearKeep(msgs []gateway.Message, step int64) int64 {
	var uses []int64 // result tokens per tool use, oldest first
	at := map[string]int{}
	for _, m := range msgs {
		switch m.Role {
		case gateway.RoleAssistant:
			for _, c := range m.ToolCalls {
				at[c.ID] = len(uses)
				uses = append(uses, 0)
			}
		case gateway.RoleTool:
			if i, ok := at[m.ToolCallID]; ok {
				uses[i] += messageTokens(m)
			}
		}
	}
	cleared, closed, segStart := 0, 0, 0 // uses cleared; closed segments; the open segment's first use
	var seg int64
	for i, n := range uses {
		if seg += n; seg >= step {
			if closed++; closed > 1 {
				cleared = segStart // the segment before this one is cleared
			}
			segStart, seg = i+1, 0
		}
	}
	return max(int64(len(uses)-cleared), ClearKeep)
}

// logContextFallbacks logs, once per model, a strategy its provider does
// not carry out: the agent's compaction does the work alone.
func (r *Runner) logContextFallbacks() {
	if r.opts.Context == gateway.ContextAgent {
		return
	}
	for _, m := range r.opts.Models {
		if m.ID == DirectModelID || managesContext(m, r.opts.Context) {
			continue
		}
		r.opts.Logger.Warn("context strategy not offered by this model's provider: the agent compacts alone",
			"strategy", string(r.opts.Context), "model", m.ID, "provider", m.Provider.Name())
	}
}
