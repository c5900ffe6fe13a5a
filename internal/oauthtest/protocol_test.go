package oauthtest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// These tests speak OAuth by hand, to check that client mistakes are refused
// with the right error.

type pkcePair struct{ verifier, challenge string }

func newPKCE() pkcePair {
	v := rand.Text() + rand.Text() // 52 unreserved characters
	sum := sha256.Sum256([]byte(v))
	return pkcePair{v, base64.RawURLEncoding.EncodeToString(sum[:])}
}

// register registers a client with the given metadata JSON.
func register(t *testing.T, s *Server, meta string) (status int, resp oauthex.ClientRegistrationResponse, e oauthError) {
	t.Helper()
	r, err := http.Post(s.Issuer()+"/register", "application/json", strings.NewReader(meta))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &resp)
	json.Unmarshal(body, &e)
	return r.StatusCode, resp, e
}

// authorize GETs /authorize with q and returns the status and redirect.
func authorize(t *testing.T, s *Server, q url.Values) (int, *url.URL, oauthError) {
	t.Helper()
	r, err := noRedirect.Get(s.Issuer() + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var e oauthError
	if r.StatusCode != http.StatusFound {
		json.NewDecoder(r.Body).Decode(&e)
		return r.StatusCode, nil, e
	}
	loc, err := url.Parse(r.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return r.StatusCode, loc, oauthError{Code: loc.Query().Get("error"), Description: loc.Query().Get("error_description")}
}

// postForm POSTs form to endpoint, with Basic credentials if id is not empty.
func postForm(t *testing.T, endpoint string, form url.Values, id, secret string) (int, oauthError) {
	st, e, _ := postFormToken(t, endpoint, form, id, secret)
	return st, e
}

func postFormToken(t *testing.T, endpoint string, form url.Values, id, secret string) (int, oauthError, tokenResponse) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	var e oauthError
	var tok tokenResponse
	json.Unmarshal(body, &e)
	json.Unmarshal(body, &tok)
	return r.StatusCode, e, tok
}

// flow is one client part-way through a sign-in.
type flow struct {
	s                     *Server
	id, secret, redirect  string
	pkce                  pkcePair
	code                  string
	access, refreshToken  string
	authorizeQ, tokenForm url.Values
}

// newFlow registers a basic-auth client for redirect and builds a valid
// authorization request.
func newFlow(t *testing.T, s *Server, redirect string) *flow {
	t.Helper()
	st, reg, e := register(t, s, `{"redirect_uris":["`+redirect+`"],"grant_types":["authorization_code","refresh_token"]}`)
	if st != http.StatusCreated || reg.ClientSecret == "" || reg.TokenEndpointAuthMethod != authBasic {
		t.Fatalf("register = %d %+v %+v, want 201 with a secret and client_secret_basic", st, reg, e)
	}
	f := &flow{s: s, id: reg.ClientID, secret: reg.ClientSecret, redirect: redirect, pkce: newPKCE()}
	f.authorizeQ = url.Values{
		"response_type": {"code"}, "client_id": {f.id}, "redirect_uri": {redirect}, "state": {"st"},
		"code_challenge": {f.pkce.challenge}, "code_challenge_method": {"S256"}, "resource": {s.URL()},
	}
	return f
}

// authorize runs the authorization request and keeps the code.
func (f *flow) authorize(t *testing.T) {
	t.Helper()
	st, loc, e := authorize(t, f.s, f.authorizeQ)
	if st != http.StatusFound || e.Code != "" {
		t.Fatalf("authorize = %d %+v", st, e)
	}
	q := loc.Query()
	if q.Get("state") != "st" || q.Get("iss") != f.s.Issuer() || q.Get("code") == "" {
		t.Fatalf("redirect %s lacks code, state or iss", loc)
	}
	f.code = q.Get("code")
	f.tokenForm = url.Values{
		"grant_type": {"authorization_code"}, "code": {f.code}, "redirect_uri": {f.redirect},
		"code_verifier": {f.pkce.verifier}, "resource": {f.s.URL()},
	}
}

// exchange posts the token request and returns the status and error.
func (f *flow) exchange(t *testing.T) (int, oauthError) {
	t.Helper()
	st, e, tok := postFormToken(t, f.s.Issuer()+"/token", f.tokenForm, f.id, f.secret)
	if st == http.StatusOK {
		f.access, f.refreshToken = tok.AccessToken, tok.RefreshToken
	}
	return st, e
}

func TestServer_AuthorizeErrors(t *testing.T) {
	s := start(t, Options{OfflineAccess: true})
	tests := []struct {
		name     string
		edit     func(q url.Values)
		status   int    // 302 or 400
		code     string // OAuth error
		redirect bool
	}{
		{"unknown client", func(q url.Values) { q.Set("client_id", "nobody") }, 400, "invalid_request", false},
		{"unregistered redirect path", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:1/other") }, 400, "invalid_request", false},
		{"unregistered redirect host", func(q url.Values) { q.Set("redirect_uri", "http://evil.example:1/cb") }, 400, "invalid_request", false},
		{"missing redirect", func(q url.Values) { q.Del("redirect_uri") }, 400, "invalid_request", false},
		{"token response type", func(q url.Values) { q.Set("response_type", "token") }, 302, "unsupported_response_type", true},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, 302, "invalid_request", true},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, 302, "invalid_request", true},
		{"no resource", func(q url.Values) { q.Del("resource") }, 302, "invalid_target", true},
		{"other resource", func(q url.Values) { q.Set("resource", "http://127.0.0.1:1/mcp") }, 302, "invalid_target", true},
		{"unknown scope", func(q url.Values) { q.Set("scope", "mcp:tools admin") }, 302, "invalid_scope", true},
		{"ok, another loopback port", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:2/cb") }, 302, "", true},
		{"ok, offline_access", func(q url.Values) { q.Set("scope", "mcp:tools offline_access") }, 302, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFlow(t, s, "http://127.0.0.1:1/cb")
			tt.edit(f.authorizeQ)
			st, loc, e := authorize(t, s, f.authorizeQ)
			if st != tt.status || e.Code != tt.code || (loc != nil) != tt.redirect {
				t.Fatalf("authorize = %d %+v (redirect %v), want %d %q", st, e, loc, tt.status, tt.code)
			}
			if loc != nil && (loc.Query().Get("state") != "st" || loc.Query().Get("iss") != s.Issuer()) {
				t.Errorf("redirect %s lacks state or iss", loc)
			}
		})
	}
	before := s.Counts().Authorizations
	if before != 2 {
		t.Errorf("Authorizations = %d, want 2 (only the valid requests)", before)
	}
}

