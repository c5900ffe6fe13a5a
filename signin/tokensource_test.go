package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// tokenEndpoint is an OAuth token endpoint on 127.0.0.1 that answers refresh
// requests by calling answer with the request's form and counts them.
type tokenEndpoint struct {
	*httptest.Server
	requests atomic.Int32
}

func newTokenEndpoint(t *testing.T, answer func(w http.ResponseWriter, form map[string]string, n int32)) *tokenEndpoint {
	te := &tokenEndpoint{}
	te.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := te.requests.Add(1)
		if err := r.ParseForm(); err != nil {
			t.Errorf("token request: %v", err)
		}
		form := map[string]string{}
		for k := range r.PostForm {
			form[k] = r.PostForm.Get(k)
		}
		if form["grant_type"] != "refresh_token" {
			t.Errorf("grant_type = %q; want refresh_token", form["grant_type"])
		}
		answer(w, form, n)
	}))
	t.Cleanup(te.Close)
	return te
}

// issue answers with access token new-<n>, an hour of validity and, if
// refresh is not empty, that refresh token.
func issue(refresh string) func(http.ResponseWriter, map[string]string, int32) {
	return func(w http.ResponseWriter, _ map[string]string, n int32) {
		w.Header().Set("Content-Type", "application/json")
		body := map[string]any{"access_token": fmt.Sprintf("new-%d", n), "token_type": "Bearer", "expires_in": 3600}
		if refresh != "" {
			body["refresh_token"] = refresh
		}
		json.NewEncoder(w).Encode(body)
	}
}

// expiredRecord is a record of the token endpoint whose access token expired.
func expiredRecord(te *tokenEndpoint) *Record {
	rec := secretRecord()
	rec.TokenURL = te.URL + "/token"
	rec.AuthStyle = oauth2.AuthStyleInParams // auto-detect would retry a failure
	rec.Token.Expiry = time.Now().Add(-time.Minute)
	return rec
}

func saved(t *testing.T, st Store, rec *Record) *Record {
	t.Helper()
	if err := st.Save(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	got, err := st.Latest(context.Background(), rec.ServerURL)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestFresh(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rec := func(access string, saved, expiry time.Time) *Record {
		return &Record{Saved: saved, Token: &oauth2.Token{AccessToken: access, Expiry: expiry}}
	}
	hourAgo := now.Add(-time.Hour)
	for _, tt := range []struct {
		name string
		rec  *Record
		want bool
	}{
		{"no expiry", rec("a", hourAgo, time.Time{}), true},
		{"no access token", rec("", hourAgo, now.Add(time.Hour)), false},
		{"61s left", rec("a", hourAgo, now.Add(61*time.Second)), true},
		{"59s left", rec("a", hourAgo, now.Add(59*time.Second)), false},
		{"expired", rec("a", hourAgo, now.Add(-time.Second)), false},
		{"60s lifetime, 31s left", rec("a", now.Add(-29*time.Second), now.Add(31*time.Second)), true},
		{"60s lifetime, 29s left", rec("a", now.Add(-31*time.Second), now.Add(29*time.Second)), false},
		{"nil", nil, false},
	} {
		if got := fresh(tt.rec, now); got != tt.want {
			t.Errorf("%s: fresh = %t; want %t", tt.name, got, tt.want)
		}
	}
}

func TestTokenSource_ValidTokenWithoutRequest(t *testing.T) {
	te := newTokenEndpoint(t, issue(""))
	for _, expiry := range []time.Time{time.Now().Add(time.Hour), {}} {
		st := NewMemory()
		rec := expiredRecord(te)
		rec.Token.Expiry = expiry
		tok, err := NewTokenSource(st, te.Client(), saved(t, st, rec)).Token()
		if err != nil || tok.AccessToken != secretAccess {
			t.Fatalf("Token = %v, %v; want the stored token", tok, err)
		}
	}
	if n := te.requests.Load(); n != 0 {
		t.Fatalf("%d token requests; want none", n)
	}
}

func TestTokenSource_RefreshesOnceForManyCallers(t *testing.T) {
	te := newTokenEndpoint(t, issue("rotated-refresh"))
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			te.requests.Store(0)
			st := s.open(t)
			rec := saved(t, st, expiredRecord(te))
			// Sessions of one process: each has its own token source.
			sources := []oauth2.TokenSource{NewTokenSource(st, te.Client(), rec), NewTokenSource(st, te.Client(), rec)}
			var wg sync.WaitGroup
			got := make([]string, 20)
			for i := range got {
				wg.Go(func() {
					tok, err := sources[i%2].Token()
					if err != nil {
						t.Error(err)
						return
					}
					got[i] = tok.AccessToken
				})
			}
			wg.Wait()
			if n := te.requests.Load(); n != 1 {
				t.Fatalf("%d token requests; want 1", n)
			}
			for i, a := range got {
				if a != "new-1" {
					t.Errorf("caller %d got %q; want new-1", i, a)
				}
			}
			stored, _ := st.Latest(context.Background(), rec.ServerURL)
			if stored.Token.AccessToken != "new-1" || stored.Token.RefreshToken != "rotated-refresh" || !stored.Token.Expiry.After(time.Now().Add(time.Hour-time.Minute)) {
				t.Fatalf("stored token = %+v; want the refreshed one persisted", stored.Token)
			}
		})
	}
}

