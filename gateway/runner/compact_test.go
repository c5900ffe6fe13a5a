package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// compactionSteps are the compaction reports among evs, in order.
func compactionSteps(evs []gateway.Event) []gateway.CompactionReport {
	var out []gateway.CompactionReport
	for _, e := range evs {
		if e.Kind == gateway.EventCompaction {
			out = append(out, *e.Compaction)
		}
	}
	return out
}

// streamingSummaries is a model that streams each summary it writes in
// three text deltas (with a thought first, which is not the summary), and
// answers anything else "ok". Summary n is "summary n: part a, part b,
// part c".
func streamingSummaries(block func(ctx context.Context)) *fakeProvider {
	var mu sync.Mutex
	n := 0
	return &fakeProvider{complete: func(ctx context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
		if !isSummaryRequest(req) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return say("ok", gateway.Usage{})
		}
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		emit(gateway.Event{Kind: gateway.EventThoughtDelta, Text: "thinking"})
		pieces := []string{fmt.Sprintf("\nsummary %d: part a, ", i), "part b, ", "part c\n"}
		for j, p := range pieces {
			emit(gateway.Event{Kind: gateway.EventTextDelta, Text: p})
			if j == 0 && block != nil {
				block(ctx)
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
		}
		return &gateway.Response{Message: gateway.Message{Content: text(strings.Join(pieces, ""))},
			Usage: gateway.Usage{InputTokens: 10, OutputTokens: 5, Requests: 1}}, nil
	}}
}

// A compaction is reported step by step under one ID: its start, the
// summary's text as the model streams it (of the last summarization
// request only: a history summarized a part at a time replaces the earlier
// parts' summaries), then its end with the whole summary, trimmed.
func TestRunner_CompactionStreamsItsSummary(t *testing.T) {
	hist := &gateway.MemoryHistory{}
	bigHistory(t, hist, 20, 4000) // more than one summarization request
	r := New(&gateway.Registry{}, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: streamingSummaries(nil), ContextWindow: 20_000}}})
	evs, emit := collect()
	if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: text("newest")}, emit); err != nil {
		t.Fatal(err)
	}
	reps := compactionSteps(*evs)
	if len(reps) < 2 {
		t.Fatalf("compaction reports = %+v", reps)
	}
	first, last := reps[0], reps[len(reps)-1]
	if first.Status != gateway.CompactionInProgress || first.Delta != "" || first.Before == 0 {
		t.Errorf("first report = %+v, want the start, with the size before", first)
	}
	if last.Status != gateway.CompactionCompleted || !strings.HasPrefix(last.Summary, "summary ") || strings.TrimSpace(last.Summary) != last.Summary || last.After >= last.Before {
		t.Fatalf("last report = %+v, want completed with the trimmed summary", last)
	}
	var streamed strings.Builder
	for _, rep := range reps {
		if rep.ID != first.ID || !strings.HasPrefix(rep.ID, "compaction_") || rep.Reason != "threshold" {
			t.Errorf("report %+v: want ID %q and reason threshold on every step", rep, first.ID)
		}
		streamed.WriteString(rep.Delta)
	}
	if got := strings.TrimSpace(streamed.String()); got != last.Summary {
		t.Errorf("streamed summary %q, want the last request's only, %q", got, last.Summary)
	}
	if n := len(reps); n != 5 {
		t.Errorf("%d reports, want 5 (start, three pieces, end)", n)
	}
	if v := hist.View(t.Context(), "k"); v.Compaction == nil || v.Compaction.Summary != last.Summary {
		t.Errorf("stored compaction %+v, want the reported summary", v.Compaction)
	}
}

// A turn cancelled while the model writes the summary ends its compaction
// as cancelled (not failed), after what was streamed of it; nothing is
// compacted, and /compact says it was cancelled.
func TestRunner_CancelledCompaction(t *testing.T) {
	hist := &gateway.MemoryHistory{}
	bigHistory(t, hist, 3, 100)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	prov := streamingSummaries(func(ctx context.Context) { <-ctx.Done() })
	r := New(&gateway.Registry{}, &Options{History: hist, Models: []gateway.Model{{ID: "m", Provider: prov, ContextWindow: 100_000}}})
	var mu sync.Mutex
	var reps []gateway.CompactionReport
	var answer strings.Builder
	stop, err := r.Run(ctx, gateway.SendRequest{SessionKey: "k", Message: text("/compact"), Command: &gateway.Command{Name: "compact"}}, func(e gateway.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == gateway.EventTextDelta {
			answer.WriteString(e.Text)
		}
		if e.Kind != gateway.EventCompaction {
			return
		}
		reps = append(reps, *e.Compaction)
		if e.Compaction.Delta != "" {
			cancel() // the user cancels once the summary begins
		}
	})
	if err != nil || stop != gateway.StopCancelled {
		t.Fatalf("Run = %s, %v; want cancelled", stop, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reps) != 3 || reps[0].Status != gateway.CompactionInProgress || reps[1].Delta == "" ||
		reps[2].Status != gateway.CompactionCancelled || reps[2].Err != "" || reps[2].ID != reps[0].ID || reps[2].Reason != "command" {
		t.Errorf("compaction reports = %+v, want in_progress, a piece of the summary, cancelled", reps)
	}
	if got := answer.String(); got != "The compaction was cancelled. The conversation goes on as it was." {
		t.Errorf("/compact answered %q", got)
	}
	if v := hist.View(t.Context(), "k"); v.Compaction != nil {
		t.Errorf("a cancelled compaction was kept: %+v", v.Compaction)
	}
}
