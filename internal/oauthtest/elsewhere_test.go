package oauthtest

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TestServer_Elsewhere: a server with Options.TLS and Host serves https
// under that name (a client that dials its loopback address and trusts its
// CertPool reaches it), and advertises the URLs it is told to.
func TestServer_Elsewhere(t *testing.T) {
	s := start(t, Options{
		TLS:                   true,
		Host:                  "mcp.example.com",
		ResourceMetadataURL:   "http://127.0.0.1:1/prm",
		AuthorizationServer:   "http://127.0.0.1:2",
		AuthorizationEndpoint: "http://127.0.0.1:3/authorize",
		RegistrationEndpoint:  "http://127.0.0.1:4/register",
		TokenEndpoint:         "http://127.0.0.1:5/token",
	})
	if !strings.HasPrefix(s.URL(), "https://mcp.example.com:") || s.Issuer()+"/mcp" != s.URL() {
		t.Fatalf("URL = %s, Issuer = %s", s.URL(), s.Issuer())
	}
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: s.CertPool()},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, s.Addr())
		},
	}}
	ctx := t.Context()
	resp, err := c.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, `resource_metadata="http://127.0.0.1:1/prm"`) {
		t.Errorf("MCP without a token = %s %q, want 401 pointing at the given metadata", resp.Status, ch)
	}
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, s.Issuer()+"/.well-known/oauth-protected-resource/mcp", s.URL(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != "http://127.0.0.1:2" {
		t.Errorf("authorization_servers = %q", prm.AuthorizationServers)
	}
	asm, err := oauthex.GetAuthServerMeta(ctx, s.Issuer()+"/.well-known/oauth-authorization-server", s.Issuer(), c)
	if err != nil {
		t.Fatal(err)
	}
	if asm.AuthorizationEndpoint != "http://127.0.0.1:3/authorize" || asm.RegistrationEndpoint != "http://127.0.0.1:4/register" ||
		asm.TokenEndpoint != "http://127.0.0.1:5/token" || asm.RevocationEndpoint != s.Issuer()+"/revoke" {
		t.Errorf("AS metadata = %+v", asm)
	}
}

// TestServer_RedirectMetadata: every metadata request is redirected, path
// and query kept; the MCP endpoint is not.
func TestServer_RedirectMetadata(t *testing.T) {
	s := start(t, Options{RedirectMetadata: "http://127.0.0.1:9/"})
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server?x=1", "/.well-known/openid-configuration"} {
		resp, err := noRedirect.Get(s.Issuer() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusTemporaryRedirect || loc != "http://127.0.0.1:9"+path {
			t.Errorf("GET %s = %s to %q, want 307 to the same path at the other base", path, resp.Status, loc)
		}
	}
	if st := mcpStatus(t, s, ""); st != http.StatusUnauthorized {
		t.Errorf("MCP without a token = %d, want 401", st)
	}
}
