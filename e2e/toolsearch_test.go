package e2e

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// foundRE reads the first tool a search_tools result names.
var foundRE = regexp.MustCompile(`(?m)^- (\S+): `)

// searcher is a scripted model for a session of many tools: it searches for
// an echo tool when it has none, calls the one found, then answers. It
// records the tools each request offered.
type searcher struct {
	mu    sync.Mutex
	tools [][]string
	found string
}

func (s *searcher) respond(r fakemodel.Recorded) fakemodel.Turn {
	tools, msgs := readModelRequest(r.JSON)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools = append(s.tools, tools)
	last := msgs[len(msgs)-1]
	switch {
	case last.role == "user" && s.found != "" && slices.Contains(tools, s.found):
		return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: s.found, Args: `{"message":"again"}`}}}
	case last.role == "user":
		return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "search_tools", Args: `{"query":"echo a message back"}`}}}
	case last.role == "tool" && strings.HasPrefix(last.text, "Echo: "):
		return fakemodel.Turn{Text: "Echoed."}
	case last.role == "tool":
		if m := foundRE.FindStringSubmatch(last.text); m != nil {
			s.found = m[1]
			return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: s.found, Args: `{"message":"found"}`}}}
		}
	}
	return fakemodel.Turn{Text: "I am lost: " + last.text}
}

// TestContext_ManyToolsAreSearched: a session with more than 50 tools (three
// fixture servers of 20) offers the model its built-in tools and
// search_tools instead of all of them; a tool that search_tools finds is
// offered from the next request on, appended after the others (the prompt
// cache's prefix stays), works, and stays offered in the next turn.
func TestContext_ManyToolsAreSearched(t *testing.T) {
	t.Parallel()
	for _, be := range ctxBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			model := &searcher{}
			fake := be.fake(t, &fakemodel.Options{ContextWindow: 200_000, Respond: model.respond})
			a := startCtxAgent(t, map[string]any{"model": ctxModel(be, fake.URL, "fake-model", 200_000), "store": map[string]any{"path": "memory"}})
			sid := a.newSession(t.TempDir(),
				acpclient.Stdio("fx1", fixtureBin, nil, nil), acpclient.Stdio("fx2", fixtureBin, nil, nil), acpclient.Stdio("fx3", fixtureBin, nil, nil))
			for _, prompt := range []string{"echo something", "echo it again"} {
				stop, out := a.prompt(sid, prompt)
				if stop != acpsdk.StopReasonEndTurn || text(out) != "Echoed." {
					t.Fatalf("%s: stop %s, text %q\n%s", prompt, stop, text(out), dump(out))
				}
				if u := finalToolUpdate(t, out); *u.Status != acpsdk.ToolCallStatusCompleted || !strings.HasPrefix(contentText(u), "Echo: ") {
					t.Errorf("%s: the echo call: %s", prompt, contentText(u))
				}
			}
			model.mu.Lock()
			defer model.mu.Unlock()
			if len(model.tools) != 5 {
				t.Fatalf("%d model requests, want 5 (search, call, answer; call, answer)", len(model.tools))
			}
			first := model.tools[0]
			if !slices.Contains(first, "search_tools") || slices.ContainsFunc(first, func(n string) bool { return strings.HasPrefix(n, "mcp__fx") }) {
				t.Errorf("the first request offers %v; want search_tools and no fixture tool", first)
			}
			if !strings.HasSuffix(model.found, "__echo") {
				t.Fatalf("search_tools found %q first, want an echo tool", model.found)
			}
			for i, tools := range model.tools[1:] {
				if !slices.Equal(tools[:min(len(first), len(tools))], first) || !slices.Contains(tools[len(first):], model.found) {
					t.Errorf("request %d offers %v; want the first request's tools, then those found, %s among them", i+2, tools, model.found)
				}
			}
		})
	}
}
