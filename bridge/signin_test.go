package bridge

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/oauthtest"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// TestConnectDeadline_PausesWhileTheUserSignsIn: the time a sign-in waits
// for the user does not count against the connect timeout, and the dial gets
// the whole timeout again afterwards.
func TestConnectDeadline_PausesWhileTheUserSignsIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, dl, cancel := withConnectDeadline(context.Background(), 10*time.Second)
		defer cancel()
		time.Sleep(8 * time.Second)
		dl.pause()
		time.Sleep(time.Hour) // the user takes their time
		if ctx.Err() != nil || dl.timedOut() {
			t.Fatalf("deadline passed while paused: %v", ctx.Err())
		}
		dl.resume()
		time.Sleep(9 * time.Second)
		if ctx.Err() != nil {
			t.Fatalf("deadline passed 9s after resume, want a fresh 10s: %v", ctx.Err())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !dl.timedOut() || !errors.Is(context.Cause(ctx), errConnectTimeout) {
			t.Fatalf("after 11s: timedOut=%v cause=%v, want the connect timeout", dl.timedOut(), context.Cause(ctx))
		}
	})
}

// TestConnectDeadline_Unpaused: without a sign-in it is a plain timeout.
func TestConnectDeadline_Unpaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, dl, cancel := withConnectDeadline(context.Background(), time.Second)
		defer cancel()
		<-ctx.Done()
		if !dl.timedOut() {
			t.Fatal("timedOut() = false after the deadline")
		}
	})
}

// signInHarness is a Manager with sign-in on, against an OAuth-protected
// loopback server; prompts collects the sign-in links the user is shown and
// states the servers' background state changes.
type signInHarness struct {
	srv     *oauthtest.Server
	store   signin.Store
	prompts chan string
	states  chan ServerStatus
	logs    *testutil.Buffer
}

func newSignInHarness(t *testing.T, o oauthtest.Options) *signInHarness {
	t.Helper()
	srv, err := oauthtest.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &signInHarness{srv: srv, store: signin.NewMemory(), prompts: make(chan string, 8), states: make(chan ServerStatus, 8), logs: &testutil.Buffer{}}
}

// manager returns a connected Manager of one server "remote" of transport
// tr; prompt, if set, replaces the recording prompt.
func (h *signInHarness) manager(t *testing.T, prompt func(ctx context.Context, server, url string) error) *Manager {
	return h.managerOf(t, TransportHTTP, prompt)
}

