package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// modelBackends runs the model scenarios against both fake providers: the
// agent reaches them exactly as it reaches the real APIs.
var modelBackends = []struct {
	name  string
	fake  func(t testing.TB, turns ...fakemodel.Turn) *fakemodel.Server
	start func(t testing.TB, url string) *agent
}{
	{"openai", fakemodel.NewOpenAI, func(t testing.TB, url string) *agent {
		return startAgentWith(t, []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + url + "/v1"}, "--model", "openai:gpt-fake")
	}},
	{"anthropic", fakemodel.NewAnthropic, func(t testing.TB, url string) *agent {
		cfg := filepath.Join(t.TempDir(), "config.json")
		data, _ := json.Marshal(map[string]any{"model": map[string]any{"provider": "anthropic", "name": "claude-fake", "baseURL": url, "apiKeyEnv": "FAKE_ANTHROPIC_KEY"}})
		if err := os.WriteFile(cfg, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return startAgentWith(t, []string{"FAKE_ANTHROPIC_KEY=test-key"}, "--config", cfg)
	}},
}

// permissionAnswers answers session/request_permission with the queued
// options, recording each question.
type permissionAnswers struct {
	mu      sync.Mutex
	answers []string
	asked   []string
}

func (p *permissionAnswers) answer(req acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse {
	p.mu.Lock()
	defer p.mu.Unlock()
	title := ""
	if req.ToolCall.Title != nil {
		title = *req.ToolCall.Title
	}
	p.asked = append(p.asked, title)
	if len(p.answers) == 0 {
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}
	}
	a := p.answers[0]
	p.answers = p.answers[1:]
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(acpsdk.PermissionOptionId(a))}
}

func (p *permissionAnswers) queue(a ...string) {
	p.mu.Lock()
	p.answers = append(p.answers, a...)
	p.mu.Unlock()
}
func (p *permissionAnswers) questions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

func textChunks(updates []acpsdk.SessionNotification) int {
	n := 0
	for _, u := range updates {
		if u.Update.AgentMessageChunk != nil {
			n++
		}
	}
	return n
}

// TestModel_MainScenario: a model calls server-everything's echo and
// get-tiny-image through the agent, with permissions, streaming, and
// cancellation during the model stream and during a slow tool.
func TestModel_MainScenario(t *testing.T) {
	for _, be := range modelBackends {
		t.Run(be.name, func(t *testing.T) {
			fake := be.fake(t)
			modelScenario(t, be.start(t, fake.URL), fake)
		})
	}
}

