package acpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/oauthtest"
)

// TestFollowSignIn signs in at the oauthtest server by hand: the user
// follows the authorization URL to a loopback callback, which must answer
// 2xx.
func TestFollowSignIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := oauthtest.Start(oauthtest.Options{PreregisteredClientID: "pre", NoDCR: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	var mu sync.Mutex
	var gotCode string
	status := http.StatusOK
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		gotCode = r.URL.Query().Get("code")
		w.WriteHeader(status)
		w.Write([]byte("callback says hi"))
	}))
	defer callback.Close()

	authURL := func(client string) string {
		return s.Issuer() + "/authorize?" + url.Values{
			"response_type": {"code"}, "client_id": {client}, "redirect_uri": {callback.URL + "/cb"},
			"code_challenge": {strings.Repeat("a", 43)}, "code_challenge_method": {"S256"},
			"resource": {s.URL()}, "state": {"st"},
		}.Encode()
	}
	if err := FollowSignIn(ctx, authURL("pre")); err != nil {
		t.Fatalf("FollowSignIn: %v", err)
	}
	mu.Lock()
	if !strings.HasPrefix(gotCode, "code_") {
		t.Errorf("callback got code %q", gotCode)
	}
	status = http.StatusBadRequest
	mu.Unlock()

	err = FollowSignIn(ctx, authURL("pre"))
	if err == nil || !strings.Contains(err.Error(), "400") || strings.Contains(err.Error(), "code_") {
		t.Errorf("FollowSignIn to a failing callback = %v, want a 400 error without the code", err)
	}
	if err := FollowSignIn(ctx, authURL("nobody")); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("FollowSignIn with an unknown client = %v, want the authorization server's 400", err)
	}
	if got := s.Counts().Authorizations; got != 2 {
		t.Errorf("Authorizations = %d, want 2", got)
	}
}

func TestFollowSignIn_LoopbackOnly(t *testing.T) {
	ctx := t.Context()
	var hits int
	var mu sync.Mutex
	away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		http.Redirect(w, r, "http://192.0.2.1/cb?code=x", http.StatusFound)
	}))
	defer away.Close()
	for _, link := range []string{"http://192.0.2.1/authorize", "file:///etc/passwd", "http://example.com/", ":"} {
		if err := FollowSignIn(ctx, link); err == nil {
			t.Errorf("FollowSignIn(%q) succeeded", link)
		}
	}
	err := FollowSignIn(ctx, away.URL)
	if err == nil || !strings.Contains(err.Error(), "not loopback") {
		t.Errorf("FollowSignIn redirected off loopback = %v, want a not-loopback error", err)
	}
	if hits != 1 {
		t.Errorf("loopback server hit %d times, want 1", hits)
	}
}
