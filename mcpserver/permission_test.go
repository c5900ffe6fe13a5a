package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

var touchCall = fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "mcp__kit__touch", Args: `{}`}}}

// TestPermission_Elicitation: under the "ask" policy a tool call is put to
// the client as a form elicitation, on both sides of protocol 2026-07-28
// (elicitation/create during the call before it, an input-required result
// and a retried call from it on); "allow" with "always" runs it and every
// later call of the tool in the conversation, "decline" refuses it.
func TestPermission_Elicitation(t *testing.T) {
	for _, proto := range []struct{ name, version string }{{"multi-round-trip", ""}, {"elicitation-create", "2025-11-25"}} {
		for _, allow := range []bool{true, false} {
			name := proto.name + "/deny"
			if allow {
				name = proto.name + "/allow"
			}
			t.Run(name, func(t *testing.T) {
				fake := fakemodel.NewOpenAI(t, touchCall, fakemodel.Turn{Text: "finished"}, touchCall, fakemodel.Turn{Text: "again"})
				e := start(t, setup{fake: fake, ask: true})
				var mu sync.Mutex
				var asked []string
				cs := e.connectVersion(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					if allow {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true, "always": true}}, nil
					}
					return &mcp.ElicitResult{Action: "decline"}, nil
				}}, proto.version)
				r := ask(t, cs, "touch it", "").ok(t)
				mu.Lock()
				q := append([]string(nil), asked...)
				mu.Unlock()
				if len(q) != 1 || !strings.Contains(q[0], "mcp__kit__touch") {
					t.Fatalf("questions %q: want one naming mcp__kit__touch", q)
				}
				if r.text != "finished" {
					t.Errorf("answer %q", r.text)
				}
				second := requestText(t, fake.Requests()[1])
				if allow {
					if e.kit.touched.Load() != 1 || len(r.out.ToolCalls) != 1 || r.out.ToolCalls[0].Status != "completed" {
						t.Errorf("allowed: %d runs, toolCalls %+v; want it run once, completed", e.kit.touched.Load(), r.out.ToolCalls)
					}
					ask(t, cs, "touch it again", r.out.SessionKey).ok(t)
					mu.Lock()
					n := len(asked)
					mu.Unlock()
					if n != 1 || e.kit.touched.Load() != 2 {
						t.Errorf("after \"always\": %d questions, %d runs; want no new question and a second run", n, e.kit.touched.Load())
					}
					return
				}
				if e.kit.touched.Load() != 0 || len(r.out.ToolCalls) != 1 || r.out.ToolCalls[0].Status != "failed" {
					t.Errorf("declined: %d runs, toolCalls %+v; want it not run, failed", e.kit.touched.Load(), r.out.ToolCalls)
				}
				if !strings.Contains(second, "declined to run mcp__kit__touch") {
					t.Errorf("the model was not told of the refusal: %s", second)
				}
			})
		}
	}
}

// TestPermission_RefusedWithoutElicitation: a client without the
// elicitation capability cannot be asked: the call is refused, and both
// the model and the ask_agent result say which tool and why.
func TestPermission_RefusedWithoutElicitation(t *testing.T) {
	fake := fakemodel.NewOpenAI(t, touchCall, fakemodel.Turn{Text: "I could not touch it."})
	e := start(t, setup{fake: fake, ask: true})
	r := ask(t, e.connect(nil), "touch it", "").ok(t)
	if e.kit.touched.Load() != 0 || len(r.out.ToolCalls) != 1 || r.out.ToolCalls[0].Status != "failed" {
		t.Errorf("%d runs, toolCalls %+v; want it not run, failed", e.kit.touched.Load(), r.out.ToolCalls)
	}
	if !strings.Contains(r.text, "I could not touch it.") || !strings.Contains(r.text, "Refused: the tool mcp__kit__touch needs permission") || !strings.Contains(r.text, "elicitation") {
		t.Errorf("result %q: want the answer and a note naming the refused tool and why", r.text)
	}
	if second := requestText(t, fake.Requests()[1]); !strings.Contains(second, "mcp__kit__touch was refused") || !strings.Contains(second, "cannot be asked") {
		t.Errorf("the model was not told why the call was refused: %s", second)
	}
}