// modelScenario drives agent a, whose model is the fake server, through the
// main model scenario.
func modelScenario(t *testing.T, a *agent, fake *fakemodel.Server) {
	perms := &permissionAnswers{}
	a.Client.SetPermission(perms.answer)
	sid := a.newSession(t.TempDir(), everythingServer("everything"), fixtureServer("fixture", ""))

	// 1. echo and get-tiny-image (read-only: no question), and the
	// fixture's image (not read-only: asked, rejected).
	fake.Push(
		fakemodel.Turn{Text: "Let me use the tools.", ToolCalls: []fakemodel.ToolCall{
			{ID: "call_echo", Name: "mcp__everything__echo", Args: `{"message":"from the model"}`},
			{ID: "call_tiny", Name: "mcp__everything__get-tiny-image", Args: `{}`},
			{ID: "call_img", Name: "mcp__fixture__image", Args: `{}`},
		}},
		fakemodel.Turn{Text: "The echo worked; you declined the image, so I will describe it instead."},
	)
	perms.queue("reject_once")
	stop, out := a.prompt(sid, "echo something and show me the tiny image")
	if stop != acpsdk.StopReasonEndTurn {
		t.Fatalf("stop = %s\n%s", stop, dump(out))
	}
	if got := text(out); got != "Let me use the tools.The echo worked; you declined the image, so I will describe it instead." || textChunks(out) < 4 {
		t.Errorf("text %q in %d chunks, want it streamed", got, textChunks(out))
	}
	ends := map[string]*acpsdk.SessionToolCallUpdate{}
	for _, u := range out {
		if tu := u.Update.ToolCallUpdate; tu != nil && tu.Status != nil && (*tu.Status == acpsdk.ToolCallStatusCompleted || *tu.Status == acpsdk.ToolCallStatusFailed) {
			ends[string(tu.ToolCallId)] = tu
		}
	}
	if e := ends["call_echo"]; e == nil || *e.Status != acpsdk.ToolCallStatusCompleted || contentText(e) != "Echo: from the model" {
		t.Errorf("echo: %+v", e)
	}
	if e := ends["call_tiny"]; e == nil || *e.Status != acpsdk.ToolCallStatusCompleted || len(e.Content) < 2 || e.Content[1].Content.Content.Image == nil {
		t.Errorf("get-tiny-image: %+v", e)
	}
	if e := ends["call_img"]; e == nil || *e.Status != acpsdk.ToolCallStatusFailed || !strings.Contains(contentText(e), "declined") {
		t.Errorf("declined image: %+v", e)
	}
	if q := perms.questions(); len(q) != 1 || q[0] != "fixture/image" {
		t.Errorf("asked %v, want only the fixture's image", q)
	}

	// 2. The image again: allowed always. 3. Once more: not asked.
	fake.Push(
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_img2", Name: "mcp__fixture__image", Args: `{}`}}},
		fakemodel.Turn{Text: "Here it is."},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_img3", Name: "mcp__fixture__image", Args: `{}`}}},
		fakemodel.Turn{Text: "And again."},
	)
	perms.queue("allow_always")
	_, out = a.prompt(sid, "please show it")
	if e := finalToolUpdate(t, out); *e.Status != acpsdk.ToolCallStatusCompleted || len(e.Content) < 2 || e.Content[1].Content.Content.Image == nil {
		t.Errorf("allowed image:\n%s", dump(out))
	}
	_, out = a.prompt(sid, "once more")
	if e := finalToolUpdate(t, out); *e.Status != acpsdk.ToolCallStatusCompleted {
		t.Errorf("third image:\n%s", dump(out))
	}
	if q := perms.questions(); len(q) != 2 {
		t.Errorf("asked %d times, want 2 (allow always covers the third call)", len(q))
	}
	// The model got the history, and the image result in the form its
	// API carries.
	reqs := fake.Requests()
	body := string(reqs[len(reqs)-1].Body)
	for _, want := range []string{"echo something and show me the tiny image", "from the model", "declined", "please show it", "once more"} {
		if !strings.Contains(body, want) {
			t.Errorf("the last model request lacks %q", want)
		}
	}

	// 4. Cancel during the model stream; the next prompt works.
	fake.Push(fakemodel.Turn{Text: strings.Repeat("slowly streaming words ", 40), Delay: 100 * time.Millisecond})
	cancelDuring(t, a, sid, "write a long answer", func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil })
	fake.Push(fakemodel.Turn{Text: "Back again."})
	if stop, out := a.prompt(sid, "are you there?"); stop != acpsdk.StopReasonEndTurn || text(out) != "Back again." {
		t.Errorf("after cancel: %s %q", stop, text(out))
	}

	// 5. Cancel during a slow tool; the next prompt works.
	fake.Push(fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_slow", Name: "mcp__everything__trigger-long-running-operation", Args: `{"duration": 60, "steps": 60}`}}})
	cancelDuring(t, a, sid, "run the long operation", toolRunning)
	fake.Push(fakemodel.Turn{Text: "Still here."})
	if stop, out := a.prompt(sid, "and now?"); stop != acpsdk.StopReasonEndTurn || text(out) != "Still here." {
		t.Errorf("after cancelling a tool: %s %q", stop, text(out))
	}
}

// cancelDuring sends prompt, waits for an update matching ready, cancels, and
// checks the turn ends with stopReason cancelled within 2 s.
func cancelDuring(t *testing.T, a *agent, sid, prompt string, ready func(acpsdk.SessionNotification) bool) {
	t.Helper()
	from := len(a.Client.Updates())
	done := make(chan acpsdk.StopReason, 1)
	go func() {
		stop, err := a.Prompt(context.Background(), sid, prompt)
		if err != nil {
			t.Errorf("%s: %v", prompt, err)
		}
		done <- stop
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := a.Client.WaitFor(ctx, from, ready); err != nil {
		t.Fatalf("%s: %v\n%s", prompt, err, dump(a.Client.Updates()[from:]))
	}
	start := time.Now()
	if err := a.Conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	select {
	case stop := <-done:
		if stop != acpsdk.StopReasonCancelled {
			t.Errorf("%s: stopReason %s, want cancelled", prompt, stop)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: ended %v after session/cancel, want within 2 s", prompt, d)
		}
	case <-ctx.Done():
		t.Fatalf("%s: the turn did not end after session/cancel", prompt)
	}
}