func TestServer_TokenErrors(t *testing.T) {
	s := start(t, Options{})
	tests := []struct {
		name   string
		edit   func(f *flow)
		status int
		code   string
	}{
		{"wrong PKCE verifier", func(f *flow) { f.tokenForm.Set("code_verifier", newPKCE().verifier) }, 400, "invalid_grant"},
		{"no PKCE verifier", func(f *flow) { f.tokenForm.Del("code_verifier") }, 400, "invalid_request"},
		{"other redirect_uri", func(f *flow) { f.tokenForm.Set("redirect_uri", "http://127.0.0.1:1/other") }, 400, "invalid_grant"},
		{"no redirect_uri", func(f *flow) { f.tokenForm.Del("redirect_uri") }, 400, "invalid_grant"},
		{"other resource", func(f *flow) { f.tokenForm.Set("resource", s.Issuer()+"/other") }, 400, "invalid_target"},
		{"unknown code", func(f *flow) { f.tokenForm.Set("code", "code_nope") }, 400, "invalid_grant"},
		{"wrong secret", func(f *flow) { f.secret = "nope" }, 401, "invalid_client"},
		{"post instead of basic", func(f *flow) {
			f.tokenForm.Set("client_id", f.id)
			f.tokenForm.Set("client_secret", f.secret)
			f.id = ""
		}, 401, "invalid_client"},
		{"no client auth", func(f *flow) { f.tokenForm.Set("client_id", f.id); f.id = "" }, 401, "invalid_client"},
		{"implicit grant", func(f *flow) { f.tokenForm.Set("grant_type", "password") }, 400, "unsupported_grant_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFlow(t, s, "http://127.0.0.1:1/cb")
			f.authorize(t)
			tt.edit(f)
			if st, e := f.exchange(t); st != tt.status || e.Code != tt.code {
				t.Fatalf("token = %d %+v, want %d %s", st, e, tt.status, tt.code)
			}
		})
	}
	if got := s.Counts().CodeGrants; got != 0 {
		t.Errorf("CodeGrants = %d, want 0", got)
	}
}

// TestServer_ReusedCode: a code works once; its reuse is refused and revokes
// what the code granted (OAuth 2.1 §4.1.3).
func TestServer_ReusedCode(t *testing.T) {
	s := start(t, Options{})
	f := newFlow(t, s, "http://127.0.0.1:1/cb")
	f.authorize(t)
	if st, e := f.exchange(t); st != http.StatusOK {
		t.Fatalf("first exchange = %d %+v", st, e)
	}
	if st := mcpStatus(t, s, f.access); st != http.StatusOK {
		t.Fatalf("MCP with the access token = %d, want 200", st)
	}
	if st, e := f.exchange(t); st != http.StatusBadRequest || e.Code != "invalid_grant" {
		t.Fatalf("reused code = %d %+v, want 400 invalid_grant", st, e)
	}
	if st := mcpStatus(t, s, f.access); st != http.StatusUnauthorized {
		t.Errorf("MCP with the access token of a reused code = %d, want 401", st)
	}
}

