// Package oauthtest runs a loopback MCP server protected by OAuth 2.1, with
// its own authorization server, for tests of acp-agent's remote sign-in.
//
// # What it serves
//
// One listener on 127.0.0.1 carries both roles (the issuer is the server's
// origin, http://127.0.0.1:PORT):
//
//	/mcp                                         Streamable HTTP MCP endpoint behind a bearer token
//	/.well-known/oauth-protected-resource/mcp    protected resource metadata (RFC 9728); also at the root
//	/.well-known/oauth-authorization-server      authorization server metadata (RFC 8414)
//	/register                                    dynamic client registration (RFC 7591), unless NoDCR
//	/authorize                                   authorization endpoint, no UI: it redirects at once
//	/token                                       authorization_code (PKCE S256) and refresh_token grants
//	/revoke                                      token revocation (RFC 7009)
//
// /authorize has no consent page: a test "user" GETs the authorization URL and
// follows the 302 to the client's redirect URI, which carries code, state and
// iss (RFC 9207). The server is strict, so a client bug fails the test: a
// wrong PKCE verifier, a reused code, a redirect URI that was not registered,
// a resource other than the MCP endpoint, an unknown scope or a client
// authenticated the wrong way each get the OAuth error the RFCs name.
//
// # Servers that are not on loopback, and servers that mislead
//
// With Options.TLS it serves https (Server.CertPool trusts it), and with
// Options.Host its URLs name another host, such as mcp.example.com: a
// client whose resolver and dialer map that name to the loopback listener
// (Server.Addr) sees a remote server. Options.ResourceMetadataURL,
// AuthorizationServer, AuthorizationEndpoint, RegistrationEndpoint,
// TokenEndpoint and RedirectMetadata make it advertise, or redirect its
// metadata to, URLs elsewhere, such as a listener on the client's own
// loopback, for tests of a client that must refuse to follow.
//
// # What tests read back
//
// [Server.Counts] counts registrations, authorizations, code and refresh
// grants, revocations, 401s sent by the MCP endpoint and tool calls;
// [Server.Tokens] lists every token issued, so tests can check none leaks into
// logs, stores or child environments; [Server.RevokeAll] invalidates every
// token so the next request is answered 401 and the client must sign in
// again. The command testfixtures/oauthserver exposes the same server to other
// processes.
package oauthtest

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Subject is the user every token is issued to; the default tool "whoami"
// returns it.
const Subject = "fixture-user"

// mcpPath is the path of the MCP endpoint.
const mcpPath = "/mcp"

// Options configure [Start]. The zero value is a server with dynamic client
// registration, one scope "mcp:tools", one-hour access tokens and the tools
// "whoami" and "echo".
type Options struct {
	// TokenTTL is the lifetime of access tokens; zero or negative means one
	// hour. golang.org/x/oauth2 refreshes a token 10 s before it expires, so
	// a TTL under 10 s makes such a client refresh before every request.
	// Refresh tokens do not expire.
	TokenTTL time.Duration

	// Scopes are the scopes_supported of the protected resource metadata,
	// and the scopes every access token must carry; nil means ["mcp:tools"].
	// A client that asks for no scope is granted all of them.
	Scopes []string

	// PreregisteredClientID, if not empty, is a client the server knows
	// without registration. With PreregisteredClientSecret it is a
	// confidential client (client_secret_basic or client_secret_post),
	// without it a public one (token_endpoint_auth_method "none"). It
	// accepts any loopback redirect URI (RFC 8252 §7.3), for any port.
	PreregisteredClientID, PreregisteredClientSecret string

	// NoDCR turns dynamic client registration off: no registration_endpoint
	// is advertised and /register answers 404.
	NoDCR bool

	// OfflineAccess adds "offline_access" to the authorization server's
	// scopes_supported (SEP-2207), so a client that wants refresh tokens asks
	// for it. Refresh tokens are issued with every code grant either way.
	OfflineAccess bool

	// Tools adds the server's tools. Nil adds "whoami" (returns the token's
	// subject, [Subject]) and "echo" (returns its "text" argument).
	Tools func(*mcp.Server)

	// SSE serves the MCP endpoint over the legacy HTTP+SSE transport
	// (2024-11-05) instead of Streamable HTTP, behind the same protection.
	SSE bool

	// Now is the clock that decides whether an access token has expired;
	// nil means time.Now. Tests move it forward to expire tokens without
	// sleeping.
	Now func() time.Time

	// TLS serves https, with a certificate made at Start for 127.0.0.1,
	// ::1, localhost and Host; [Server.CertPool] trusts it.
	TLS bool

	// Host is the host the server's URLs name (its MCP endpoint, issuer
	// and endpoints), such as "mcp.example.com": a test whose resolver
	// maps that name to the server's loopback listener sees a server that
	// is not on loopback. It still listens on 127.0.0.1 only. Empty means
	// 127.0.0.1.
	Host string

	// The options below make the server lead its clients elsewhere, as a
	// hostile or misconfigured server would: each URL replaces the one it
	// names in what the server advertises, while its own endpoints keep
	// working. Empty means the server's own.
	//
	// ResourceMetadataURL is the resource_metadata of its 401 challenges
	// (RFC 9728 section 5.1). AuthorizationServer is the issuer its
	// protected resource metadata lists in authorization_servers.
	// AuthorizationEndpoint, RegistrationEndpoint and TokenEndpoint are
	// advertised in its authorization server metadata (RFC 8414).
	ResourceMetadataURL   string
	AuthorizationServer   string
	AuthorizationEndpoint string
	RegistrationEndpoint  string
	TokenEndpoint         string

	// RedirectMetadata, if set, is a base URL ("http://127.0.0.1:5555")
	// every metadata request (a path under /.well-known/) is redirected
	// to, with 307 Temporary Redirect, keeping its path and query; the
	// server then serves no metadata itself.
	RedirectMetadata string
}

