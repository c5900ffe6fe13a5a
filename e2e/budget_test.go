package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// The notes the runner adds to a cut result and to a page of it
// (gateway/runner/budget.go).
var (
	cutNoteRE  = regexp.MustCompile(`\[acp-agent: this result is (\d+) characters .* the model was shown the first (\d+) characters.* call read_tool_result with \{"toolCallId": "([^"]+)", "offset": (\d+)\} to read on\.\]$`)
	pageNoteRE = regexp.MustCompile(`\n\[characters (\d+) to (\d+) of (\d+)(?:; read on with offset (\d+)|; the end of the result)\]$`)
)

// pager is a scripted model that calls the env tool, then reads its cut
// result to the end with read_tool_result, recording what it was shown.
type pager struct {
	mu    sync.Mutex
	seen  []string // each tool result the model was shown, in order
	tools [][]string
}

func (p *pager) respond(r fakemodel.Recorded) fakemodel.Turn {
	tools, msgs := readModelRequest(r.JSON)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tools = append(p.tools, tools)
	last := msgs[len(msgs)-1]
	if last.role == "user" {
		return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_env", Name: "mcp__fx__env", Args: `{}`}}}
	}
	p.seen = append(p.seen, last.text)
	read := func(id, offset string) fakemodel.Turn {
		args, _ := json.Marshal(map[string]any{"toolCallId": id, "offset": json.Number(offset)})
		return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprintf("call_read_%d", len(p.seen)), Name: "read_tool_result", Args: string(args)}}}
	}
	if m := cutNoteRE.FindStringSubmatch(last.text); m != nil {
		return read(m[3], m[4])
	}
	if m := pageNoteRE.FindStringSubmatch(last.text); m != nil && m[4] != "" {
		return read("call_env", m[4])
	}
	return fakemodel.Turn{Text: "Read it all."}
}

// TestContext_LargeResultIsCutAndPaged: a tool result over the budget of
// context.resultTokens reaches the model cut, with a note; read_tool_result,
// offered from then on, pages through the rest, and the pages put together
// are the whole result the editor was shown.
func TestContext_LargeResultIsCutAndPaged(t *testing.T) {
	t.Parallel()
	for _, be := range ctxBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			model := &pager{}
			fake := be.fake(t, &fakemodel.Options{ContextWindow: 200_000, Respond: model.respond})
			a := startCtxAgent(t, map[string]any{
				"model":       ctxModel(be, fake.URL, "fake-model", 200_000),
				"store":       map[string]any{"path": "memory"},
				"permissions": map[string]any{"allow": []string{"mcp__fx__env"}},
				"context":     map[string]any{"resultTokens": 2000}, // 8,000 characters
			})
			sid := a.newSession(t.TempDir(), acpclient.Stdio("fx", fixtureBin, nil, map[string]string{"FIXTURE_BLOB": blob(20_000)}))
			stop, out := a.prompt(sid, "show me the environment")
			if stop != acpsdk.StopReasonEndTurn || !strings.HasSuffix(text(out), "Read it all.") {
				t.Fatalf("stop %s, text %q", stop, text(out))
			}
			var whole string // the env result as the editor got it
			for _, u := range out {
				if tu := u.Update.ToolCallUpdate; tu != nil && tu.ToolCallId == "call_env" && tu.Status != nil && *tu.Status == acpsdk.ToolCallStatusCompleted {
					whole = contentText(tu)
				}
			}
			model.mu.Lock()
			defer model.mu.Unlock()
			if len(whole) < 20_000 || len(model.seen) < 3 {
				t.Fatalf("the env result is %d characters; the model was shown %d results, want the cut one and at least two pages", len(whole), len(model.seen))
			}
			if slices.Contains(model.tools[0], "read_tool_result") || !slices.Contains(model.tools[1], "read_tool_result") {
				t.Errorf("read_tool_result offered: first request %v, second %v; want it once a result was cut", model.tools[0], model.tools[1])
			}
			m := cutNoteRE.FindStringSubmatch(model.seen[0])
			if m == nil {
				t.Fatalf("the cut result has no note: ...%q", model.seen[0][max(0, len(model.seen[0])-400):])
			}
			size, shown, offset := atoi(m[1]), atoi(m[2]), atoi(m[4])
			if size != len(whole) || shown != offset || shown > 8000 || shown < 7000 || !strings.HasPrefix(model.seen[0], whole[:shown]) || m[3] != "call_env" {
				t.Errorf("the note says %d characters, %d shown, read on at %d for %s; want %d characters, at most 8,000 shown, those a prefix of the result", size, shown, offset, m[3], len(whole))
			}
			for i, page := range model.seen[1:] {
				p := pageNoteRE.FindStringSubmatch(page)
				if p == nil {
					t.Fatalf("page %d has no note: ...%q", i+1, page[max(0, len(page)-200):])
				}
				from, to, of := atoi(p[1]), atoi(p[2]), atoi(p[3])
				if from != offset || of != len(whole) || to <= from || page[:len(page)-len(p[0])] != whole[from:min(to, len(whole))] {
					t.Fatalf("page %d: characters %d to %d of %d, want from %d of %d, the result's own text", i+1, from, to, of, offset, len(whole))
				}
				offset = to
			}
			if offset != len(whole) {
				t.Errorf("the pages end at %d of %d characters", offset, len(whole))
			}
		})
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
