package signin

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// policyHandler returns the Handler of the server at serverURL, under the
// default URL policy's sign-in rules.
func policyHandler(t *testing.T, st Store, serverURL string) *Handler {
	t.Helper()
	var p *urlpolicy.Policy
	u, err := p.CheckURL(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Server: "remote", ServerURL: serverURL, Store: st, URLs: p.SignIn(u)})
}

// TestHandler_RefreshFollowsThePolicy: a stored grant is refreshed only at
// a token endpoint the policy lets its server lead the agent to: the one
// of a server on loopback may be on loopback, the one of a remote server
// may not, and its refresh fails naming the endpoint without a request.
func TestHandler_RefreshFollowsThePolicy(t *testing.T) {
	te := newTokenEndpoint(t, issue("refresh-2"))
	ctx := context.Background()

	st := NewMemory()
	rec := expiredRecord(te)
	rec.ServerURL = "https://mcp.example.com/mcp"
	saved(t, st, rec)
	ts, err := policyHandler(t, st, rec.ServerURL).TokenSource(ctx)
	if err != nil || ts == nil {
		t.Fatalf("TokenSource = %v, %v", ts, err)
	}
	_, err = ts.Token()
	var ee *EndpointError
	if !errors.As(err, &ee) || !errors.Is(err, urlpolicy.ErrRefused) {
		t.Fatalf("Token = %v, want a refused token endpoint", err)
	}
	want := `token endpoint ` + te.URL + `/token of MCP server "remote" is refused: a server not on loopback may not send the agent to loopback`
	if ee.Error() != want {
		t.Errorf("refusal = %q\nwant      %q", ee, want)
	}
	assertNoSecret(t, "the refusal", err.Error())
	if n := te.requests.Load(); n != 0 {
		t.Fatalf("the token endpoint on loopback received %d requests", n)
	}

	st = NewMemory()
	rec = expiredRecord(te)
	rec.ServerURL = te.URL + "/mcp"
	saved(t, st, rec)
	ts, _ = policyHandler(t, st, rec.ServerURL).TokenSource(ctx)
	if tok, err := ts.Token(); err != nil || tok.AccessToken != "new-1" {
		t.Fatalf("Token of a server on loopback = %v, %v; want new-1", tok, err)
	}
}

// TestHandler_LogoutRevokesThroughThePolicy: revocation goes through the
// guarded client: discovery and the revocation endpoint of a server on
// loopback are allowed.
func TestHandler_LogoutRevokesThroughThePolicy(t *testing.T) {
	as := newAuthServer(t, "path", true)
	st := NewMemory()
	saved(t, st, as.record(oauth2.AuthStyleInHeader, secretClient))
	if err := policyHandler(t, st, as.URL+"/mcp").Logout(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(as.revokes) != 2 {
		t.Errorf("%d revocation requests; want 2", len(as.revokes))
	}
}

// TestRequestKind: what an OAuth request is for, as refusals name it.
func TestRequestKind(t *testing.T) {
	form, json := "application/x-www-form-urlencoded", "application/json; charset=utf-8"
	tests := []struct {
		method, url, contentType string
		ctx                      context.Context
		want                     string
	}{
		{"GET", "https://as.example/.well-known/oauth-protected-resource/mcp", "", nil, "protected resource metadata"},
		{"GET", "https://as.example/.well-known/oauth-protected-resource", "", nil, "protected resource metadata"},
		{"GET", "https://as.example/.well-known/oauth-authorization-server/tenant", "", nil, "authorization server metadata"},
		{"GET", "https://as.example/tenant/.well-known/openid-configuration", "", nil, "authorization server metadata"},
		{"POST", "https://as.example/register", json, nil, "client registration endpoint"},
		{"POST", "https://as.example/oauth/token", form, nil, "token endpoint"},
		{"POST", "https://as.example/oauth/revoke", form, withKind(context.Background(), kindRevocation), "revocation endpoint"},
		{"GET", "https://as.example/other", "", nil, ""},
		{"POST", "https://as.example/other", "text/plain", nil, ""},
	}
	for _, tt := range tests {
		ctx := tt.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		req, err := http.NewRequestWithContext(ctx, tt.method, tt.url, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", tt.contentType)
		if got := requestKind(req); got != tt.want {
			t.Errorf("%s %s (%s) = %q, want %q", tt.method, tt.url, tt.contentType, got, tt.want)
		}
	}
}

// TestEndpointError: a refusal names the kind, the URL without its query
// or userinfo, the server and the rule, and unwraps to the policy's.
func TestEndpointError(t *testing.T) {
	pe := &urlpolicy.Error{URL: "http://127.0.0.1:5555/token", Rule: "a rule"}
	g := &guard{server: "remote"}
	err := g.refused("token endpoint", "http://u:p@127.0.0.1:5555/token?code=secret#x", pe)
	want := `token endpoint http://127.0.0.1:5555/token of MCP server "remote" is refused: a rule`
	if err.Error() != want || !errors.Is(err, urlpolicy.ErrRefused) {
		t.Errorf("err = %q (refused %v)\nwant  %q", err, errors.Is(err, urlpolicy.ErrRefused), want)
	}
	if err := g.refused("", "https://x.example/", pe); err.Error() != `URL https://x.example/ of MCP server "remote" is refused: a rule` {
		t.Errorf("without a kind: %q", err)
	}
	other := errors.New("connection refused")
	if err := g.refused("token endpoint", "https://x.example/", other); err != other {
		t.Errorf("a network error became %v", err)
	}
}
