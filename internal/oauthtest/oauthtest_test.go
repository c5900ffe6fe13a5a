package oauthtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// testTimeout bounds each test's context; generous for a loaded machine.
const testTimeout = 60 * time.Second

func start(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// noRedirect is an HTTP client that returns redirects instead of following
// them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// callbackURL listens on a loopback port for the test's life and returns a
// redirect URI on it. Nothing is served: the fetcher reads the redirect.
func callbackURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String() + "/callback"
}

// user is the test's "user": it GETs the authorization URL and reads code,
// state and iss from the redirect. It counts sign-ins.
type user struct {
	mu      sync.Mutex
	signIns int
}

func (u *user) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	u.mu.Lock()
	u.signIns++
	u.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("authorize answered %s, want 302", resp.Status)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("authorize: %s: %s", e, q.Get("error_description"))
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// connect signs in through the go-sdk's AuthorizationCodeHandler and returns
// the MCP session.
func connect(t *testing.T, ctx context.Context, s *Server, u *user, cfg *auth.AuthorizationCodeHandlerConfig) *mcp.ClientSession {
	t.Helper()
	cfg.AuthorizationCodeFetcher = u.fetch
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "oauthtest-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL(), OAuthHandler: h}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func dcrConfig(t *testing.T, method string) *auth.AuthorizationCodeHandlerConfig {
	return &auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:            []string{callbackURL(t)},
				TokenEndpointAuthMethod: method,
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ClientName:              "oauthtest",
			},
		},
	}
}

func callText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("CallTool %s = %+v", name, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestServer_SignInWithDCR(t *testing.T) {
	for _, method := range []string{"", authNone, authBasic, authPost} {
		t.Run("method="+method, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			s := start(t, Options{})
			u := &user{}
			cs := connect(t, ctx, s, u, dcrConfig(t, method))
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, []string{"echo", "whoami"}) {
				t.Errorf("tools = %v, want echo, whoami", names)
			}
			if got := callText(t, ctx, cs, "whoami", nil); got != Subject {
				t.Errorf("whoami = %q, want %q", got, Subject)
			}
			if got := callText(t, ctx, cs, "echo", map[string]any{"text": "hi"}); got != "hi" {
				t.Errorf("echo = %q", got)
			}
			got := s.Counts()
			if got.Registrations != 1 || got.Authorizations != 1 || got.CodeGrants != 1 || got.Refreshes != 0 ||
				got.ToolCalls != 2 || got.Unauthorized < 1 {
				t.Errorf("Counts = %+v, want 1 registration, authorization, code grant, 2 tool calls, some 401s", got)
			}
			if u.signIns != 1 {
				t.Errorf("signed in %d times, want 1", u.signIns)
			}
			if toks := s.Tokens(); len(toks) != 2 || !strings.HasPrefix(toks[0], "at_") || !strings.HasPrefix(toks[1], "rt_") {
				t.Errorf("Tokens = %q, want one access and one refresh token", toks)
			}
		})
	}
}

func TestServer_Preregistered(t *testing.T) {
	for _, secret := range []string{"", "s3cret&=+"} {
		t.Run(fmt.Sprintf("secret=%t", secret != ""), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			s := start(t, Options{PreregisteredClientID: "pre id", PreregisteredClientSecret: secret, NoDCR: true})
			creds := &oauthex.ClientCredentials{ClientID: "pre id", Issuer: s.Issuer()}
			if secret != "" {
				creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
			}
			cs := connect(t, ctx, s, &user{}, &auth.AuthorizationCodeHandlerConfig{PreregisteredClient: creds, RedirectURL: callbackURL(t)})
			if got := callText(t, ctx, cs, "whoami", nil); got != Subject {
				t.Errorf("whoami = %q", got)
			}
			if got := s.Counts(); got.Registrations != 0 || got.CodeGrants != 1 || got.ToolCalls != 1 {
				t.Errorf("Counts = %+v", got)
			}
			resp, err := http.Post(s.Issuer()+"/register", "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1/cb"]}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("POST /register with NoDCR = %s, want 404", resp.Status)
			}
		})
	}
}

