package e2e

import (
	"fmt"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// TestContext_TooLongIsCompactedAndRetried: a model whose window is smaller
// than the agent believes (model.contextWindow set too large, so no
// compaction comes in time) refuses a prompt over its window with the API's
// real HTTP 400; the agent recognizes the refusal, compacts, and retries
// once, so the turn goes on: the refusal is followed by summarization
// requests and a retry that fits. The refusal names the real window, which
// the agent uses from then on (usage_update's size, compactions in time):
// one refusal in the whole session.
func TestContext_TooLongIsCompactedAndRetried(t *testing.T) {
	t.Parallel()
	const window, believed, turns = 60_000, 1_000_000, 30
	for _, be := range ctxBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			cpuBound(t)
			model := &toolThenAnswer{tool: "mcp__fx__env", args: `{}`}
			fake := be.fake(t, &fakemodel.Options{ContextWindow: window, Respond: model.respond})
			a := startCtxAgent(t, map[string]any{
				"model":       ctxModel(be, fake.URL, "fake-model", believed),
				"store":       map[string]any{"path": "memory"},
				"permissions": map[string]any{"allow": []string{"mcp__fx__env"}},
			})
			sid := a.newSession(t.TempDir(), acpclient.Stdio("fx", fixtureBin, nil, map[string]string{"FIXTURE_BLOB": blob(20_000)}))
			refusals := 0
			for i := 1; i <= turns; i++ {
				prompt := fmt.Sprintf("Turn %d: show me the environment", i)
				from := len(fake.Requests())
				stop, out := a.prompt(sid, prompt)
				reply := text(out)
				if stop != acpsdk.StopReasonEndTurn || !strings.HasSuffix(reply, "Done: "+prompt) || strings.Contains(reply, "The turn failed") {
					t.Fatalf("turn %d: stop %s, text %q", i, stop, reply)
				}
				reqs := fake.Requests()[from:]
				n := 0 // refusals in this turn
				for j, r := range reqs {
					_, msgs := readModelRequest(r.JSON)
					switch {
					case r.Status == 400:
						n++
						k := j + 1 // after the summarization requests: the retry
						for k < len(reqs) && reqs[k].Status == 200 {
							if _, next := readModelRequest(reqs[k].JSON); !isSummaryRequest(next) {
								break
							}
							k++
						}
						if k == j+1 || k >= len(reqs) || reqs[k].Status != 200 {
							t.Fatalf("turn %d: request %d was refused, and not followed by summarization requests and a retry that fit", i, j)
						}
						if _, retry := readModelRequest(reqs[k].JSON); !retry[len(retry)-1].same(msgs[len(msgs)-1]) {
							t.Errorf("turn %d: the retry ends with %.200q, the refused request with %.200q", i, retry[len(retry)-1], msgs[len(msgs)-1])
						}
					case r.Status != 200:
						t.Fatalf("turn %d: request %d: HTTP %d", i, j, r.Status)
					case !isSummaryRequest(msgs) && lastUserText(msgs) != prompt:
						t.Fatalf("turn %d: request %d ends with user text %.200q", i, j, lastUserText(msgs))
					}
				}
				if got := strings.Count(reply, "[Compacted the conversation because the model refused it as too long"); got != n {
					t.Errorf("turn %d: %d requests refused, %d compactions told", i, n, got)
				}
				refusals += n
				size := believed // the configured window, until a refusal names the real one
				if refusals > 0 {
					size = window
				}
				if uu := usageUpdates(out); len(uu) != 1 || uu[0].Update.UsageUpdate.Size != size || uu[0].Update.UsageUpdate.Used > window {
					t.Errorf("turn %d: usage_update %s; want one, of a window of %d", i, dump(uu), size)
				}
			}
			if refusals != 1 {
				t.Fatalf("%d requests of %d turns were refused; want one: the session outgrows the window once, and the refusal teaches the window", refusals, turns)
			}
			t.Logf("%s: %d turns, %d requests, %d refused as too long", be.name, turns, len(fake.Requests()), refusals)
		})
	}
}