// Counts are what the server has done since [Start]. Only successful
// operations count, except Unauthorized.
type Counts struct {
	Registrations  int // clients registered through /register
	Authorizations int // authorization codes issued by /authorize
	CodeGrants     int // authorization codes exchanged for tokens
	Refreshes      int // refresh_token grants answered with new tokens
	Revocations    int // /revoke requests from an authenticated client (RFC 7009 answers 200 even for unknown tokens)
	Unauthorized   int // 401 responses sent by the MCP endpoint
	ToolCalls      int // tools/call requests received by the MCP server
}

// Server is a running OAuth-protected MCP server; see the package doc. Its
// methods are safe for concurrent use.
type Server struct {
	opts   Options
	base   string         // http://127.0.0.1:PORT (https, Options.Host), the issuer and the resource's origin
	certs  *x509.CertPool // trusts the server's certificate; nil without Options.TLS
	ln     net.Listener
	srv    *http.Server
	served chan struct{} // closed when the Serve goroutine has returned
	mcp    *mcp.Server   // set once by routes, before Serve starts

	mu sync.Mutex
	// clients maps client_id to its registration; never shrinks.
	clients map[string]*client
	// codes maps an authorization code to its grant; an entry is marked
	// used, not deleted, so reuse can be detected.
	codes map[string]*codeGrant
	// tokens maps every live access and refresh token to its record;
	// revocation deletes entries.
	tokens map[string]*token
	// issued lists every token ever issued, in order.
	issued []string
	counts Counts
	closed bool
}

// Start starts a server on 127.0.0.1 with a free port. Call [Server.Close]
// to stop it.
func Start(opts Options) (*Server, error) {
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.Scopes == nil {
		opts.Scopes = []string{"mcp:tools"}
	}
	opts.Scopes = slices.Clone(opts.Scopes)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PreregisteredClientSecret != "" && opts.PreregisteredClientID == "" {
		return nil, errors.New("oauthtest: PreregisteredClientSecret is set but PreregisteredClientID is empty")
	}
	if opts.NoDCR && opts.PreregisteredClientID == "" {
		return nil, errors.New("oauthtest: NoDCR needs a PreregisteredClientID, or no client could sign in")
	}
	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	var tlsConfig *tls.Config
	var certs *x509.CertPool
	if opts.TLS {
		cert, err := newCert(host)
		if err != nil {
			return nil, err
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		certs = x509.NewCertPool()
		certs.AddCert(cert.Leaf)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("oauthtest: listen on loopback: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	scheme := "http"
	if opts.TLS {
		scheme = "https"
		ln = tls.NewListener(ln, tlsConfig)
	}
	s := &Server{
		opts:    opts,
		base:    scheme + "://" + net.JoinHostPort(host, port),
		certs:   certs,
		ln:      ln,
		served:  make(chan struct{}),
		clients: make(map[string]*client),
		codes:   make(map[string]*codeGrant),
		tokens:  make(map[string]*token),
	}
	if opts.PreregisteredClientID != "" {
		c := &client{id: opts.PreregisteredClientID, secret: opts.PreregisteredClientSecret, anyLoopback: true}
		c.authMethod = "none"
		if c.secret != "" {
			c.authMethod = "" // basic or post
		}
		s.clients[c.id] = c
	}
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

// URL returns the MCP endpoint (Streamable HTTP), http://127.0.0.1:PORT/mcp
// (https with Options.TLS, Options.Host for 127.0.0.1). It is also the
// resource (RFC 8707) tokens are bound to.
func (s *Server) URL() string { return s.base + mcpPath }

// Issuer returns the authorization server's issuer, http://127.0.0.1:PORT
// (https with Options.TLS, Options.Host for 127.0.0.1).
func (s *Server) Issuer() string { return s.base }

// Addr returns the address the server listens on, 127.0.0.1:PORT, which a
// test's dialer connects to when the server's URLs name Options.Host.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// CertPool returns a pool that trusts the server's certificate (with
// Options.TLS), or nil.
func (s *Server) CertPool() *x509.CertPool { return s.certs }

// Counts returns a snapshot of the counters.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Tokens returns every access and refresh token issued so far, live or not,
// in the order they were issued.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// RevokeAll invalidates every access and refresh token and every unused
// authorization code, as if the user had revoked the grant on the server.
// Registered clients stay registered.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
	for _, g := range s.codes {
		g.used = true
	}
}

// Close stops the server at once, closing open connections (including
// streams of MCP sessions) and the MCP sessions, and waits for its
// goroutine. It may be called more than once, concurrently.
func (s *Server) Close() error {
	s.mu.Lock()
	closed := s.closed
	s.closed = true
	s.mu.Unlock()
	if closed {
		<-s.served
		return nil
	}
	err := s.srv.Close()
	<-s.served
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
	return err
}

// routes builds the server's handler.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(mcpPath, s.mcpHandler())
	if s.opts.RedirectMetadata != "" {
		mux.HandleFunc("/.well-known/", s.redirectMetadata)
	} else {
		prm := auth.ProtectedResourceMetadataHandler(s.resourceMetadata(s.URL()))
		mux.Handle("/.well-known/oauth-protected-resource"+mcpPath, prm)
		// At the root the resource is the origin (RFC 9728 §3.1), which is
		// why tokens for the origin are accepted too.
		mux.Handle("/.well-known/oauth-protected-resource", auth.ProtectedResourceMetadataHandler(s.resourceMetadata(s.base)))
		mux.HandleFunc("/.well-known/oauth-authorization-server", s.handleASMetadata)
	}
	if !s.opts.NoDCR {
		mux.HandleFunc("POST /register", s.handleRegister)
	}
	mux.HandleFunc("GET /authorize", s.handleAuthorize)
	mux.HandleFunc("POST /token", s.handleToken)
	mux.HandleFunc("POST /revoke", s.handleRevoke)
	return mux
}

// mcpHandler is the MCP endpoint behind auth.RequireBearerToken; it counts
// the 401s the middleware sends and the tool calls the server receives.
func (s *Server) mcpHandler() http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "oauthtest", Version: "1.0.0"}, nil)
	s.mcp = server
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				s.mu.Lock()
				s.counts.ToolCalls++
				s.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	if s.opts.Tools != nil {
		s.opts.Tools(server)
	} else {
		addDefaultTools(server)
	}
	// A server that names another host is reached on loopback under that
	// name: go-sdk's DNS rebinding protection would refuse it.
	named := s.opts.Host != ""
	var streamable http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: named})
	if s.opts.SSE {
		streamable = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server },
			&mcp.SSEOptions{DisableLocalhostProtection: named})
	}
	// The middleware writes its 401s through statusWriter; requests it lets
	// through reach the MCP handler with the original ResponseWriter, so
	// streaming is unaffected.
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamable.ServeHTTP(w.(*statusWriter).ResponseWriter, r)
	})
	protected := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: cmp.Or(s.opts.ResourceMetadataURL, s.base+"/.well-known/oauth-protected-resource"+mcpPath),
		Scopes:              s.opts.Scopes,
	})(inner)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protected.ServeHTTP(&statusWriter{ResponseWriter: w, s: s}, r)
	})
}

