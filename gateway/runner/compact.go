package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Compaction. Before a request would pass Options.CompactAt of the model's
// context window (and when the provider answers that a prompt is too long),
// the runner replaces the older part of the conversation, for the model,
// by a summary the model writes: the newest messages (up to
// Options.KeepRecent of the window) and the running turn stay verbatim, a
// tool call and its result are never split, and the stored transcript
// keeps every message (gateway.Compaction).

// Defaults of compaction.
const (
	// DefaultCompactAt is the share of the context window a request may
	// reach before the history is compacted.
	DefaultCompactAt = 0.80
	// DefaultKeepRecent is the share of the context window kept verbatim
	// at a compaction: the newest messages.
	DefaultKeepRecent = 0.20
	// summaryMaxTokens caps the summary's length.
	summaryMaxTokens = 8192
	// summaryFit is the share of the window a summarization request may
	// fill; a longer history is summarized a part at a time.
	summaryFit = 0.70
)

// summarySystem is the system prompt of a summarization request that
// cannot reuse the session's (a part of a too long history).
const summarySystem = "You summarize conversations between a user and a coding agent so that the agent can continue the work from the summary alone."

// summaryInstruction ends a summarization request.
const summaryInstruction = `The conversation above is about to be removed from your context to free space; it will be replaced by the summary you write now. Do not call any tool. Write a summary that lets you continue the work without it:
1. The user's requests and intent, in their own words where it matters.
2. Key facts, decisions, and technical details (files, functions, commands, errors and their fixes).
3. What tools returned that is still needed (paths, identifiers, values); say which results you may want to read again.
4. What was done, and what remains to be done next.
Be concise but complete; use headings and lists.`

// summaryPreamble introduces the summary to the model in later requests.
const summaryPreamble = "This session continues from an earlier conversation that was compacted to fit the context window. A summary of it:\n\n"

// SummaryMessage is the user message that stands for the compacted part of
// a conversation in the requests after a compaction.
func SummaryMessage(c *gateway.Compaction) gateway.Message {
	return gateway.Message{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(summaryPreamble + c.Summary)}}
}

// errNothingToCompact: every message the model sees must stay verbatim.
var errNothingToCompact = errors.New("nothing to compact: the conversation is only the running turn")

// cutPoint returns where a compaction of msgs cuts: the first message kept
// verbatim. The cut keeps the newest messages up to keep tokens, at least
// the last message, and falls on a user message where one is within that,
// else on an assistant message, never on a tool result (a call stays with
// its result). 0 means nothing can be cut.
func cutPoint(msgs []gateway.Message, keep int64) int {
	best := 0
	var tokens int64
	for i := len(msgs) - 1; i > 0; i-- {
		tokens += messageTokens(msgs[i])
		if msgs[i].Role == gateway.RoleTool {
			continue
		}
		if tokens > keep && best > 0 {
			break
		}
		if msgs[i].Role == gateway.RoleUser || best == 0 {
			best = i
		}
		if tokens > keep {
			break
		}
	}
	return best
}

// summarize asks model for a summary of msgs, which follow the summary
// prev (nil: none). The request reuses the session's system prompt and tools
// so that the provider's prompt cache serves its prefix; a history too long
// for one request (over summaryFit of window) is summarized a part at a
// time. The text the model streams for the last part (the summary itself,
// not a part's that a later one replaces) goes to onDelta as it comes. It
// returns the summary and the requests' usage.
func (r *Runner) summarize(ctx context.Context, model gateway.Model, req *gateway.Request, prev *gateway.Compaction, msgs []gateway.Message, onDelta func(string)) (string, gateway.Usage, error) {
	var usage gateway.Usage
	summary := ""
	if prev != nil {
		summary = prev.Summary
	}
	for len(msgs) > 0 {
		part := msgs
		if window := model.ContextWindow; window > 0 {
			fit := int64(summaryFit*float64(window)) - textTokens(req.System) - toolsTokens(req.Tools) - textTokens(summary)
			if messagesTokens(part) > fit {
				// The longest head that fits and ends before a user or
				// assistant message (never between a call and its result).
				var n int64
				end := 0
				for i, m := range part {
					if i > 0 && m.Role != gateway.RoleTool {
						end = i
					}
					if n += messageTokens(m); n > fit {
						break
					}
				}
				if end == 0 {
					return "", usage, fmt.Errorf("compaction: a message of about %d tokens does not fit the context window of %d tokens", messageTokens(part[0]), window)
				}
				part = part[:end]
			}
		}
		var conv []gateway.Message
		if summary != "" {
			conv = append(conv, SummaryMessage(&gateway.Compaction{Summary: summary}))
		}
		conv = append(conv, r.modelMessages(part, nil)...)
		conv = append(conv, gateway.Message{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(summaryInstruction)}})
		sreq := &gateway.Request{System: req.System, Tools: req.Tools, Messages: conv, CacheKey: req.CacheKey, MaxTokens: summaryMaxTokens, Purpose: gateway.PurposeSummary}
		if len(part) < len(msgs) {
			sreq.System, sreq.Tools = summarySystem, nil
		}
		stream := func(gateway.Event) {}
		if len(part) == len(msgs) {
			stream = func(ev gateway.Event) {
				if ev.Kind == gateway.EventTextDelta && ev.Text != "" {
					onDelta(ev.Text)
				}
			}
		}
		resp, err := model.Provider.Complete(ctx, sreq, stream)
		if resp != nil {
			usage = usage.Add(r.priced(model, resp.Usage))
		}
		if err != nil {
			return "", usage, err
		}
		text := strings.TrimSpace(gateway.PromptText(resp.Message.Content))
		if text == "" {
			return "", usage, errors.New("compaction: the model wrote no summary")
		}
		summary = text
		msgs = msgs[len(part):]
	}
	return summary, usage, nil
}

// serverCompacted takes note of sc, the provider's compaction of preq's
// conversation (gateway.ContextServerCompaction): the context now holds
// the summary and what follows it, and an EventCompaction (reason
// "server") tells the user. The request's prompt was the uncompacted one,
// so it does not calibrate the estimates.
func (r *Runner) serverCompacted(t *turnState, preq *gateway.Request, sc *gateway.ServerCompaction) {
	key := t.req.SessionKey
	before := r.calib.scale(key, requestTokens(preq))
	t.last = gateway.Usage{}
	t.estimate = r.calib.scale(key, textTokens(preq.System)+toolsTokens(preq.Tools)+textTokens(sc.Summary))
	r.opts.Logger.Info("history compacted by the provider", "session", key, "before", before, "after", t.estimate)
	// Reported as any compaction is, its steps at once: it started, its
	// summary in one piece, completed.
	id := newCompactionID()
	for _, rep := range []*gateway.CompactionReport{
		{ID: id, Status: gateway.CompactionInProgress, Reason: "server", Before: before},
		{ID: id, Status: gateway.CompactionInProgress, Reason: "server", Delta: sc.Summary},
		{ID: id, Status: gateway.CompactionCompleted, Reason: "server", Summary: sc.Summary, Before: before, After: t.estimate},
	} {
		if rep.Status == gateway.CompactionInProgress && rep.Delta == "" && rep.Before == 0 {
			continue
		}
		t.emit(gateway.Event{Kind: gateway.EventCompaction, Compaction: rep})
	}
}
