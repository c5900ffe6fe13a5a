package e2e

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// price is a model's list price in USD per million tokens, as the agent
// knows it (gateway/provider/models.go).
type price struct{ input, output, cacheRead, cacheWrite float64 }

func (p price) cost(u fakemodel.Usage) float64 {
	return (float64(u.InputTokens)*p.input + float64(u.CacheReadTokens)*p.cacheRead +
		float64(u.CacheWriteTokens)*p.cacheWrite + float64(u.OutputTokens)*p.output) / 1e6
}

// promptFull sends one text prompt and returns the whole response and the
// turn's updates.
func (a *agent) promptFull(sid, prompt string) (acpsdk.PromptResponse, []acpsdk.SessionNotification) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.t.Context(), 60*time.Second)
	defer cancel()
	from := len(a.Client.Updates())
	res, err := a.Conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(prompt)}})
	if err != nil {
		a.t.Fatalf("prompt %q: %v", prompt, err)
	}
	return res, a.Client.Updates()[from:]
}

// usageUpdates returns the usage_update notifications of updates.
func usageUpdates(updates []acpsdk.SessionNotification) []acpsdk.SessionNotification {
	var out []acpsdk.SessionNotification
	for _, u := range updates {
		if u.Update.UsageUpdate != nil {
			out = append(out, u)
		}
	}
	return out
}

// TestContext_UsageAfterEveryModelTurn: with a priced model, every turn that
// asked the model (/compact included) is followed, before its response, by
// exactly one usage_update for its session: the tokens in the context after
// the turn (the last request's prompt and output, as the provider counted
// them), the model's window, and the session's cost so far in USD at the
// model's list price. The session/prompt response carries the turn's
// tokens, which add up to what the provider counted over the turn's
// requests. /usage asks no model: it sends no usage_update and answers with
// the session's totals. The totals survive a restart on the same store: the
// cost goes on from there.
func TestContext_UsageAfterEveryModelTurn(t *testing.T) {
	t.Parallel()
	models := []struct {
		be    ctxBackend
		name  string
		size  int
		price price
	}{
		{ctxBackends[0], "claude-sonnet-4-5", 200_000, price{3, 15, 0.3, 3.75}},
		{ctxBackends[1], "gpt-4.1", 1_047_576, price{2, 8, 0.5, 2}},
	}
	for _, m := range models {
		t.Run(m.be.name, func(t *testing.T) {
			t.Parallel()
			fake := m.be.fake(t, &fakemodel.Options{ContextWindow: m.size},
				fakemodel.Turn{Text: "Let me echo it.", ToolCalls: []fakemodel.ToolCall{{Name: "mcp__fx__echo", Args: `{"message":"hello there"}`}}},
				fakemodel.Turn{Text: "It said hello there."},
				fakemodel.Turn{Text: "You are welcome."},
				fakemodel.Turn{Text: "Summary: the user had hello there echoed, and thanked me."}, // /compact
				fakemodel.Turn{Text: strings.Repeat("A longer answer. ", 300)},
				fakemodel.Turn{Text: "Still counting."},
			)
			cfg := map[string]any{"model": ctxModel(m.be, fake.URL, m.name, 0), "store": map[string]any{"path": filepath.Join(t.TempDir(), "sessions.db")}}
			server := acpclient.Stdio("fx", fixtureBin, nil, nil)
			cwd := t.TempDir()
			a := startCtxAgent(t, cfg)
			sid := a.newSession(cwd, server)
			u := &usageCheck{t: t, fake: fake, sid: sid, size: m.size, price: m.price}
			for _, prompt := range []string{"echo hello there", "thanks", "/usage", "/compact", "tell me more"} {
				res, out := a.promptFull(sid, prompt)
				if prompt == "/usage" {
					u.noModel(prompt, res, out, "Session usage, 3 model requests:", "- cost: $", "Context ("+m.be.name+":"+m.name+"):")
					continue
				}
				u.turn(prompt, res, out)
				_, msgs := readModelRequest(fake.Requests()[u.seen-1].JSON)
				switch {
				case prompt == "/compact" && (!strings.Contains(text(out), "Compacted the conversation") || !isSummaryRequest(msgs)):
					t.Errorf("/compact says %q; its model request ends %+v", text(out), msgs[len(msgs)-1])
				case prompt == "tell me more" && (msgs[0].text != summaryPreamble+"Summary: the user had hello there echoed, and thanked me." || len(msgs) != 4):
					t.Errorf("after /compact the model sees %+v; want the summary, /compact and its answer, and the prompt", msgs)
				}
			}
			b := restartAndLoad(t, a, cfg, sid, cwd, server)
			res, out := b.promptFull(sid, "/usage")
			u.noModel("/usage after the restart", res, out, "Session usage, 5 model requests:", fmt.Sprintf("- cost: $%.4f ", u.spent),
				"earlier messages are compacted into a summary")
			res, out = b.promptFull(sid, "and after the restart?")
			u.turn("after the restart", res, out)
		})
	}
}

