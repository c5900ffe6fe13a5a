package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/oauthtest"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// signInUser is an editor's user who opens every sign-in link the agent
// sends by URL elicitation (accept, then the browser follows the link).
type signInUser struct {
	t         *testing.T
	mu        sync.Mutex
	asked     []acpsdk.UnstableCreateElicitationRequest
	completed []string
	follows   sync.WaitGroup
	changed   testutil.Signal // notified after each question and completion
}

func (u *signInUser) elicitation() *acpclient.Elicitation {
	return &acpclient.Elicitation{URL: true,
		Create: func(ctx context.Context, r acpsdk.UnstableCreateElicitationRequest) (acpsdk.UnstableCreateElicitationResponse, error) {
			u.mu.Lock()
			u.asked = append(u.asked, r)
			u.mu.Unlock()
			u.changed.Notify()
			if r.Url != nil {
				u.follows.Go(func() {
					if err := acpclient.FollowSignIn(context.Background(), r.Url.Url); err != nil {
						u.t.Errorf("following the sign-in link: %v", err)
					}
				})
			}
			return acpsdk.NewUnstableCreateElicitationResponseAccept(), nil
		},
		Complete: func(_ context.Context, n acpsdk.UnstableCompleteElicitationNotification) {
			u.mu.Lock()
			u.completed = append(u.completed, string(n.ElicitationId))
			u.mu.Unlock()
			u.changed.Notify()
		},
	}
}

// waitText waits for an agent message of session sid containing want, from
// update index from on, and returns its text.
func waitText(t *testing.T, a *agent, sid string, from int, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, n, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		return string(n.SessionId) == sid && strings.Contains(acpclient.Text(n), want)
	})
	if err != nil {
		t.Fatalf("no agent message with %q: %v", want, err)
	}
	return acpclient.Text(n)
}

func remoteServer(url string) acpsdk.McpServer {
	return acpsdk.McpServer{Http: &acpsdk.McpServerHttpInline{Name: "remote", Type: "http", Url: url, Headers: []acpsdk.HttpHeader{}}}
}

// TestSignIn_ThroughTheEditor: an OAuth-protected remote server asks the
// editor's user to sign in by URL elicitation, without holding up
// session/new; once the user followed the link its tools join the session
// and the client is told. A restarted agent on the same state directory
// signs in without asking; /logout deletes and revokes the tokens. No token
// ever reaches the logs, the session store or a server's environment.
func TestSignIn_ThroughTheEditor(t *testing.T) {
	t.Parallel()
	srv, err := oauthtest.Start(oauthtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	state := t.TempDir()
	store := filepath.Join(state, "sessions.db")
	user := &signInUser{t: t}
	a := startAgentClient(t, &acpclient.Recorder{Elicitation: user.elicitation()}, nil, "--store", store)
	dir := t.TempDir()

	start := time.Now()
	sid := a.newSession(dir, remoteServer(srv.URL()), fixtureServer("local", filepath.Join(dir, "calls.log")))
	if waited := time.Since(start); waited > 20*time.Second {
		t.Errorf("session/new took %s: it waited for the user", waited)
	}
	waitText(t, a, sid, 0, `MCP server "remote" is connected: 2 tools joined the session`)
	if got := callTool(t, a, sid, "mcp__remote__whoami {}"); !strings.Contains(got, oauthtest.Subject) {
		t.Errorf("whoami = %q, want the signed-in subject %q", got, oauthtest.Subject)
	}
	user.follows.Wait()
	user.mu.Lock()
	if len(user.asked) != 1 || user.asked[0].Url == nil || !strings.Contains(user.asked[0].Url.Message, `"remote"`) {
		t.Fatalf("asked %+v, want one URL elicitation naming the server", user.asked)
	}
	id := string(user.asked[0].Url.ElicitationId)
	user.mu.Unlock()
	user.changed.WaitFor(t, 30*time.Second, func() bool {
		user.mu.Lock()
		defer user.mu.Unlock()
		return len(user.completed) == 1 && user.completed[0] == id
	}, "no elicitation/complete for %s", id)
	env := callTool(t, a, sid, "mcp__local__env {}")

	// A restarted agent on the same state directory: no sign-in.
	if err := a.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	user2 := &signInUser{t: t}
	b := startAgentClient(t, &acpclient.Recorder{Elicitation: user2.elicitation()}, nil, "--store", store)
	sid2 := b.newSession(dir, remoteServer(srv.URL()))
	_, out := b.prompt(sid2, "/servers")
	if got := text(out); !strings.Contains(got, "remote: connected") {
		t.Fatalf("/servers after restart:\n%s", got)
	}
	if c := srv.Counts(); c.Authorizations != 1 || len(user2.asked) != 0 {
		t.Errorf("after restart: counts %+v, asked %d times; want the stored sign-in", c, len(user2.asked))
	}

	_, out = b.prompt(sid2, "/logout remote")
	if got := text(out); !strings.Contains(got, `Signed out of MCP server "remote"`) {
		t.Fatalf("/logout:\n%s", got)
	}
	if c := srv.Counts(); c.Revocations == 0 {
		t.Errorf("counts %+v, want the tokens revoked", c)
	}
	if err := b.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	tokens := srv.Tokens()
	if len(tokens) < 2 {
		t.Fatalf("the server issued %d tokens", len(tokens))
	}
	places := map[string]string{"agent logs": a.stderr.String() + b.stderr.String(), "a server's environment": env}
	files, _ := filepath.Glob(filepath.Join(state, "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		places[filepath.Base(f)] = string(data)
	}
	if _, ok := places["oauth-tokens.json"]; !ok {
		t.Errorf("no oauth-tokens.json in the state directory: %v", files)
	}
	for where, s := range places {
		for _, tok := range tokens {
			if strings.Contains(s, tok) {
				t.Errorf("a token is in %s", where) // after /logout, not even in the token file
			}
		}
	}
	if fi, err := os.Stat(filepath.Join(state, "oauth-tokens.json")); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("oauth-tokens.json mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestSignIn_LinkAsMessage: an editor without URL elicitation gets the link
// in an agent message, and /servers shows it until the user signs in.
func TestSignIn_LinkAsMessage(t *testing.T) {
	t.Parallel()
	srv, err := oauthtest.Start(oauthtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	a := startAgentClient(t, nil, nil, "--store", "memory")
	sid := a.newSession(t.TempDir(), remoteServer(srv.URL()))
	msg := waitText(t, a, sid, 0, `MCP server "remote" needs you to sign in: open `)
	link := regexp.MustCompile(`open (http\S+)`).FindStringSubmatch(msg)
	if link == nil {
		t.Fatalf("no link in %q", msg)
	}
	_, out := a.prompt(sid, "/servers")
	if got := text(out); !strings.Contains(got, "remote: needs sign-in (http): open "+link[1]) {
		t.Fatalf("/servers before sign-in:\n%s", got)
	}
	from := len(a.Client.Updates())
	if err := acpclient.FollowSignIn(t.Context(), link[1]); err != nil {
		t.Fatal(err)
	}
	waitText(t, a, sid, from, `MCP server "remote" is connected`)
	if got := callTool(t, a, sid, "mcp__remote__echo {\"text\":\"signed\"}"); !strings.Contains(got, "signed") {
		t.Errorf("echo = %q", got)
	}
}