// redirectMetadata answers a metadata GET with a redirect to the same path
// under Options.RedirectMetadata.
func (s *Server) redirectMetadata(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, strings.TrimSuffix(s.opts.RedirectMetadata, "/")+r.URL.RequestURI(), http.StatusTemporaryRedirect)
}

// statusWriter counts 401 responses written through it.
type statusWriter struct {
	http.ResponseWriter
	s *Server
}

func (w *statusWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		w.s.mu.Lock()
		w.s.counts.Unauthorized++
		w.s.mu.Unlock()
	}
	w.ResponseWriter.WriteHeader(code)
}

// verify is the auth.TokenVerifier of the MCP endpoint: the token must be a
// live access token of this server, unexpired by Options.Now, issued for the
// MCP endpoint (or its origin).
func (s *Server) verify(_ context.Context, value string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	t, ok := s.tokens[value]
	s.mu.Unlock()
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: unknown or revoked token", auth.ErrInvalidToken)
	case t.refresh:
		return nil, fmt.Errorf("%w: a refresh token is not an access token", auth.ErrInvalidToken)
	case !s.validResource(t.resource):
		return nil, fmt.Errorf("%w: token audience %q is not %q", auth.ErrInvalidToken, t.resource, s.URL())
	}
	left := t.expires.Sub(s.opts.Now())
	if left <= 0 {
		return nil, fmt.Errorf("%w: token expired", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{
		Scopes: slices.Clone(t.scopes),
		// The middleware compares with the real clock: translate.
		Expiration: time.Now().Add(left),
		UserID:     Subject,
		Extra:      map[string]any{"client_id": t.clientID},
	}, nil
}

// validResource reports whether a resource indicator (RFC 8707) names this
// server: its MCP endpoint, or its origin as the root metadata does. A
// trailing slash is ignored.
func (s *Server) validResource(r string) bool {
	for _, ok := range []string{s.URL(), s.base} {
		if r == ok || r == ok+"/" {
			return true
		}
	}
	return false
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// addDefaultTools adds "whoami" and "echo".
func addDefaultTools(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "Returns the subject of the caller's access token."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			subject := ""
			if req.Extra != nil && req.Extra.TokenInfo != nil {
				subject = req.Extra.TokenInfo.UserID
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: subject}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Returns its text argument."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
}