// TestServer_RefreshAndRevoke: refresh rotates; /revoke of a refresh token
// kills its grant.
func TestServer_RefreshAndRevoke(t *testing.T) {
	s := start(t, Options{})
	f := newFlow(t, s, "http://127.0.0.1:1/cb")
	f.authorize(t)
	if st, e := f.exchange(t); st != http.StatusOK {
		t.Fatalf("exchange = %d %+v", st, e)
	}
	tokenURL := s.Issuer() + "/token"
	refresh := func(rt string, extra url.Values) (int, oauthError, tokenResponse) {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
		for k, v := range extra {
			form[k] = v
		}
		return postFormToken(t, tokenURL, form, f.id, f.secret)
	}
	if st, e, _ := refresh(f.refreshToken, url.Values{"resource": {s.Issuer() + "/x"}}); st != 400 || e.Code != "invalid_target" {
		t.Errorf("refresh for another resource = %d %+v, want invalid_target", st, e)
	}
	if st, e, _ := refresh(f.refreshToken, url.Values{"scope": {"more"}}); st != 400 || e.Code != "invalid_scope" {
		t.Errorf("refresh widening scope = %d %+v, want invalid_scope", st, e)
	}
	st, e, tok := refresh(f.refreshToken, url.Values{"resource": {s.URL()}})
	if st != http.StatusOK || tok.RefreshToken == f.refreshToken || tok.AccessToken == "" || tok.Scope != "mcp:tools" {
		t.Fatalf("refresh = %d %+v %+v", st, e, tok)
	}
	if st, e, _ := refresh(f.refreshToken, nil); st != 400 || e.Code != "invalid_grant" {
		t.Errorf("refresh with the rotated token = %d %+v, want invalid_grant", st, e)
	}
	// Revocation needs client authentication.
	if st, e := postForm(t, s.Issuer()+"/revoke", url.Values{"token": {tok.RefreshToken}}, f.id, "wrong"); st != 401 || e.Code != "invalid_client" {
		t.Errorf("revoke with a wrong secret = %d %+v, want 401 invalid_client", st, e)
	}
	if st, _ := postForm(t, s.Issuer()+"/revoke", url.Values{"token": {tok.RefreshToken}}, f.id, f.secret); st != http.StatusOK {
		t.Fatalf("revoke = %d", st)
	}
	if st, _ := postForm(t, s.Issuer()+"/revoke", url.Values{"token": {"at_unknown"}}, f.id, f.secret); st != http.StatusOK {
		t.Errorf("revoke of an unknown token = %d, want 200 (RFC 7009 §2.2)", st)
	}
	for _, at := range []string{f.access, tok.AccessToken} {
		if st := mcpStatus(t, s, at); st != http.StatusUnauthorized {
			t.Errorf("MCP with an access token of a revoked grant = %d, want 401", st)
		}
	}
	if st, e, _ := refresh(tok.RefreshToken, nil); st != 400 || e.Code != "invalid_grant" {
		t.Errorf("refresh with a revoked token = %d %+v, want invalid_grant", st, e)
	}
	if got := s.Counts(); got.Refreshes != 1 || got.Revocations != 2 || got.CodeGrants != 1 {
		t.Errorf("Counts = %+v, want 1 refresh, 2 revocations, 1 code grant", got)
	}
}

