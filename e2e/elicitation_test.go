package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// asker is an ACP client's user answering elicitations: answer picks the
// response (nil: never answers, until the agent withdraws the question).
type asker struct {
	answer func(acpsdk.UnstableCreateElicitationRequest) *acpsdk.UnstableCreateElicitationResponse

	mu        sync.Mutex
	asked     []acpsdk.UnstableCreateElicitationRequest
	completed []string
	withdrawn chan struct{}
	changed   testutil.Signal // notified after each question and completion
}

func (a *asker) elicitation(form, url bool) *acpclient.Elicitation {
	a.withdrawn = make(chan struct{}, 1)
	return &acpclient.Elicitation{Form: form, URL: url,
		Create: func(ctx context.Context, r acpsdk.UnstableCreateElicitationRequest) (acpsdk.UnstableCreateElicitationResponse, error) {
			a.mu.Lock()
			a.asked = append(a.asked, r)
			a.mu.Unlock()
			a.changed.Notify()
			if res := a.answer(r); res != nil {
				return *res, nil
			}
			<-ctx.Done()
			a.withdrawn <- struct{}{}
			return acpsdk.UnstableCreateElicitationResponse{}, ctx.Err()
		},
		Complete: func(_ context.Context, n acpsdk.UnstableCompleteElicitationNotification) {
			a.mu.Lock()
			a.completed = append(a.completed, string(n.ElicitationId))
			a.mu.Unlock()
			a.changed.Notify()
		},
	}
}

// callTool runs one /call in direct mode and returns the final text of the
// tool call.
func callTool(t *testing.T, a *agent, sid, call string) string {
	t.Helper()
	_, out := a.prompt(sid, "/call "+call)
	return contentText(finalToolUpdate(t, out))
}

// TestElicitation_Form: a server's form elicitation reaches the ACP client
// with its schema (defaults, enum), and each answer gets back to the
// server; defaults fill what the user left out.
func TestElicitation_Form(t *testing.T) {
	t.Parallel()
	var answer atomic.Pointer[acpsdk.UnstableCreateElicitationResponse] // set before each call
	u := &asker{answer: func(acpsdk.UnstableCreateElicitationRequest) *acpsdk.UnstableCreateElicitationResponse {
		return answer.Load()
	}}
	a := startAgentClient(t, &acpclient.Recorder{Elicitation: u.elicitation(true, false)}, nil)
	dir := t.TempDir()
	sid := a.newSession(dir, legacyFixtureServer("fixture", filepath.Join(dir, "calls.log")))

	accept := acpsdk.NewUnstableCreateElicitationResponseAccept()
	accept.Accept.Content = map[string]any{"name": "Grace"}
	for _, tt := range []struct {
		answer acpsdk.UnstableCreateElicitationResponse
		want   string
	}{
		{accept, "accept name=Grace color=green"}, // color: the schema's default
		{acpsdk.NewUnstableCreateElicitationResponseDecline(), "decline"},
		{acpsdk.NewUnstableCreateElicitationResponseCancel(), "cancel"},
	} {
		answer.Store(&tt.answer)
		if got := callTool(t, a, sid, "mcp__fixture__ask_name {}"); got != tt.want {
			t.Errorf("the server saw %q, want %q", got, tt.want)
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.asked) != 3 || u.asked[0].Form == nil {
		t.Fatalf("asked %d times (%+v), want 3 form elicitations", len(u.asked), u.asked)
	}
	f := u.asked[0].Form
	color, _ := f.RequestedSchema.Properties["color"].(map[string]any)
	name, _ := f.RequestedSchema.Properties["name"].(map[string]any)
	if !strings.Contains(f.Message, `"fixture"`) || !strings.Contains(f.Message, "What is your name?") ||
		name["default"] != "Ada" || color["default"] != "green" || color["oneOf"] == nil {
		t.Errorf("form = %+v; want the server named, its message, and the schema with defaults and the enum", f)
	}
	// URL mode was not advertised: sign_in sees no URL elicitation.
	if got := callTool(t, a, sid, "mcp__fixture__sign_in {}"); got != "no elicitation" {
		t.Errorf("sign_in without URL mode: %q", got)
	}
}

// TestElicitation_URL: a URL elicitation reaches the client, and its
// completion follows as elicitation/complete.
func TestElicitation_URL(t *testing.T) {
	t.Parallel()
	accept := acpsdk.NewUnstableCreateElicitationResponseAccept()
	u := &asker{answer: func(acpsdk.UnstableCreateElicitationRequest) *acpsdk.UnstableCreateElicitationResponse {
		return &accept
	}}
	a := startAgentClient(t, &acpclient.Recorder{Elicitation: u.elicitation(false, true)}, nil)
	dir := t.TempDir()
	sid := a.newSession(dir, legacyFixtureServer("fixture", filepath.Join(dir, "calls.log")))
	if got := callTool(t, a, sid, "mcp__fixture__sign_in {}"); got != "accept" {
		t.Fatalf("the server saw %q, want accept", got)
	}
	u.changed.Await(30*time.Second, func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		return len(u.completed) > 0
	})
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.asked) != 1 || u.asked[0].Url == nil || u.asked[0].Url.Url != "https://example.test/sign-in" || u.asked[0].Url.ElicitationId != "fixture-sign-in" {
		t.Fatalf("asked %+v, want one URL elicitation of the sign-in page", u.asked)
	}
	if len(u.completed) != 1 || u.completed[0] != "fixture-sign-in" {
		t.Errorf("completed = %v, want [fixture-sign-in]", u.completed)
	}
	// Form mode was not advertised: ask_name sees no form elicitation.
	if got := callTool(t, a, sid, "mcp__fixture__ask_name {}"); got != "no elicitation" {
		t.Errorf("ask_name without form mode: %q", got)
	}
}

