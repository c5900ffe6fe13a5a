package fakemodel_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// toolSession is a conversation of n tool uses, each result of size bytes,
// as Beta message params: a user message, then per use an assistant
// tool_use and a user tool_result.
func toolSession(n, size int) []anthropic.BetaMessageParam {
	msgs := []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Tail the build log, please."))}
	for i := range n {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			anthropic.BetaMessageParam{Role: anthropic.BetaMessageParamRoleAssistant, Content: []anthropic.BetaContentBlockParamUnion{
				anthropic.NewBetaToolUseBlock(id, map[string]any{"lines": 100}, "tail_log")}},
			anthropic.NewBetaUserMessage(anthropic.NewBetaToolResultBlock(id, strings.Repeat(fmt.Sprintf("log line %d ok\n", i), size/14), false)))
	}
	return msgs
}

// betaParams is a request of msgs with one context edit.
func betaParams(msgs []anthropic.BetaMessageParam, edit anthropic.BetaContextManagementConfigEditUnionParam, betas ...anthropic.AnthropicBeta) anthropic.BetaMessageNewParams {
	return anthropic.BetaMessageNewParams{
		Model: "claude-test", MaxTokens: 1024, Messages: msgs, Betas: betas,
		System:            []anthropic.BetaTextBlockParam{{Text: "You tail logs."}},
		ContextManagement: anthropic.BetaContextManagementConfigParam{Edits: []anthropic.BetaContextManagementConfigEditUnionParam{edit}},
	}
}

func clearEdit(trigger, keep, atLeast int64) anthropic.BetaContextManagementConfigEditUnionParam {
	e := &anthropic.BetaClearToolUses20250919EditParam{
		Trigger: anthropic.BetaClearToolUses20250919EditTriggerUnionParam{OfInputTokens: &anthropic.BetaInputTokensTriggerParam{Value: trigger}},
		Keep:    anthropic.BetaToolUsesKeepParam{Value: keep},
	}
	if atLeast > 0 {
		e.ClearAtLeast = anthropic.BetaInputTokensClearAtLeastParam{Value: atLeast}
	}
	return anthropic.BetaContextManagementConfigEditUnionParam{OfClearToolUses20250919: e}
}

// Past its trigger, clear_tool_uses_20250919 replaces the results of every
// tool use but the newest Keep by the placeholder, says so in
// applied_edits, and the request is charged for the cleared prompt; under
// the trigger, or freeing less than clear_at_least, nothing is cleared.
func TestAnthropic_ClearToolUses(t *testing.T) {
	s := fakemodel.NewAnthropicWith(t, &fakemodel.Options{Respond: func(fakemodel.Recorded) fakemodel.Turn { return fakemodel.Turn{Text: "ok"} }})
	c := anthropic.NewClient(option.WithBaseURL(s.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	msgs := toolSession(5, 8000) // about 2,000 tokens a result
	beta := anthropic.AnthropicBetaContextManagement2025_06_27
	for _, tc := range []struct {
		name                 string
		trigger, atLeast     int64
		wantUses             int64
		wantClearedAtLeastTk int64
	}{
		{"past the trigger", 5000, 0, 2, 3000},
		{"under the trigger", 50_000, 0, 0, 0},
		{"frees too little", 5000, 10_000, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := c.Beta.Messages.New(t.Context(), betaParams(msgs, clearEdit(tc.trigger, 3, tc.atLeast), beta))
			if err != nil {
				t.Fatal(err)
			}
			reqs := s.Requests()
			r := reqs[len(reqs)-1]
			full := fullTokens(t, r)
			var uses, cleared int64
			for _, e := range msg.ContextManagement.AppliedEdits {
				if e.Type == "clear_tool_uses_20250919" {
					uses, cleared = e.ClearedToolUses, e.ClearedInputTokens
				}
			}
			if uses != tc.wantUses || cleared < tc.wantClearedAtLeastTk {
				t.Errorf("applied edits: %d tool uses, %d tokens cleared; want %d uses, at least %d tokens (%s)", uses, cleared, tc.wantUses, tc.wantClearedAtLeastTk, msg.ContextManagement.RawJSON())
			}
			if got, want := prompt(r.Usage), full-int(cleared); got != want {
				t.Errorf("charged %d prompt tokens, want %d (%d less %d cleared)", got, want, full, cleared)
			}
			if got := msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens + msg.Usage.CacheCreationInputTokens; int(got) != prompt(r.Usage) {
				t.Errorf("usage says %d prompt tokens, the record %d", got, prompt(r.Usage))
			}
		})
	}

	// Without its beta header, the edit is refused.
	_, err := c.Beta.Messages.New(t.Context(), betaParams(msgs, clearEdit(5000, 3, 0)))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Error(), "context-management-2025-06-27") {
		t.Errorf("no beta header: %v, want HTTP 400 naming the beta", err)
	}
}