// usageCheck checks the usage a session's turns report against what the
// fake model counted.
type usageCheck struct {
	t     *testing.T
	fake  *fakemodel.Server
	sid   string
	size  int
	price price

	seen  int     // model requests accounted so far
	spent float64 // the session's cost so far, by the fake's count
}

// noModel checks a turn that asked no model: no usage, and wants in its text.
func (c *usageCheck) noModel(label string, res acpsdk.PromptResponse, out []acpsdk.SessionNotification, wants ...string) {
	c.t.Helper()
	n := len(c.fake.Requests()) - c.seen
	if uu := usageUpdates(out); res.StopReason != acpsdk.StopReasonEndTurn || n != 0 || len(uu) != 0 || res.Usage != nil {
		c.t.Errorf("%s: stop %s, %d model requests, %d usage_update, response usage %+v; want none", label, res.StopReason, n, len(uu), res.Usage)
	}
	for _, want := range wants {
		if !strings.Contains(text(out), want) {
			c.t.Errorf("%s says %q, want %q in it", label, text(out), want)
		}
	}
}

// turn checks a turn that asked the model.
func (c *usageCheck) turn(label string, res acpsdk.PromptResponse, out []acpsdk.SessionNotification) {
	c.t.Helper()
	reqs := c.fake.Requests()
	turnReqs := reqs[c.seen:]
	c.seen = len(reqs)
	if res.StopReason != acpsdk.StopReasonEndTurn || strings.Contains(text(out), "The turn failed") || len(turnReqs) == 0 {
		c.t.Fatalf("%s: stop %s after %d model requests\n%s", label, res.StopReason, len(turnReqs), dump(out))
	}
	var sum fakemodel.Usage
	for _, r := range turnReqs {
		if r.Status != 200 {
			c.t.Fatalf("%s: HTTP %d", label, r.Status)
		}
		sum.InputTokens += r.Usage.InputTokens
		sum.CacheReadTokens += r.Usage.CacheReadTokens
		sum.CacheWriteTokens += r.Usage.CacheWriteTokens
		sum.OutputTokens += r.Usage.OutputTokens
		c.spent += c.price.cost(r.Usage)
	}
	uu := usageUpdates(out)
	if len(uu) != 1 {
		c.t.Fatalf("%s: %d usage_update notifications before the response, want 1:\n%s", label, len(uu), dump(out))
	}
	// The title the model writes after the first turn is sent after that
	// turn's response (acp holds it back), but the client may have handled
	// it by the time the harness reads the turn's updates: it alone may
	// follow the usage_update here.
	last := len(out) - 1
	for last > 0 && isTitleOnly(out[last]) {
		last--
	}
	if out[last].Update.UsageUpdate == nil {
		c.t.Errorf("%s: the usage_update is not the turn's last update:\n%s", label, dump(out))
	}
	u := uu[0].Update.UsageUpdate
	lastReq := turnReqs[len(turnReqs)-1].Usage
	used := lastReq.InputTokens + lastReq.CacheReadTokens + lastReq.CacheWriteTokens + lastReq.OutputTokens
	if label == "/compact" {
		// The context left is the summary (estimated), less than the
		// summarization request's prompt.
		prompt := used - lastReq.OutputTokens
		if u.Used <= 0 || u.Used >= prompt {
			c.t.Errorf("/compact: usage_update used %d, want the compacted context, under the %d tokens of the summarization request", u.Used, prompt)
		}
		used = u.Used
	}
	if string(uu[0].SessionId) != c.sid || u.Used != used || u.Size != c.size || label != "/compact" && u.Used <= 0 {
		c.t.Errorf("%s: usage_update %s used %d size %d; want session %s, used %d (the last request's prompt and output), size %d",
			label, uu[0].SessionId, u.Used, u.Size, c.sid, used, c.size)
	}
	if u.Cost == nil || u.Cost.Currency != "USD" || u.Cost.Amount <= 0 || math.Abs(u.Cost.Amount-c.spent) > 1e-9 {
		c.t.Errorf("%s: cost %+v, want %.8f USD (the session's so far)", label, u.Cost, c.spent)
	}
	total := sum.InputTokens + sum.CacheReadTokens + sum.CacheWriteTokens + sum.OutputTokens
	if res.Usage == nil {
		c.t.Fatalf("%s: the response has no usage", label)
	}
	if ru := res.Usage; ru.TotalTokens <= 0 || ru.TotalTokens != total || ru.InputTokens != sum.InputTokens || ru.OutputTokens != sum.OutputTokens ||
		deref(ru.CachedReadTokens) != sum.CacheReadTokens || deref(ru.CachedWriteTokens) != sum.CacheWriteTokens {
		c.t.Errorf("%s: response usage %+v (cached read %d, write %d); the fake counted %+v over %d requests, %d in all",
			label, *ru, deref(ru.CachedReadTokens), deref(ru.CachedWriteTokens), sum, len(turnReqs), total)
	}
}