func (h *signInHarness) managerOf(t *testing.T, tr Transport, prompt func(ctx context.Context, server, url string) error) *Manager {
	t.Helper()
	if prompt == nil {
		prompt = func(_ context.Context, _, url string) error { h.prompts <- url; return nil }
	}
	m := NewManager(&Options{
		OAuth:          &OAuth{Store: h.store, Prompt: prompt},
		OnStateChanged: func(st ServerStatus) { h.states <- st },
		Logger:         slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	if err := m.Connect(t.Context(), []ServerSpec{{Name: "remote", Transport: tr, URL: h.srv.URL()}}); err != nil {
		t.Fatal(err)
	}
	return m
}

func (h *signInHarness) state(t *testing.T) ServerStatus {
	t.Helper()
	select {
	case st := <-h.states:
		return st
	case <-time.After(30 * time.Second):
		t.Fatal("no state change within 30s")
		return ServerStatus{}
	}
}

func (h *signInHarness) prompt(t *testing.T) string {
	t.Helper()
	select {
	case u := <-h.prompts:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("no sign-in prompt within 30s")
		return ""
	}
}

// TestSignIn_ConnectDoesNotWaitForTheUser: a server that answers 401 is
// reported as needing sign-in with the link, Connect returns at once, and
// once the user has followed the link the server connects in the
// background, its tools join, and the next Manager (another session) uses
// the stored token without asking again.
func TestSignIn_ConnectDoesNotWaitForTheUser(t *testing.T) {
	h := newSignInHarness(t, oauthtest.Options{})
	m := h.manager(t, nil)
	st := m.Servers()[0]
	if st.State != StateSignIn || st.SignInURL == "" || len(m.Tools()) != 0 {
		t.Fatalf("after Connect: %v %q tools=%d, want needs sign-in with a link and no tools", st.State, st.SignInURL, len(m.Tools()))
	}
	link := h.prompt(t)
	if link != st.SignInURL {
		t.Errorf("prompted %q, /servers shows %q", link, st.SignInURL)
	}
	if err := acpclient.FollowSignIn(t.Context(), link); err != nil {
		t.Fatal(err)
	}
	if st := h.state(t); st.State != StateConnected || st.Tools != 2 || st.SignInURL != "" {
		t.Fatalf("after sign-in: %+v, want connected with 2 tools", st)
	}
	res, err := toolByName(t, m, "mcp__remote__whoami").Execute(t.Context(), "c", nil, nil)
	if err != nil || res.IsError {
		t.Fatalf("whoami = %+v, %v", res, err)
	}

	// Another session of the process: the stored token, no prompt.
	m2 := h.manager(t, func(context.Context, string, string) error { t.Error("asked to sign in again"); return nil })
	if st := m2.Servers()[0]; st.State != StateConnected {
		t.Fatalf("second session: %v %v, want connected with the stored token", st.State, st.Err)
	}
	if c := h.srv.Counts(); c.Authorizations != 1 || c.CodeGrants != 1 {
		t.Errorf("counts %+v, want one sign-in", c)
	}
	for _, tok := range h.srv.Tokens() {
		if strings.Contains(h.logs.String(), tok) {
			t.Fatalf("a token is in the logs")
		}
	}
}

// TestSignIn_Declined: a user who declines ends the sign-in; the server
// fails saying so, and /login asks again.
func TestSignIn_Declined(t *testing.T) {
	h := newSignInHarness(t, oauthtest.Options{})
	declined := true
	var mu sync.Mutex
	m := h.manager(t, func(_ context.Context, _, url string) error {
		mu.Lock()
		defer mu.Unlock()
		if declined {
			return errors.New("the user answered \"decline\"")
		}
		h.prompts <- url
		return nil
	})
	st := h.state(t)
	if st.State != StateFailed || !errors.Is(st.Err, signin.ErrDeclined) || !strings.Contains(st.Err.Error(), `"remote"`) {
		t.Fatalf("after declining: %v %v, want failed, declined, naming the server", st.State, st.Err)
	}
	mu.Lock()
	declined = false
	mu.Unlock()
	if err := m.Login("remote"); err != nil {
		t.Fatal(err)
	}
	if err := acpclient.FollowSignIn(t.Context(), h.prompt(t)); err != nil {
		t.Fatal(err)
	}
	if st := h.state(t); st.State != StateConnected {
		t.Fatalf("after /login: %v %v", st.State, st.Err)
	}
	if err := m.Login("remote"); err == nil || !strings.Contains(err.Error(), "connected") {
		t.Errorf("Login of a connected server = %v, want a refusal saying it is connected", err)
	}
}

// TestSignIn_Logout: /logout deletes and revokes the tokens, disconnects
// the server and drops its tools; the next session asks to sign in again.
func TestSignIn_Logout(t *testing.T) {
	h := newSignInHarness(t, oauthtest.Options{})
	m := h.manager(t, nil)
	if err := acpclient.FollowSignIn(t.Context(), h.prompt(t)); err != nil {
		t.Fatal(err)
	}
	h.state(t)
	if err := m.Logout(t.Context(), "remote"); err != nil {
		t.Fatal(err)
	}
	if st := m.Servers()[0]; st.State != StateFailed || !errors.Is(st.Err, errSignedOut) || len(m.Tools()) != 0 {
		t.Fatalf("after /logout: %v %v tools=%d", st.State, st.Err, len(m.Tools()))
	}
	if rec, _ := h.store.Latest(t.Context(), h.srv.URL()); rec != nil {
		t.Errorf("the token is still stored")
	}
	if c := h.srv.Counts(); c.Revocations == 0 {
		t.Errorf("counts %+v, want a revocation", c)
	}
	h.manager(t, nil)
	h.prompt(t) // asked again
	if err := m.Logout(t.Context(), "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Logout(nope) = %v", err)
	}
}

// TestSignIn_RevokedTokenSignsInAgain: a token the server no longer
// accepts (revoked at the server) leads to a new sign-in, not a failure.
func TestSignIn_RevokedTokenSignsInAgain(t *testing.T) {
	h := newSignInHarness(t, oauthtest.Options{})
	h.manager(t, nil)
	if err := acpclient.FollowSignIn(t.Context(), h.prompt(t)); err != nil {
		t.Fatal(err)
	}
	h.state(t)
	h.srv.RevokeAll()
	h.manager(t, nil)
	if err := acpclient.FollowSignIn(t.Context(), h.prompt(t)); err != nil {
		t.Fatal(err)
	}
	if st := h.state(t); st.State != StateConnected {
		t.Fatalf("after signing in again: %v %v", st.State, st.Err)
	}
}

// TestSignIn_Refresh: an expiring token is refreshed through the stored
// refresh token, without asking the user.
func TestSignIn_Refresh(t *testing.T) {
	// One-second tokens, which the agent refreshes at half their life; the
	// server's clock runs 20 times slower so that a loaded machine never
	// sees a token expire before its refresh.
	start := time.Now()
	slow := func() time.Time { return start.Add(time.Since(start) / 20) }
	h := newSignInHarness(t, oauthtest.Options{TokenTTL: time.Second, Now: slow})
	m := h.manager(t, nil)
	if err := acpclient.FollowSignIn(t.Context(), h.prompt(t)); err != nil {
		t.Fatal(err)
	}
	h.state(t)
	echo := toolByName(t, m, "mcp__remote__echo")
	// The token is used while the refreshes come.
	if !testutil.Eventually(30*time.Second, func() bool {
		if h.srv.Counts().Refreshes >= 2 {
			return true
		}
		if res, err := echo.Execute(t.Context(), "c", map[string]any{"text": "hi"}, nil); err != nil || res.IsError {
			t.Fatalf("echo = %+v, %v", res, err)
		}
		return false
	}) {
		t.Fatalf("counts %+v after 30s, want two refreshes", h.srv.Counts())
	}
	if c := h.srv.Counts(); c.Authorizations != 1 {
		t.Fatalf("counts %+v, want one sign-in", c)
	}
}

// TestSignIn_CloseWhileWaiting: closing the session while the user has not
// signed in ends the wait at once, and the link stops working.
func TestSignIn_CloseWhileWaiting(t *testing.T) {
	h := newSignInHarness(t, oauthtest.Options{})
	m := h.manager(t, nil)
	link := h.prompt(t)
	done := make(chan struct{})
	go func() { _ = m.Close(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for the user")
	}
	if err := acpclient.FollowSignIn(t.Context(), link); err == nil {
		t.Error("the sign-in link still works after Close")
	}
}

// TestSignIn_SSE: a legacy SSE server signs in the same way, through the
// bridge's RoundTripper (go-sdk's SSE transport takes no OAuth handler).
func TestSignIn_SSE(t *testing.T) {
	h := newSignInHarness(t, oauthtest.Options{SSE: true})
	m := h.managerOf(t, TransportSSE, nil)
	if st := m.Servers()[0]; st.State != StateSignIn {
		t.Fatalf("after Connect: %v %v, want needs sign-in", st.State, st.Err)
	}
	if err := acpclient.FollowSignIn(t.Context(), h.prompt(t)); err != nil {
		t.Fatal(err)
	}
	if st := h.state(t); st.State != StateConnected {
		t.Fatalf("after sign-in: %v %v", st.State, st.Err)
	}
	res, err := toolByName(t, m, "mcp__remote__echo").Execute(t.Context(), "c", map[string]any{"text": "over sse"}, nil)
	if err != nil || res.IsError {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	m2 := h.managerOf(t, TransportSSE, func(context.Context, string, string) error { t.Error("asked to sign in again"); return nil })
	if st := m2.Servers()[0]; st.State != StateConnected {
		t.Fatalf("second session: %v %v, want the stored token", st.State, st.Err)
	}
}

// TestSignIn_OnceForTwoSessions: two sessions waiting to sign in to the
// same server: signing in through one connects the other too.
func TestSignIn_OnceForTwoSessions(t *testing.T) {
	h := newSignInHarness(t, oauthtest.Options{})
	h.manager(t, nil)
	h.manager(t, nil)
	link := h.prompt(t)
	h.prompt(t) // the second session's link, never followed
	if err := acpclient.FollowSignIn(t.Context(), link); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if st := h.state(t); st.State != StateConnected {
			t.Fatalf("%v %v, want both sessions connected", st.State, st.Err)
		}
	}
	if c := h.srv.Counts(); c.CodeGrants != 1 {
		t.Errorf("counts %+v, want one sign-in", c)
	}
}