// A request past compact_20260112's trigger gets a compaction block first,
// usage with the compaction and message iterations (the top-level counts
// the message's), and is charged both; the next request, carrying the
// block, is charged from it on. A trigger under 50,000 is refused.
func TestAnthropic_Compaction(t *testing.T) {
	s := fakemodel.NewAnthropicWith(t, &fakemodel.Options{Respond: func(fakemodel.Recorded) fakemodel.Turn { return fakemodel.Turn{Text: "Continuing from the summary."} }})
	c := anthropic.NewClient(option.WithBaseURL(s.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	edit := anthropic.BetaContextManagementConfigEditUnionParam{OfCompact20260112: &anthropic.BetaCompact20260112EditParam{
		Trigger: anthropic.BetaInputTokensTriggerParam{Value: 50_000}}}
	beta := anthropic.AnthropicBetaCompact2026_01_12
	msgs := toolSession(30, 8000) // about 60,000 tokens

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			params := betaParams(msgs, edit, beta)
			var msg anthropic.BetaMessage
			if stream {
				st := c.Beta.Messages.NewStreaming(t.Context(), params)
				for st.Next() {
					if err := msg.Accumulate(st.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
			} else {
				m, err := c.Beta.Messages.New(t.Context(), params)
				if err != nil {
					t.Fatal(err)
				}
				msg = *m
			}
			reqs := s.Requests()
			r := reqs[len(reqs)-1]
			if len(msg.Content) != 2 || msg.Content[0].Type != "compaction" || !strings.Contains(msg.Content[0].AsCompaction().Content, "Tail the build log") || msg.Content[1].Text != "Continuing from the summary." {
				t.Fatalf("content = %s, want a compaction block with the summary, then the text", msg.RawJSON())
			}
			its := msg.Usage.Iterations
			if len(its) != 2 || its[0].Type != "compaction" || its[1].Type != "message" {
				t.Fatalf("usage.iterations = %s, want compaction and message", msg.Usage.RawJSON())
			}
			if got := its[0].InputTokens + its[0].CacheReadInputTokens + its[0].CacheCreationInputTokens; int(got) != fullTokens(t, r) {
				t.Errorf("the compaction iteration read %d tokens, want the whole prompt, %d", got, fullTokens(t, r))
			}
			if msg.Usage.InputTokens != its[1].InputTokens || msg.Usage.OutputTokens != its[1].OutputTokens {
				t.Errorf("top-level usage %s is not the message iteration's", msg.Usage.RawJSON())
			}
			var sum int64
			for _, it := range its {
				sum += it.InputTokens + it.CacheReadInputTokens + it.CacheCreationInputTokens
			}
			if int(sum) != prompt(r.Usage) || int(its[0].OutputTokens+its[1].OutputTokens) != r.Usage.OutputTokens {
				t.Errorf("recorded usage %+v, want the iterations' sum (%d prompt tokens)", r.Usage, sum)
			}

			// The next request carries the block and is charged from it on.
			next := append(append([]anthropic.BetaMessageParam(nil), msgs...), msg.ToParam(),
				anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("And now?")))
			if _, err := c.Beta.Messages.New(t.Context(), betaParams(next, edit, beta)); err != nil {
				t.Fatal(err)
			}
			reqs = s.Requests()
			after := reqs[len(reqs)-1]
			if got := prompt(after.Usage); got > 1000 {
				t.Errorf("the request after the compaction was charged %d prompt tokens, want those from the block on (under 1,000)", got)
			}
		})
	}

	edit.OfCompact20260112.Trigger.Value = 1000
	_, err := c.Beta.Messages.New(t.Context(), betaParams(msgs, edit, beta))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Errorf("trigger 1000: %v, want HTTP 400", err)
	}
}

// prompt is every prompt token of u, cached or not.
func prompt(u fakemodel.Usage) int { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// fullTokens is the prompt tokens of a recorded request as sent.
func fullTokens(t *testing.T, r fakemodel.Recorded) int {
	n := 0
	for _, b := range anthropicBlockTokens(t, r) {
		n += b
	}
	return n
}
