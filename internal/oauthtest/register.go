package oauthtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// client is a registered (or preregistered) OAuth client.
type client struct {
	id, secret string
	// authMethod is authNone, authBasic or authPost; "" (preregistered
	// confidential clients) accepts authBasic or authPost.
	authMethod   string
	redirectURIs []string
	// anyLoopback accepts any loopback redirect URI (preregistered clients).
	anyLoopback bool
}

// handleRegister is dynamic client registration (RFC 7591 §3).
func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) {
	var m oauthex.ClientRegistrationMetadata
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	if err := dec.Decode(&m); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "register: body is not client metadata JSON: %v", err)
		return
	}
	if len(m.RedirectURIs) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_redirect_uri", "register: redirect_uris is required")
		return
	}
	for _, u := range m.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_redirect_uri", "register: redirect_uris: %v", err)
			return
		}
	}
	if m.TokenEndpointAuthMethod == "" {
		m.TokenEndpointAuthMethod = authBasic // RFC 7591 §2 default
	}
	if !slices.Contains([]string{authNone, authBasic, authPost}, m.TokenEndpointAuthMethod) {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "register: token_endpoint_auth_method %q is not one of none, client_secret_basic, client_secret_post", m.TokenEndpointAuthMethod)
		return
	}
	if len(m.GrantTypes) == 0 {
		m.GrantTypes = []string{"authorization_code"}
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			writeError(w, http.StatusBadRequest, "invalid_client_metadata", "register: grant_types: %q is not supported (authorization_code, refresh_token)", g)
			return
		}
	}
	if len(m.ResponseTypes) == 0 {
		m.ResponseTypes = []string{"code"}
	}
	if !slices.Equal(m.ResponseTypes, []string{"code"}) {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "register: response_types must be [\"code\"], got %q", m.ResponseTypes)
		return
	}
	if bad := s.unsupportedScope(strings.Fields(m.Scope)); bad != "" {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "register: scope %q is not supported (%s)", bad, strings.Join(s.supportedScopes(), " "))
		return
	}
	c := &client{id: newSecret("client_"), authMethod: m.TokenEndpointAuthMethod, redirectURIs: slices.Clone(m.RedirectURIs)}
	if c.authMethod != authNone {
		c.secret = newSecret("secret_")
	}
	s.mu.Lock()
	s.clients[c.id] = c
	s.counts.Registrations++
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, &oauthex.ClientRegistrationResponse{
		ClientRegistrationMetadata: m,
		ClientID:                   c.id,
		ClientSecret:               c.secret,
		ClientIDIssuedAt:           time.Now(),
	})
}

// checkRedirectURI applies OAuth 2.1 §2.3.1 to a redirect URI being
// registered: absolute, no fragment, and https unless it is a loopback IP
// literal (or a private-use scheme of a native app).
func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: %v", raw, err)
	case !u.IsAbs():
		return fmt.Errorf("%q is not absolute", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("%q has a fragment", raw)
	case slices.Contains([]string{"javascript", "data", "vbscript"}, strings.ToLower(u.Scheme)):
		return fmt.Errorf("%q has a forbidden scheme", raw)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return fmt.Errorf("%q uses http on a host that is not a loopback IP literal", raw)
	}
	return nil
}

// isLoopback reports whether host is a loopback IP literal or "localhost".
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// redirectAllowed reports whether c may be sent to redirect: a registered
// URI, compared as a string, except that the port of a loopback http URI may
// differ (RFC 8252 §7.3).
func (c *client) redirectAllowed(redirect string) bool {
	if slices.Contains(c.redirectURIs, redirect) {
		return true
	}
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme != "http" || !isLoopback(u.Hostname()) || u.Fragment != "" {
		return false
	}
	if c.anyLoopback {
		return true
	}
	for _, reg := range c.redirectURIs {
		ru, err := url.Parse(reg)
		if err == nil && ru.Scheme == "http" && isLoopback(ru.Hostname()) &&
			ru.Hostname() == u.Hostname() && ru.EscapedPath() == u.EscapedPath() && ru.RawQuery == u.RawQuery {
			return true
		}
	}
	return false
}