// TestServer_Expiry uses the injected clock: an access token past its TTL is
// answered 401.
func TestServer_Expiry(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := start(t, Options{TokenTTL: time.Minute, Now: clock.Now})
	f := newFlow(t, s, "http://127.0.0.1:1/cb")
	f.authorize(t)
	if st, e := f.exchange(t); st != http.StatusOK {
		t.Fatalf("exchange = %d %+v", st, e)
	}
	if st := mcpStatus(t, s, f.access); st != http.StatusOK {
		t.Fatalf("MCP with a fresh token = %d", st)
	}
	clock.Add(time.Minute)
	if st := mcpStatus(t, s, f.access); st != http.StatusUnauthorized {
		t.Errorf("MCP with an expired token = %d, want 401", st)
	}
	if st := mcpStatus(t, s, ""); st != http.StatusUnauthorized {
		t.Errorf("MCP without a token = %d, want 401", st)
	}
	if st := mcpStatus(t, s, f.refreshToken); st != http.StatusUnauthorized {
		t.Errorf("MCP with a refresh token = %d, want 401", st)
	}
	if got := s.Counts().Unauthorized; got != 3 {
		t.Errorf("Unauthorized = %d, want 3", got)
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestServer_Register(t *testing.T) {
	s := start(t, Options{})
	tests := []struct {
		name, meta string
		code       string
	}{
		{"no redirect", `{"redirect_uris":[]}`, "invalid_redirect_uri"},
		{"http on a public host", `{"redirect_uris":["http://example.com/cb"]}`, "invalid_redirect_uri"},
		{"fragment", `{"redirect_uris":["http://127.0.0.1/cb#x"]}`, "invalid_redirect_uri"},
		{"relative", `{"redirect_uris":["/cb"]}`, "invalid_redirect_uri"},
		{"private_key_jwt", `{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, "invalid_client_metadata"},
		{"implicit", `{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["implicit"]}`, "invalid_client_metadata"},
		{"unknown scope", `{"redirect_uris":["http://127.0.0.1/cb"],"scope":"admin"}`, "invalid_client_metadata"},
		{"not JSON", `redirect_uris`, "invalid_client_metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if st, _, e := register(t, s, tt.meta); st != 400 || e.Code != tt.code {
				t.Errorf("register = %d %+v, want 400 %s", st, e, tt.code)
			}
		})
	}
	st, reg, _ := register(t, s, `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none"}`)
	if st != http.StatusCreated || reg.ClientSecret != "" || reg.ClientID == "" {
		t.Errorf("public client registration = %d %+v, want 201 without a secret", st, reg)
	}
	if got := s.Counts().Registrations; got != 1 {
		t.Errorf("Registrations = %d, want 1", got)
	}
}

func TestServer_Metadata(t *testing.T) {
	s := start(t, Options{Scopes: []string{"a", "b"}, OfflineAccess: true, NoDCR: true, PreregisteredClientID: "x"})
	ctx := t.Context()
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, s.Issuer()+"/.well-known/oauth-protected-resource/mcp", s.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != s.Issuer() || strings.Join(prm.ScopesSupported, " ") != "a b" {
		t.Errorf("PRM = %+v", prm)
	}
	if _, err := oauthex.GetProtectedResourceMetadata(ctx, s.Issuer()+"/.well-known/oauth-protected-resource", s.Issuer(), nil); err != nil {
		t.Errorf("root PRM: %v", err)
	}
	asm, err := oauthex.GetAuthServerMeta(ctx, s.Issuer()+"/.well-known/oauth-authorization-server", s.Issuer(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if asm.RegistrationEndpoint != "" || !asm.AuthorizationResponseIssParameterSupported || asm.RevocationEndpoint == "" ||
		strings.Join(asm.ScopesSupported, " ") != "a b offline_access" || strings.Join(asm.CodeChallengeMethodsSupported, " ") != "S256" {
		t.Errorf("AS metadata = %+v", asm)
	}
	b, _ := json.Marshal(asm)
	if !bytes.Contains(b, []byte(`"token_endpoint_auth_methods_supported":["client_secret_basic","client_secret_post","none"]`)) {
		t.Errorf("AS metadata JSON = %s", b)
	}
}

func TestStart_BadOptions(t *testing.T) {
	for _, o := range []Options{{NoDCR: true}, {PreregisteredClientSecret: "s"}} {
		if s, err := Start(o); err == nil {
			s.Close()
			t.Errorf("Start(%+v) succeeded", o)
		}
	}
}

func TestControl(t *testing.T) {
	s := start(t, Options{})
	f := newFlow(t, s, "http://127.0.0.1:1/cb")
	f.authorize(t)
	if st, e := f.exchange(t); st != http.StatusOK {
		t.Fatalf("exchange = %d %+v", st, e)
	}
	hs := httptest.NewServer(s.ControlHandler())
	defer hs.Close()
	c := Control{Base: hs.URL}
	ctx := t.Context()
	if n, err := c.Counts(ctx); err != nil || n != s.Counts() || n.CodeGrants != 1 {
		t.Errorf("Control.Counts = %+v, %v; want %+v", n, err, s.Counts())
	}
	if toks, err := c.Tokens(ctx); err != nil || !slices.Equal(toks, []string{f.access, f.refreshToken}) {
		t.Errorf("Control.Tokens = %q, %v", toks, err)
	}
	if err := c.RevokeAll(ctx); err != nil {
		t.Fatal(err)
	}
	if st := mcpStatus(t, s, f.access); st != http.StatusUnauthorized {
		t.Errorf("MCP after Control.RevokeAll = %d, want 401", st)
	}
	if _, err := (Control{Base: hs.URL + "/nope"}).Counts(ctx); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Counts on a wrong base = %v, want a 404 error", err)
	}
}
