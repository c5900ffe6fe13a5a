package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// TestGateway_TwoTranslatorsTakeTurnsOnOneSession: two translators
// ("acp-agent --gateway URL --store gateway") open one stored session, on
// one gateway replica and on two replicas of a fleet, with the same
// outcome: each loads it while the other has it open, each prompt's model
// request holds the other translator's turns, and a prompt while the
// other's turn runs is refused, naming the session and the replica that
// runs it.
func TestGateway_TwoTranslatorsTakeTurnsOnOneSession(t *testing.T) {
	t.Parallel()
	for _, setup := range []struct {
		name string
		// start runs the gateway and returns the URLs of translators A and B.
		start func(t *testing.T, env []string) (a, b string)
	}{
		{"one replica", func(t *testing.T, env []string) (string, string) {
			g := startGateway(t, "", env, "--model", "openai:gpt-fake", "--store", "memory", "--replica-name", "replica-1")
			return g.url(), g.url()
		}},
		{"two replicas", func(t *testing.T, env []string) (string, string) {
			store := fleetStore(t)
			r1 := startGateway(t, "", env, "--model", "openai:gpt-fake", "--store", store, "--replica-name", "replica-1")
			r2 := startGateway(t, "", env, "--model", "openai:gpt-fake", "--store", store, "--replica-name", "replica-2")
			return r1.url(), r2.url()
		}},
	} {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			fake := fakemodel.NewOpenAI(t)
			ua, ub := setup.start(t, []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"})
			a := startAgentWith(t, nil, "--gateway", ua, "--store", "gateway")
			b := startAgentWith(t, nil, "--gateway", ub, "--store", "gateway")
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cwd := t.TempDir()
			sid := a.newSession(cwd)
			loadSID := func(ag *agent) {
				t.Helper()
				if _, err := ag.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
					t.Fatalf("session/load while the other translator has the session open: %v", err)
				}
			}
			lastBody := func() string {
				reqs := fake.Requests()
				return string(reqs[len(reqs)-1].Body)
			}

			fake.Push(fakemodel.Turn{Text: "Noted: pelican."})
			if _, out := a.prompt(sid, "remember the word pelican"); text(out) != "Noted: pelican." {
				t.Fatalf("A's turn: %q", text(out))
			}
			// A's prompt was answered: its turn is stored. B loads the
			// session A still has open.
			loadSID(b)
			fake.Push(fakemodel.Turn{Text: "The word was pelican."})
			if _, out := b.prompt(sid, "which word?"); text(out) != "The word was pelican." {
				t.Fatalf("B's turn: %q", text(out))
			}
			if body := lastBody(); !strings.Contains(body, "remember the word pelican") {
				t.Errorf("B's model request lacks A's turn:\n%s", body)
			}
			fake.Push(fakemodel.Turn{Text: "Still pelican."})
			if _, out := a.prompt(sid, "and now?"); text(out) != "Still pelican." {
				t.Fatalf("A's next turn: %q", text(out))
			}
			if body := lastBody(); !strings.Contains(body, "which word?") || !strings.Contains(body, "The word was pelican.") {
				t.Errorf("A's model request after B's turn lacks it:\n%s", body)
			}

			// A's turn runs (the model holds it): B loads the session, and
			// its prompt is refused.
			started, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			fake.SetRespond(func(fakemodel.Recorded) fakemodel.Turn {
				once.Do(func() { close(started) })
				<-release
				return fakemodel.Turn{Text: "Held."}
			})
			held := make(chan error, 1)
			go func() {
				_, err := a.Prompt(ctx, sid, "hold on")
				held <- err
			}()
			select {
			case <-started:
			case <-ctx.Done():
				t.Fatal("A's held turn never reached the model")
			}
			loadSID(b)
			from := len(b.Client.Updates())
			_, err := b.Prompt(ctx, sid, "me too")
			got := text(b.Client.Updates()[from:])
			if err != nil {
				got = err.Error()
			}
			if want := "session " + sid + " is running a turn on replica-1"; !strings.Contains(got, want) {
				t.Errorf("B's prompt while A's turn runs: %q; want %q", got, want)
			}
			close(release)
			if err := <-held; err != nil {
				t.Fatalf("A's held turn: %v", err)
			}
		})
	}
}