// TestServer_Refresh: with a TTL under oauth2's 10 s expiry margin the
// handler's token source refreshes before each request; the server rotates
// refresh tokens, so an old one is refused.
func TestServer_Refresh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s := start(t, Options{TokenTTL: 9 * time.Second})
	u := &user{}
	cs := connect(t, ctx, s, u, dcrConfig(t, authNone))
	before := s.Counts().Refreshes
	for range 3 {
		callText(t, ctx, cs, "echo", map[string]any{"text": "x"})
	}
	got := s.Counts()
	if got.Refreshes < before+3 {
		t.Errorf("Refreshes = %d after 3 calls, want at least %d", got.Refreshes, before+3)
	}
	if got.Authorizations != 1 || u.signIns != 1 {
		t.Errorf("Authorizations = %d, sign-ins = %d, want 1 (refresh, not sign-in)", got.Authorizations, u.signIns)
	}
	// The first refresh token was rotated away.
	first := s.Tokens()[1]
	s.mu.Lock()
	var clientID string
	for id := range s.clients {
		clientID = id
	}
	s.mu.Unlock()
	st, e := postForm(t, s.Issuer()+"/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first}, "client_id": {clientID}}, "", "")
	if st != http.StatusBadRequest || e.Code != "invalid_grant" {
		t.Errorf("refresh with a rotated token = %d %+v, want 400 invalid_grant", st, e)
	}
}

// TestServer_RevokeAll: after RevokeAll the next request is answered 401 and
// the client signs in again.
func TestServer_RevokeAll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s := start(t, Options{})
	u := &user{}
	cs := connect(t, ctx, s, u, dcrConfig(t, ""))
	callText(t, ctx, cs, "whoami", nil)
	before := s.Counts()
	old := s.Tokens()[0]
	s.RevokeAll()
	if st := mcpStatus(t, s, old); st != http.StatusUnauthorized {
		t.Errorf("MCP request with a revoked token = %d, want 401", st)
	}
	callText(t, ctx, cs, "whoami", nil)
	got := s.Counts()
	if got.Unauthorized < before.Unauthorized+2 || got.Authorizations != before.Authorizations+1 || u.signIns != 2 {
		t.Errorf("Counts %+v -> %+v, sign-ins %d: want more 401s and one more sign-in", before, got, u.signIns)
	}
}

// mcpStatus POSTs an initialize request to the MCP endpoint with token and
// returns the status; on 401 it checks the WWW-Authenticate challenge.
func mcpStatus(t *testing.T, s *Server, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, s.URL(), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		want := fmt.Sprintf(`resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, s.Issuer())
		if h := resp.Header.Get("WWW-Authenticate"); !strings.Contains(h, want) {
			t.Errorf("WWW-Authenticate = %q, want %s", h, want)
		}
	}
	return resp.StatusCode
}

// TestServer_CloseEndsSessions: Close leaves no MCP session (and so none of
// its goroutines) behind.
func TestServer_CloseEndsSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s := start(t, Options{})
	cs := connect(t, ctx, s, &user{}, dcrConfig(t, ""))
	callText(t, ctx, cs, "whoami", nil)
	// At least the client's (under load go-sdk's client may open a second
	// one, retrying its initialize): the point is that Close ends them all.
	if n := countSessions(s); n < 1 {
		t.Fatalf("%d sessions before Close, want at least 1", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := countSessions(s); n != 0 {
		t.Errorf("%d sessions after Close, want 0", n)
	}
}

func countSessions(s *Server) int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

// TestServer_OfflineAccess: advertised offline_access is requested by a
// client that wants refresh tokens (SEP-2207) and lands in the grant.
func TestServer_OfflineAccess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s := start(t, Options{OfflineAccess: true})
	cfg := dcrConfig(t, authNone)
	cfg.RequestRefreshToken = true
	cs := connect(t, ctx, s, &user{}, cfg)
	callText(t, ctx, cs, "whoami", nil)
	s.mu.Lock()
	tok := s.tokens[s.issued[0]]
	s.mu.Unlock()
	// The client's scope order varies.
	if tok == nil || strings.Join(slices.Sorted(slices.Values(tok.scopes)), " ") != "mcp:tools offline_access" {
		t.Errorf("granted %+v, want scopes mcp:tools offline_access", tok)
	}
}
