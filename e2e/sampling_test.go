package e2e

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// samplingTurn runs one prompt whose model turn calls the fixture's sample
// tool with args, and returns the final update of that call.
func samplingTurn(t *testing.T, a *agent, sid, id string) *acpsdk.SessionToolCallUpdate {
	t.Helper()
	stop, out := a.prompt(sid, "ask the fixture for a haiku")
	if stop != acpsdk.StopReasonEndTurn {
		t.Fatalf("stop = %s\n%s", stop, dump(out))
	}
	for _, u := range out {
		if tu := u.Update.ToolCallUpdate; tu != nil && string(tu.ToolCallId) == id && tu.Status != nil &&
			(*tu.Status == acpsdk.ToolCallStatusCompleted || *tu.Status == acpsdk.ToolCallStatusFailed) {
			return tu
		}
	}
	t.Fatalf("no end of %s in\n%s", id, dump(out))
	return nil
}

// TestSampling_WithModel: a server's sampling/createMessage is served by the
// session's model after the user allows it (session/request_permission
// naming the server); a rejection reaches the server as an error; "allow
// always" asks once for the rest of the session.
func TestSampling_WithModel(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	a := startAgentWith(t, []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + fake.URL + "/v1"}, "--model", "openai:gpt-fake")
	perms := &permissionAnswers{}
	var mu sync.Mutex
	var questions []acpsdk.RequestPermissionRequest
	a.Client.SetPermission(func(r acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse {
		mu.Lock()
		questions = append(questions, r)
		mu.Unlock()
		return perms.answer(r)
	})
	sid := a.newSession(t.TempDir(), legacyFixtureServer("fixture", ""))
	call := func(id, args string) fakemodel.Turn {
		return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "mcp__fixture__sample", Args: args}}}
	}
	const samplingTitle = "fixture/sample" // asked on the call in flight, keeping its title

	// 1. Allowed once: the fake model gets the server's messages and its
	// answer reaches the server.
	fake.Push(call("call_autumn", `{"topic":"autumn"}`), fakemodel.Turn{Text: "Red leaves drift and fall"}, fakemodel.Turn{Text: "Done."})
	perms.queue("allow_once", "allow_once") // the tool call, then its sampling request
	before := len(fake.Requests())
	end := samplingTurn(t, a, sid, "call_autumn")
	if got := contentText(end); *end.Status != acpsdk.ToolCallStatusCompleted || got != "Red leaves drift and fall [model openai:gpt-fake, endTurn]" {
		t.Errorf("allowed: %s %q", *end.Status, got)
	}
	if q := perms.questions(); len(q) != 2 || q[1] != samplingTitle {
		t.Errorf("questions = %q, want the tool call, then %q", q, samplingTitle)
	}
	mu.Lock()
	q := questions[1]
	mu.Unlock()
	var shown string
	if len(q.ToolCall.Content) == 1 && q.ToolCall.Content[0].Content != nil && q.ToolCall.Content[0].Content.Content.Text != nil {
		shown = q.ToolCall.Content[0].Content.Content.Text.Text
	}
	if q.ToolCall.ToolCallId != "call_autumn" || q.ToolCall.RawInput != nil || !strings.Contains(shown, `MCP server "fixture" asks the model openai:gpt-fake`) ||
		!strings.Contains(shown, "at most 100 tokens") || !strings.Contains(shown, "user: Write a haiku about autumn.") ||
		len(q.Options) != 3 || !strings.Contains(q.Options[1].Name, `MCP server "fixture"`) {
		t.Errorf("the sampling question = %+v, content %q; want it on call_autumn showing the server, the model, maxTokens and the message, and allow always naming the server", q, shown)
	}
	reqs := fake.Requests()
	if len(reqs) != before+3 {
		t.Fatalf("%d model requests, want 3 (turn, sampling, turn)", len(reqs)-before)
	}
	sampling, _ := json.Marshal(reqs[before+1].JSON)
	if s := string(sampling); !strings.Contains(s, "Write a haiku about autumn.") || !strings.Contains(s, "You write haiku.") || strings.Contains(s, `"tools"`) || strings.Contains(s, "ask the fixture") {
		t.Errorf("the sampling request to the model = %s; want the server's system prompt and message only, no tools, no conversation", s)
	}

	// 2. Rejected: the server gets an error, the model is not asked.
	fake.Push(call("call_rejected", `{}`), fakemodel.Turn{Text: "It was refused."})
	perms.queue("allow_once", "reject_once")
	before = len(fake.Requests())
	end = samplingTurn(t, a, sid, "call_rejected")
	if got := contentText(end); *end.Status != acpsdk.ToolCallStatusFailed || !strings.Contains(got, "sampling failed") || !strings.Contains(got, "refused") {
		t.Errorf("rejected: %s %q", *end.Status, got)
	}
	if n := len(fake.Requests()) - before; n != 2 {
		t.Errorf("%d model requests, want 2 (no sampling)", n)
	}

	// 3. Allowed always: two requests, one question; later turns ask no more.
	fake.Push(call("call_always", `{"times":2}`), fakemodel.Turn{Text: "one"}, fakemodel.Turn{Text: "two"}, fakemodel.Turn{Text: "Two haiku."})
	perms.queue("allow_once", "allow_always")
	asked := len(perms.questions())
	end = samplingTurn(t, a, sid, "call_always")
	if got := contentText(end); got != "one [model openai:gpt-fake, endTurn]\ntwo [model openai:gpt-fake, endTurn]" {
		t.Errorf("allowed always: %q", got)
	}
	fake.Push(call("call_again", `{}`), fakemodel.Turn{Text: "three"}, fakemodel.Turn{Text: "Again."})
	perms.queue("allow_once")
	end = samplingTurn(t, a, sid, "call_again")
	if got := contentText(end); got != "three [model openai:gpt-fake, endTurn]" {
		t.Errorf("after allow always: %q", got)
	}
	if q := perms.questions()[asked:]; len(q) != 3 || q[1] != samplingTitle {
		t.Errorf("questions = %q, want the tool call, one sampling question, the tool call", q)
	}
}

// TestSampling_DirectMode: without a model no sampling is offered, and a
// server that asks anyway gets a clear refusal.
func TestSampling_DirectMode(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	sid := a.newSession(t.TempDir(), legacyFixtureServer("fixture", ""))
	got := callTool(t, a, sid, "mcp__fixture__sample {}")
	if !strings.HasPrefix(got, "no sampling capability; sampling failed: ") || !strings.Contains(got, "sampling is not available") {
		t.Errorf("direct mode: %q, want no capability and a clear refusal", got)
	}
}
