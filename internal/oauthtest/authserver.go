package oauthtest

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// codeTTL is how long an authorization code can be exchanged.
const codeTTL = 10 * time.Minute

// Token endpoint client authentication methods (RFC 7591 §2).
const (
	authNone  = "none"
	authBasic = "client_secret_basic"
	authPost  = "client_secret_post"
)

// codeGrant is an authorization code and what was authorized with it.
type codeGrant struct {
	clientID, redirectURI, challenge, resource string
	scopes                                     []string
	expires                                    time.Time
	used                                       bool
}

// token is an issued access or refresh token.
type token struct {
	refresh  bool
	clientID string
	resource string
	scopes   []string
	expires  time.Time // access tokens only
	// grant is the authorization code the token descends from: a reused
	// code, or a revoked refresh token, revokes every token of the grant.
	grant string
}

// oauthError is an OAuth error response (RFC 6749 §5.2, RFC 7591 §3.2.2).
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, format string, args ...any) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="oauthtest"`)
	}
	writeJSON(w, status, oauthError{Code: code, Description: fmt.Sprintf(format, args...)})
}

// newSecret mints an unguessable value with a prefix saying what it is.
func newSecret(prefix string) string { return prefix + rand.Text() }

// supportedScopes are the scopes a client may request.
func (s *Server) supportedScopes() []string {
	if s.opts.OfflineAccess {
		return append(slices.Clone(s.opts.Scopes), "offline_access")
	}
	return s.opts.Scopes
}

// resourceMetadata is the protected resource metadata for resource.
func (s *Server) resourceMetadata(resource string) *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{cmp.Or(s.opts.AuthorizationServer, s.base)},
		ScopesSupported:        s.opts.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "oauthtest",
	}
}

// handleASMetadata serves the authorization server metadata (RFC 8414).
func (s *Server) handleASMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "metadata: method must be GET", http.StatusMethodNotAllowed)
		return
	}
	meta := &oauthex.AuthServerMeta{
		Issuer:                                     s.base,
		AuthorizationEndpoint:                      cmp.Or(s.opts.AuthorizationEndpoint, s.base+"/authorize"),
		TokenEndpoint:                              cmp.Or(s.opts.TokenEndpoint, s.base+"/token"),
		RevocationEndpoint:                         s.base + "/revoke",
		ScopesSupported:                            s.supportedScopes(),
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:          []string{authBasic, authPost, authNone},
		RevocationEndpointAuthMethodsSupported:     []string{authBasic, authPost, authNone},
		CodeChallengeMethodsSupported:              []string{"S256"},
		AuthorizationResponseIssParameterSupported: true,
	}
	if !s.opts.NoDCR {
		meta.RegistrationEndpoint = cmp.Or(s.opts.RegistrationEndpoint, s.base+"/register")
	}
	writeJSON(w, http.StatusOK, meta)
}

// unsupportedScope returns the first scope the server does not know, or "".
func (s *Server) unsupportedScope(scopes []string) string {
	for _, sc := range scopes {
		if !slices.Contains(s.supportedScopes(), sc) {
			return sc
		}
	}
	return ""
}

// pkceValue matches a PKCE code verifier or S256 challenge (RFC 7636 §4.1-4.2).
var pkceValue = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// handleAuthorize is the authorization endpoint (RFC 6749 §4.1.1, OAuth 2.1
// §4.1.1). There is no consent page: a valid request is granted at once.
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	c := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	// Errors about the client or the redirect URI must not redirect
	// (RFC 6749 §4.1.2.1).
	if c == nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "authorize: unknown client_id %q", q.Get("client_id"))
		return
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "authorize: redirect_uri is required")
		return
	}
	if !c.redirectAllowed(redirect) {
		writeError(w, http.StatusBadRequest, "invalid_request", "authorize: redirect_uri %q is not registered for client %q", redirect, c.id)
		return
	}
	target, _ := url.Parse(redirect)
	fail := func(code, desc string) {
		v := target.Query()
		v.Set("error", code)
		v.Set("error_description", desc)
		v.Set("state", q.Get("state"))
		v.Set("iss", s.base)
		target.RawQuery = v.Encode()
		http.Redirect(w, r, target.String(), http.StatusFound)
	}
	if q.Get("response_type") != "code" {
		fail("unsupported_response_type", fmt.Sprintf("authorize: response_type must be code, got %q", q.Get("response_type")))
		return
	}
	if m := q.Get("code_challenge_method"); m != "S256" {
		fail("invalid_request", fmt.Sprintf("authorize: code_challenge_method must be S256, got %q", m))
		return
	}
	challenge := q.Get("code_challenge")
	if !pkceValue.MatchString(challenge) {
		fail("invalid_request", "authorize: code_challenge is missing or malformed (RFC 7636 §4.2)")
		return
	}
	resource := q.Get("resource")
	if !s.validResource(resource) {
		fail("invalid_target", fmt.Sprintf("authorize: resource must be %q (RFC 8707), got %q", s.URL(), resource))
		return
	}
	scopes := strings.Fields(q.Get("scope"))
	if bad := s.unsupportedScope(scopes); bad != "" {
		fail("invalid_scope", fmt.Sprintf("authorize: scope %q is not supported (%s)", bad, strings.Join(s.supportedScopes(), " ")))
		return
	}
	if len(scopes) == 0 {
		scopes = slices.Clone(s.opts.Scopes)
	}
	code := newSecret("code_")
	s.mu.Lock()
	s.codes[code] = &codeGrant{
		clientID: c.id, redirectURI: redirect, challenge: challenge, resource: resource,
		scopes: scopes, expires: s.opts.Now().Add(codeTTL),
	}
	s.counts.Authorizations++
	s.mu.Unlock()
	v := target.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	v.Set("iss", s.base)
	target.RawQuery = v.Encode()
	http.Redirect(w, r, target.String(), http.StatusFound)
}

// authenticateClient authenticates the client of a token or revocation
// request (RFC 6749 §2.3, OAuth 2.1 §2.4) with the method it registered. It
// writes the error response and returns nil on failure.
func (s *Server) authenticateClient(w http.ResponseWriter, r *http.Request, endpoint string) *client {
	id, secret, basic := r.BasicAuth()
	method := authBasic
	if basic {
		// The credentials are form-encoded inside Basic (RFC 6749 §2.3.1).
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", "%s: Basic credentials are not form-encoded", endpoint)
			return nil
		}
		if r.PostForm.Has("client_secret") {
			writeError(w, http.StatusBadRequest, "invalid_request", "%s: client authenticated with both Basic and client_secret", endpoint)
			return nil
		}
		if fid := r.PostForm.Get("client_id"); fid != "" && fid != id {
			writeError(w, http.StatusBadRequest, "invalid_request", "%s: client_id %q differs from the Basic user %q", endpoint, fid, id)
			return nil
		}
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		method = authPost
		if !r.PostForm.Has("client_secret") {
			method = authNone
		}
	}
	s.mu.Lock()
	c := s.clients[id]
	s.mu.Unlock()
	if c == nil {
		writeError(w, http.StatusUnauthorized, "invalid_client", "%s: unknown client_id %q", endpoint, id)
		return nil
	}
	want := c.authMethod
	if want == "" && method != authNone {
		want = method
	}
	if method != want {
		writeError(w, http.StatusUnauthorized, "invalid_client", "%s: client %q must authenticate with %s, not %s", endpoint, id, orBasicPost(want), method)
		return nil
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) != 1 {
		writeError(w, http.StatusUnauthorized, "invalid_client", "%s: wrong client_secret for client %q", endpoint, id)
		return nil
	}
	return c
}

func orBasicPost(m string) string {
	if m == "" {
		return authBasic + " or " + authPost
	}
	return m
}

// tokenResponse is a successful token response (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// handleToken is the token endpoint: authorization_code with PKCE and
// refresh_token with rotation.
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "token: body is not a form: %v", err)
		return
	}
	c := s.authenticateClient(w, r, "token")
	if c == nil {
		return
	}
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "authorization_code":
		s.codeGrant(w, r, c)
	case "refresh_token":
		s.refreshGrant(w, r, c)
	default:
		writeError(w, http.StatusBadRequest, "unsupported_grant_type", "token: grant_type %q is not authorization_code or refresh_token", gt)
	}
}

func (s *Server) codeGrant(w http.ResponseWriter, r *http.Request, c *client) {
	f := r.PostForm
	code := f.Get("code")
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.codes[code]
	switch {
	case g == nil:
		writeError(w, http.StatusBadRequest, "invalid_grant", "token: unknown authorization code")
		return
	case g.used:
		// OAuth 2.1 §4.1.3: a reused code revokes what it granted.
		s.revokeGrantLocked(code)
		writeError(w, http.StatusBadRequest, "invalid_grant", "token: authorization code was already used or revoked")
		return
	case !s.opts.Now().Before(g.expires):
		writeError(w, http.StatusBadRequest, "invalid_grant", "token: authorization code expired")
		return
	case g.clientID != c.id:
		writeError(w, http.StatusBadRequest, "invalid_grant", "token: authorization code was issued to another client")
		return
	case f.Get("redirect_uri") != g.redirectURI:
		writeError(w, http.StatusBadRequest, "invalid_grant", "token: redirect_uri %q is not the one authorized (%q)", f.Get("redirect_uri"), g.redirectURI)
		return
	}
	verifier := f.Get("code_verifier")
	if !pkceValue.MatchString(verifier) {
		writeError(w, http.StatusBadRequest, "invalid_request", "token: code_verifier is missing or malformed (RFC 7636 §4.1)")
		return
	}
	sum := sha256.Sum256([]byte(verifier))
	if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		writeError(w, http.StatusBadRequest, "invalid_grant", "token: code_verifier does not match the code_challenge (PKCE S256)")
		return
	}
	if res := f.Get("resource"); f.Has("resource") && res != g.resource {
		writeError(w, http.StatusBadRequest, "invalid_target", "token: resource %q is not the one authorized (%q)", res, g.resource)
		return
	}
	g.used = true
	s.counts.CodeGrants++
	writeJSON(w, http.StatusOK, s.issueLocked(c.id, g.resource, g.scopes, code))
}

func (s *Server) refreshGrant(w http.ResponseWriter, r *http.Request, c *client) {
	f := r.PostForm
	value := f.Get("refresh_token")
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tokens[value]
	switch {
	case value == "":
		writeError(w, http.StatusBadRequest, "invalid_request", "token: refresh_token is required")
		return
	case t == nil || !t.refresh:
		writeError(w, http.StatusBadRequest, "invalid_grant", "token: refresh_token is unknown, rotated or revoked")
		return
	case t.clientID != c.id:
		writeError(w, http.StatusBadRequest, "invalid_grant", "token: refresh_token was issued to another client")
		return
	}
	if res := f.Get("resource"); f.Has("resource") && res != t.resource {
		writeError(w, http.StatusBadRequest, "invalid_target", "token: resource %q is not the one authorized (%q)", res, t.resource)
		return
	}
	scopes := t.scopes
	if f.Has("scope") {
		scopes = strings.Fields(f.Get("scope"))
		for _, sc := range scopes {
			if !slices.Contains(t.scopes, sc) {
				writeError(w, http.StatusBadRequest, "invalid_scope", "token: scope %q was not granted", sc)
				return
			}
		}
	}
	delete(s.tokens, value) // rotation: the old refresh token stops working
	s.counts.Refreshes++
	writeJSON(w, http.StatusOK, s.issueLocked(c.id, t.resource, scopes, t.grant))
}

// issueLocked mints an access and a refresh token. s.mu must be held.
func (s *Server) issueLocked(clientID, resource string, scopes []string, grant string) tokenResponse {
	access, refresh := newSecret("at_"), newSecret("rt_")
	s.tokens[access] = &token{clientID: clientID, resource: resource, scopes: scopes, grant: grant,
		expires: s.opts.Now().Add(s.opts.TokenTTL)}
	s.tokens[refresh] = &token{refresh: true, clientID: clientID, resource: resource, scopes: scopes, grant: grant}
	s.issued = append(s.issued, access, refresh)
	return tokenResponse{
		AccessToken:  access,
		TokenType:    "Bearer",
		ExpiresIn:    int64(math.Ceil(s.opts.TokenTTL.Seconds())),
		RefreshToken: refresh,
		Scope:        strings.Join(scopes, " "),
	}
}

// revokeGrantLocked deletes every token descending from grant. s.mu must be
// held.
func (s *Server) revokeGrantLocked(grant string) {
	for v, t := range s.tokens {
		if t.grant == grant {
			delete(s.tokens, v)
		}
	}
}

// handleRevoke is token revocation (RFC 7009 §2). Revoking a refresh token
// revokes its whole grant; revoking an access token revokes that token.
// Unknown tokens, and tokens of other clients, are answered 200 and kept.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "revoke: body is not a form: %v", err)
		return
	}
	c := s.authenticateClient(w, r, "revoke")
	if c == nil {
		return
	}
	value := r.PostForm.Get("token")
	if value == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "revoke: token is required")
		return
	}
	s.mu.Lock()
	s.counts.Revocations++
	if t := s.tokens[value]; t != nil && t.clientID == c.id {
		if t.refresh {
			s.revokeGrantLocked(t.grant)
		} else {
			delete(s.tokens, value)
		}
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}