// isTitleOnly reports whether n is a session_info_update with a title and
// nothing else: the model's title, sent outside any turn.
func isTitleOnly(n acpsdk.SessionNotification) bool {
	u := n.Update.SessionInfoUpdate
	return u != nil && u.Title != nil && u.UpdatedAt == nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// TestContext_DirectModeUsageAndCompact: with no model, /usage answers with
// the session's totals (no model request) and /compact says it needs a
// model; neither, nor a direct tool call, sends a usage_update.
func TestContext_DirectModeUsageAndCompact(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	sid := a.newSession(t.TempDir(), acpclient.Stdio("fx", fixtureBin, nil, nil))
	for _, c := range []struct{ prompt, want string }{
		{"/usage", "No model request in this session yet.\nModel: direct (no model; nothing is sent to one)."},
		{`/call mcp__fx__echo {"message":"direct"}`, "Echo: direct"},
		{"/usage", "No model request in this session yet.\nModel: direct (no model; nothing is sent to one)."},
		{"/compact", "/compact needs a model to write the summary; in direct mode nothing of the conversation is sent to a model."},
	} {
		res, out := a.promptFull(sid, c.prompt)
		got := text(out)
		if c.prompt == "/usage" && got != c.want || c.prompt != "/usage" && !strings.Contains(got+contentOf(out), c.want) {
			t.Errorf("%s: %q, want %q", c.prompt, got, c.want)
		}
		if res.StopReason != acpsdk.StopReasonEndTurn || res.Usage != nil || len(usageUpdates(out)) != 0 {
			t.Errorf("%s: stop %s, usage %+v, %d usage_update; want end_turn and no usage", c.prompt, res.StopReason, res.Usage, len(usageUpdates(out)))
		}
	}
}

// contentOf joins the text content of the final tool_call_updates of
// updates.
func contentOf(updates []acpsdk.SessionNotification) string {
	var b strings.Builder
	for _, u := range updates {
		if tu := u.Update.ToolCallUpdate; tu != nil && tu.Status != nil && *tu.Status == acpsdk.ToolCallStatusCompleted {
			b.WriteString(contentText(tu))
		}
	}
	return b.String()
}
