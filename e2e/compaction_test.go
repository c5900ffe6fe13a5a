package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// compactionRun runs the official TypeScript SDK client, with the client
// capabilities caps, through one session on a fake Anthropic model with a
// window of 8,000 tokens: a prompt of about 3,000 tokens, a second one as
// large (which passes 80 % of the window: the agent compacts before its
// request), then /compact. The model answers "ok" and writes summary n
// for the nth summarization request. It returns the run and the model's
// summaries.
func compactionRun(t *testing.T, caps map[string]any) (tsClientRun, []string) {
	t.Helper()
	var mu sync.Mutex // Respond runs on the fake's handlers
	var summaries []string
	respond := func(r fakemodel.Recorded) fakemodel.Turn {
		mu.Lock()
		defer mu.Unlock()
		if _, msgs := readModelRequest(r.JSON); isSummaryRequest(msgs) {
			s := fmt.Sprintf("Summary %d: the user sent a long text twice; nothing is pending.", len(summaries)+1)
			summaries = append(summaries, s)
			return fakemodel.Turn{Text: s}
		}
		return fakemodel.Turn{Text: "ok"}
	}
	fake := fakemodel.NewAnthropicWith(t, &fakemodel.Options{Respond: respond})
	cfg := fakeAnthropicConfig(t, fake.URL, map[string]any{"contextWindow": 8000})
	run := tsClient{
		Capabilities: caps,
		Prompts:      []string{"first: " + blob(12_000), "second: " + blob(12_000), "/compact"},
		Env:          []string{"FAKE_ANTHROPIC_KEY=test-key"},
		Args:         []string{"--config", cfg},
	}.run(t)
	mu.Lock()
	defer mu.Unlock()
	if len(run.Stops) != 3 || run.Stops[0] != "end_turn" || run.Stops[1] != "end_turn" || run.Stops[2] != "end_turn" {
		t.Fatalf("stop reasons %v, want end_turn three times", run.Stops)
	}
	if len(summaries) != 2 {
		t.Fatalf("%d summarization requests, want 2 (the second prompt's, /compact's)", len(summaries))
	}
	for _, r := range fake.Requests() {
		if r.Status != 200 {
			t.Errorf("a model request answered HTTP %d: %.300s", r.Status, r.Body)
		}
	}
	return run, slices.Clone(summaries)
}

// TestCompaction_TypeScriptClient: an editor on the official TypeScript
// SDK 2.4.0 (which validates every update against the schema) that
// advertises session.compaction sees each compaction, automatic and by
// /compact, as compaction_update in_progress, then the summary in
// compaction_summary_chunk updates as the model streams it, then
// compaction_update completed with the whole summary, under one
// compactionId per compaction, and no agent message about it.
func TestCompaction_TypeScriptClient(t *testing.T) {
	t.Parallel()
	run, summaries := compactionRun(t, map[string]any{"session": map[string]any{"compaction": map[string]any{}}})
	type compaction struct {
		steps   []string
		chunks  strings.Builder
		summary string
	}
	var order []string
	byID := map[string]*compaction{}
	for _, u := range run.Updates {
		kind, _ := u.Update["sessionUpdate"].(string)
		if kind == "agent_message_chunk" {
			if text, _ := u.Update["content"].(map[string]any)["text"].(string); strings.Contains(text, "[Compacted") {
				t.Errorf("an agent message about a compaction besides its updates: %q", text)
			}
		}
		if kind != "compaction_update" && kind != "compaction_summary_chunk" {
			continue
		}
		id, _ := u.Update["compactionId"].(string)
		c := byID[id]
		if c == nil {
			c = &compaction{}
			byID[id] = c
			order = append(order, id)
		}
		switch kind {
		case "compaction_update":
			c.steps = append(c.steps, fmt.Sprint(u.Update["status"]))
			if blocks, _ := u.Update["summary"].([]any); len(blocks) == 1 {
				c.summary, _ = blocks[0].(map[string]any)["text"].(string)
			}
		default:
			if n := len(c.steps); n == 0 || c.steps[n-1] != "chunk" {
				c.steps = append(c.steps, "chunk")
			}
			text, _ := u.Update["content"].(map[string]any)["text"].(string)
			c.chunks.WriteString(text)
		}
	}
	if len(order) != 2 {
		t.Fatalf("%d compactions told, want 2: %+v", len(order), run.Updates)
	}
	for i, id := range order {
		c := byID[id]
		if got := strings.Join(c.steps, " "); id == "" || got != "in_progress chunk completed" {
			t.Errorf("compaction %d (%q): %s, want in_progress, summary chunks, completed", i+1, id, got)
		}
		if c.chunks.String() != summaries[i] || c.summary != summaries[i] {
			t.Errorf("compaction %d: chunks %q, completed summary %q; want the model's %q", i+1, c.chunks.String(), c.summary, summaries[i])
		}
	}
}

// TestCompaction_TypeScriptClientWithoutTheCapability: the same session,
// for an editor that does not advertise session.compaction: no compaction
// update, the agent messages of before.
func TestCompaction_TypeScriptClientWithoutTheCapability(t *testing.T) {
	t.Parallel()
	run, _ := compactionRun(t, nil)
	var text strings.Builder
	for _, u := range run.Updates {
		kind, _ := u.Update["sessionUpdate"].(string)
		if strings.HasPrefix(kind, "compaction") {
			t.Errorf("%s to a client without session.compaction: %v", kind, u.Update)
		}
		if kind == "agent_message_chunk" {
			s, _ := u.Update["content"].(map[string]any)["text"].(string)
			text.WriteString(s)
		}
	}
	if got := text.String(); !strings.Contains(got, "[Compacted the conversation because it neared the model's context window") ||
		!strings.Contains(got, "[Compacted the conversation because you asked (/compact)") {
		t.Errorf("agent messages %q, want both compactions told", got)
	}
}