func TestTokenSource_KeepsRefreshTokenWhenResponseHasNone(t *testing.T) {
	te := newTokenEndpoint(t, func(w http.ResponseWriter, form map[string]string, n int32) {
		if form["refresh_token"] != secretRefresh {
			t.Errorf("refresh_token sent = %q; want the stored one", form["refresh_token"])
		}
		issue("")(w, form, n)
	})
	st := NewMemory()
	ts := NewTokenSource(st, te.Client(), saved(t, st, expiredRecord(te)))
	if tok, err := ts.Token(); err != nil || tok.RefreshToken != secretRefresh {
		t.Fatalf("Token = %+v, %v; want the old refresh token kept", tok, err)
	}
	if stored, _ := st.Latest(context.Background(), "https://a.example/mcp"); stored.Token.RefreshToken != secretRefresh {
		t.Fatalf("stored refresh token = %q; want the old one kept", stored.Token.RefreshToken)
	}
}

func assertSignedOut(t *testing.T, err error) {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("err = %v; want an invalid_grant *oauth2.RetrieveError", err)
	}
	assertNoSecret(t, "error", err.Error())
}

func TestTokenSource_InvalidGrantDeletesRecord(t *testing.T) {
	te := newTokenEndpoint(t, func(w http.ResponseWriter, _ map[string]string, _ int32) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"refresh token %s revoked"}`, secretRefresh)
	})
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			te.requests.Store(0)
			st := s.open(t)
			rec := saved(t, st, expiredRecord(te))
			other := testRecord(rec.ServerURL, "https://other.example/token", "other")
			st.Save(context.Background(), other)
			ts := NewTokenSource(st, te.Client(), rec)
			_, err := ts.Token()
			assertSignedOut(t, err)
			if gone, _ := st.Delete(context.Background(), rec.ServerURL); len(gone) != 1 || gone[0].TokenURL != other.TokenURL {
				t.Fatalf("left %v; want only the other authorization server's record", gone)
			}
			_, err = ts.Token()
			assertSignedOut(t, err)
			if n := te.requests.Load(); n != 1 {
				t.Fatalf("%d token requests; want 1 (no retry of a refused grant)", n)
			}
		})
	}
}

func TestTokenSource_NoRefreshTokenDeletesRecord(t *testing.T) {
	te := newTokenEndpoint(t, issue(""))
	st := NewMemory()
	rec := expiredRecord(te)
	rec.Token.RefreshToken = ""
	_, err := NewTokenSource(st, te.Client(), saved(t, st, rec)).Token()
	assertSignedOut(t, err)
	if got, _ := st.Latest(context.Background(), rec.ServerURL); got != nil {
		t.Fatalf("record kept: %v", got)
	}
	if n := te.requests.Load(); n != 0 {
		t.Fatalf("%d token requests; want none", n)
	}
}

func TestTokenSource_SignedOutElsewhere(t *testing.T) {
	te := newTokenEndpoint(t, issue(""))
	st := NewMemory()
	ts := NewTokenSource(st, te.Client(), saved(t, st, expiredRecord(te)))
	st.Delete(context.Background(), "https://a.example/mcp") // /logout in another session
	_, err := ts.Token()
	assertSignedOut(t, err)
	if n := te.requests.Load(); n != 0 {
		t.Fatalf("%d token requests; want none", n)
	}
}

func TestTokenSource_AdoptsTokenRefreshedElsewhere(t *testing.T) {
	te := newTokenEndpoint(t, issue(""))
	st := NewMemory()
	rec := saved(t, st, expiredRecord(te))
	ts := NewTokenSource(st, te.Client(), rec)
	newer := rec.clone()
	newer.Token.AccessToken, newer.Token.Expiry = "from-elsewhere", time.Now().Add(time.Hour)
	st.Save(context.Background(), newer)
	if tok, err := ts.Token(); err != nil || tok.AccessToken != "from-elsewhere" {
		t.Fatalf("Token = %v, %v; want the token saved meanwhile", tok, err)
	}
	if n := te.requests.Load(); n != 0 {
		t.Fatalf("%d token requests; want none", n)
	}
}

func TestTokenSource_TransientFailure(t *testing.T) {
	te := newTokenEndpoint(t, func(w http.ResponseWriter, form map[string]string, _ int32) {
		// A server that echoes what it got must not leak it through us.
		http.Error(w, "overloaded; got "+form["refresh_token"]+" from "+form["client_secret"], http.StatusServiceUnavailable)
	})
	st := &Memory{now: func() time.Time { return time.Now().Add(-time.Hour) }} // saved an hour ago
	rec := expiredRecord(te)

	// Expiring but still valid: the current token is used and the record kept.
	rec.Token.Expiry = time.Now().Add(30 * time.Second)
	ts := NewTokenSource(st, te.Client(), saved(t, st, rec))
	if tok, err := ts.Token(); err != nil || tok.AccessToken != secretAccess {
		t.Fatalf("Token = %v, %v; want the still valid token", tok, err)
	}

	// Expired: the error, without secrets, naming the server.
	rec.Token.Expiry = time.Now().Add(-time.Second)
	ts = NewTokenSource(st, te.Client(), saved(t, st, rec))
	_, err := ts.Token()
	if err == nil || !strings.Contains(err.Error(), rec.ServerURL) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v; want the 503 naming the server", err)
	}
	assertNoSecret(t, "error", err.Error())
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
		t.Fatal("a 503 reported as invalid_grant")
	}
	if got, _ := st.Latest(context.Background(), rec.ServerURL); got == nil {
		t.Fatal("record deleted after a transient failure")
	}
	if n := te.requests.Load(); n != 2 {
		t.Fatalf("%d token requests; want 2", n)
	}
}
