package signin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"
)

// authServer is an MCP server and its authorization server on one 127.0.0.1
// origin, with configurable metadata, recording revocation requests.
type authServer struct {
	*httptest.Server
	prmAt      string // "path", "root" or "" (no protected-resource metadata)
	revocation bool   // whether the metadata lists a revocation endpoint
	tokenPath  string // the token endpoint's path
	status     int    // the revocation endpoint's status; 0 is 200

	mu      sync.Mutex
	revokes []*http.Request // with PostForm parsed
}

func newAuthServer(t *testing.T, prmAt string, revocation bool) *authServer {
	as := &authServer{prmAt: prmAt, revocation: revocation, tokenPath: "/token"}
	as.Server = httptest.NewServer(http.HandlerFunc(as.serve))
	t.Cleanup(as.Close)
	return as
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (as *authServer) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/.well-known/oauth-protected-resource/mcp" && as.prmAt == "path":
		writeJSON(w, map[string]any{"resource": as.URL + "/mcp", "authorization_servers": []string{as.URL}})
	case r.URL.Path == "/.well-known/oauth-protected-resource" && as.prmAt == "root":
		writeJSON(w, map[string]any{"resource": as.URL, "authorization_servers": []string{as.URL}})
	case r.URL.Path == "/.well-known/oauth-authorization-server":
		meta := map[string]any{
			"issuer":                           as.URL,
			"authorization_endpoint":           as.URL + "/authorize",
			"token_endpoint":                   as.URL + as.tokenPath,
			"response_types_supported":         []string{"code"},
			"code_challenge_methods_supported": []string{"S256"},
		}
		if as.revocation {
			meta["revocation_endpoint"] = as.URL + "/revoke"
		}
		writeJSON(w, meta)
	case r.URL.Path == "/revoke" && r.Method == http.MethodPost:
		r.ParseForm()
		as.mu.Lock()
		as.revokes = append(as.revokes, r)
		as.mu.Unlock()
		if as.status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(as.status)
			w.Write([]byte(`{"error":"temporarily_unavailable"}`))
		}
	default:
		http.NotFound(w, r)
	}
}

func (as *authServer) record(style oauth2.AuthStyle, secret string) *Record {
	rec := secretRecord()
	rec.ServerURL = as.URL + "/mcp"
	rec.TokenURL = as.URL + "/token"
	rec.AuthStyle = style
	rec.ClientSecret = secret
	return rec
}

func TestRevoke(t *testing.T) {
	for _, tt := range []struct {
		name       string
		prmAt      string
		style      oauth2.AuthStyle
		secret     string
		wantBasic  bool
		wantSecret string // client_secret in the form
	}{
		{"basic auth", "path", oauth2.AuthStyleInHeader, secretClient, true, ""},
		{"auto-detect with secret is basic", "root", oauth2.AuthStyleAutoDetect, secretClient, true, ""},
		{"secret in form", "path", oauth2.AuthStyleInParams, secretClient, false, secretClient},
		{"public client", "", oauth2.AuthStyleAutoDetect, "", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			as := newAuthServer(t, tt.prmAt, true)
			if err := Revoke(context.Background(), as.Client(), as.record(tt.style, tt.secret)); err != nil {
				t.Fatal(err)
			}
			if len(as.revokes) != 2 {
				t.Fatalf("%d revocation requests; want 2", len(as.revokes))
			}
			for i, want := range []struct{ token, hint string }{{secretRefresh, "refresh_token"}, {secretAccess, "access_token"}} {
				r := as.revokes[i]
				if r.PostForm.Get("token") != want.token || r.PostForm.Get("token_type_hint") != want.hint {
					t.Errorf("request %d form = %v; want %s", i, r.PostForm, want.hint)
				}
				if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
					t.Errorf("Content-Type = %q", ct)
				}
				user, pass, basic := r.BasicAuth()
				if basic != tt.wantBasic || basic && (user != "client-1" || pass != secretClient) {
					t.Errorf("request %d basic auth = %q, %q, %t; want %t", i, user, pass, basic, tt.wantBasic)
				}
				if id := r.PostForm.Get("client_id"); tt.wantBasic == (id != "") || !tt.wantBasic && id != "client-1" {
					t.Errorf("request %d client_id = %q (basic %t)", i, id, tt.wantBasic)
				}
				if got := r.PostForm.Get("client_secret"); got != tt.wantSecret {
					t.Errorf("request %d client_secret = %q; want %q", i, got, tt.wantSecret)
				}
			}
		})
	}
}

func TestRevoke_NoRevocationEndpoint(t *testing.T) {
	as := newAuthServer(t, "path", false)
	if err := Revoke(context.Background(), as.Client(), as.record(oauth2.AuthStyleInHeader, secretClient)); err != nil {
		t.Fatalf("Revoke = %v; want nil (nothing to do)", err)
	}
}

// TestRevoke_OtherAuthorizationServer: metadata that now names another token
// endpoint gets no token.
func TestRevoke_OtherAuthorizationServer(t *testing.T) {
	as := newAuthServer(t, "path", true)
	as.tokenPath = "/other-token"
	err := Revoke(context.Background(), as.Client(), as.record(oauth2.AuthStyleInHeader, secretClient))
	if err == nil || !strings.Contains(err.Error(), "not revoked") {
		t.Fatalf("Revoke = %v; want a not-revoked error", err)
	}
	assertNoSecret(t, "error", err.Error())
	if len(as.revokes) != 0 {
		t.Fatalf("%d tokens sent to a server that did not issue them", len(as.revokes))
	}
}

func TestRevoke_Failure(t *testing.T) {
	as := newAuthServer(t, "path", true)
	as.status = http.StatusServiceUnavailable
	rec := as.record(oauth2.AuthStyleInParams, secretClient)
	err := Revoke(context.Background(), as.Client(), rec)
	if err == nil || !strings.Contains(err.Error(), rec.ServerURL) || !strings.Contains(err.Error(), "503") ||
		!strings.Contains(err.Error(), "temporarily_unavailable") {
		t.Fatalf("Revoke = %v; want the 503 naming the server", err)
	}
	assertNoSecret(t, "error", err.Error())
	if u, _ := url.Parse(rec.ServerURL); !strings.Contains(err.Error(), u.Host) {
		t.Fatalf("error does not name the endpoint: %v", err)
	}
}
