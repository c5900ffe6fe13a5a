package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// runCommand answers a command the runner runs itself (Command.Runner):
// /usage and /compact. Its answer is the turn's assistant message.
func (r *Runner) runCommand(ctx context.Context, t *turnState, cmd Command) (gateway.StopReason, error) {
	var text string
	switch cmd.Name {
	case "usage":
		text = r.usageText(t)
	case "compact":
		text = r.compactCommand(ctx, t)
	}
	t.emit(gateway.Event{Kind: gateway.EventTextDelta, Text: text})
	t.turn = append(t.turn, gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(text)}})
	if ctx.Err() != nil {
		return gateway.StopCancelled, nil
	}
	return gateway.StopEndTurn, nil
}

// compactCommand is /compact: every earlier message becomes the summary.
func (r *Runner) compactCommand(ctx context.Context, t *turnState) string {
	if _, direct := t.model.Provider.(turnOnlyProvider); direct {
		return "/compact needs a model to write the summary; in direct mode nothing of the conversation is sent to a model. Pick a model in the session's Model setting."
	}
	preq, _ := r.request(t, false)
	err := r.compact(ctx, t, preq, "command")
	switch {
	case errors.Is(err, errNothingToCompact):
		return "Nothing to compact yet: the conversation has no earlier messages."
	case err != nil && ctx.Err() != nil:
		return "The compaction was cancelled. The conversation goes on as it was."
	case err != nil:
		return fmt.Sprintf("The compaction failed: %s. The conversation goes on as it was.", gateway.ErrorText(err))
	}
	after, _ := r.request(t, false)
	return fmt.Sprintf("Compacted the conversation: the model now sees a summary of it (its context is about %s tokens).",
		count(r.calib.scale(t.req.SessionKey, requestTokens(after))))
}

// usageText is /usage: the session's tokens and cost, and how full the
// context of its model is.
func (r *Runner) usageText(t *turnState) string {
	u := t.view.Usage
	var b strings.Builder
	if u.Requests == 0 {
		b.WriteString("No model request in this session yet.\n")
	} else {
		fmt.Fprintf(&b, "Session usage, %d model requests:\n", u.Requests)
		fmt.Fprintf(&b, "- input: %s tokens (%s uncached, %s read from the prompt cache, %s written to it)\n",
			count(u.PromptTokens()), count(u.InputTokens), count(u.CacheReadTokens), count(u.CacheWriteTokens))
		fmt.Fprintf(&b, "- output: %s tokens", count(u.OutputTokens))
		if u.ThoughtTokens > 0 {
			fmt.Fprintf(&b, " (%s thinking)", count(u.ThoughtTokens))
		}
		b.WriteString("\n")
		switch {
		case u.CostKnown():
			fmt.Fprintf(&b, "- cost: $%.4f at the models' list prices\n", u.Cost)
		case u.Cost > 0:
			fmt.Fprintf(&b, "- cost: at least $%.4f (%d requests to a model with no known price)\n", u.Cost, u.Unpriced)
		default:
			b.WriteString("- cost: unknown (no price for the model; set model.pricing in the config)\n")
		}
	}
	if _, direct := t.model.Provider.(turnOnlyProvider); direct {
		b.WriteString("Model: direct (no model; nothing is sent to one).")
		return b.String()
	}
	preq, _ := r.request(t, false)
	used := r.calib.scale(t.req.SessionKey, requestTokens(preq))
	fmt.Fprintf(&b, "Context (%s): about %s tokens", t.model.ID, count(used))
	if w := t.model.ContextWindow; w > 0 {
		fmt.Fprintf(&b, " of %s (%.0f%%); compacts at %.0f%%", count(w), 100*float64(used)/float64(w), 100*r.opts.CompactAt)
	}
	if t.view.Compaction != nil {
		b.WriteString("; earlier messages are compacted into a summary")
	}
	b.WriteString(".")
	return b.String()
}

// count formats n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