// TestElicitation_CancelledTurnWithdrawsQuestion: the user cancels the turn
// while the form is open; the agent withdraws the question
// ($/cancel_request) and the turn ends cancelled.
func TestElicitation_CancelledTurnWithdrawsQuestion(t *testing.T) {
	t.Parallel()
	u := &asker{answer: func(acpsdk.UnstableCreateElicitationRequest) *acpsdk.UnstableCreateElicitationResponse { return nil }}
	a := startAgentClient(t, &acpclient.Recorder{Elicitation: u.elicitation(true, true)}, nil)
	dir := t.TempDir()
	sid := a.newSession(dir, legacyFixtureServer("fixture", filepath.Join(dir, "calls.log")))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	type result struct {
		stop acpsdk.StopReason
		err  error
	}
	done := make(chan result, 1)
	go func() {
		stop, err := a.Prompt(ctx, sid, "/call mcp__fixture__ask_name {}")
		done <- result{stop, err}
	}()
	end, _ := ctx.Deadline()
	u.changed.WaitFor(t, time.Until(end), func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		return len(u.asked) > 0
	}, "the client was never asked")
	if err := a.Conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-u.withdrawn:
	case <-ctx.Done():
		t.Fatal("cancelling the turn did not withdraw the elicitation")
	}
	r := <-done
	if r.err != nil || r.stop != acpsdk.StopReasonCancelled {
		t.Errorf("turn = %v, %v; want cancelled", r.stop, r.err)
	}
}

// TestElicitation_PlainClient: a client without elicitation gets no
// elicitation/create; the server sees no capability and copes.
func TestElicitation_PlainClient(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	dir := t.TempDir()
	sid := a.newSession(dir, legacyFixtureServer("fixture", filepath.Join(dir, "calls.log")))
	for _, tool := range []string{"ask_name", "sign_in"} {
		if got := callTool(t, a, sid, "mcp__fixture__"+tool+" {}"); got != "no elicitation" {
			t.Errorf("%s with a plain client: %q, want no elicitation", tool, got)
		}
	}
}
