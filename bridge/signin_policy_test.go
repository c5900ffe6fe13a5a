package bridge

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/internal/oauthtest"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// remoteHost is the name under which the tests' "remote" MCP servers
// serve, and remoteAddr the public address the tests' resolver gives it;
// the dialer takes that address to the server's loopback listener.
const remoteHost = "mcp.example.com"

var remoteAddr = netip.MustParseAddr("203.0.113.10")

// remotePolicy is the default URL policy, but for its DNS and dialer:
// remoteHost resolves to the public remoteAddr, which leads to srv. Other
// addresses are dialed as they are, so that a request the policy let
// through would reach a trap.
func remotePolicy(srv *oauthtest.Server) *urlpolicy.Policy {
	return &urlpolicy.Policy{
		RootCAs: srv.CertPool(),
		Resolver: func(_ context.Context, host string) ([]netip.Addr, error) {
			if strings.EqualFold(strings.TrimSuffix(host, "."), remoteHost) {
				return []netip.Addr{remoteAddr}, nil
			}
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		},
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, _, _ := net.SplitHostPort(addr); host == remoteAddr.String() {
				addr = srv.Addr()
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
}

// trap is a listener on the agent's loopback that a hostile server points
// the agent at; it records every request it receives.
type trap struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string // "METHOD /path", in order
}

func newTrap(t *testing.T) *trap {
	tr := &trap{}
	tr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.reqs = append(tr.reqs, r.Method+" "+r.URL.Path)
		tr.mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(tr.Close)
	return tr
}

func (tr *trap) requests() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.reqs...)
}

// connectSignIn connects a Manager with sign-in on to the one server
// "remote" at srv, under policy; prompt shows the user the sign-in link.
func connectSignIn(t *testing.T, srv *oauthtest.Server, policy *urlpolicy.Policy, prompt func(ctx context.Context, server, url string) error) *Manager {
	t.Helper()
	logs := &testutil.Buffer{}
	m := NewManager(&Options{
		URLs:   policy,
		OAuth:  &OAuth{Store: signin.NewMemory(), Prompt: prompt},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	if err := m.Connect(t.Context(), []ServerSpec{{Name: "remote", Transport: TransportHTTP, URL: srv.URL()}}); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSignIn_RemoteServerCannotSteerToLoopback: a server that is not on
// loopback cannot lead the agent to a listener on the agent's loopback, by
// naming it as its authorization server, registration, token or
// authorization endpoint, or by redirecting its metadata there, over http
// or https; nor may a server on https loopback lead it to plain http. The
// trap receives nothing, nobody is asked to sign in, no client is
// registered, and the server fails saying which URL broke which rule.
func TestSignIn_RemoteServerCannotSteerToLoopback(t *testing.T) {
	// In opts and url, TRAP stands for the trap's address, 127.0.0.1:PORT.
	tests := []struct {
		name     string
		opts     oauthtest.Options
		kind     string // EndpointError.Kind
		url      string // EndpointError.URL
		rule     string // EndpointError.Rule; "" is the loopback rule
		loopback bool   // the server is https on 127.0.0.1, not remoteHost
	}{
		{name: "authorization server", opts: oauthtest.Options{AuthorizationServer: "http://TRAP"},
			kind: "authorization server metadata", url: "http://TRAP/.well-known/oauth-authorization-server"},
		{name: "registration endpoint", opts: oauthtest.Options{RegistrationEndpoint: "http://TRAP/register"},
			kind: "client registration endpoint", url: "http://TRAP/register"},
		{name: "token endpoint", opts: oauthtest.Options{TokenEndpoint: "http://TRAP/token"},
			kind: "token endpoint", url: "http://TRAP/token"},
		{name: "token endpoint over https", opts: oauthtest.Options{TokenEndpoint: "https://TRAP/token"},
			kind: "token endpoint", url: "https://TRAP/token"},
		{name: "token endpoint on localhost", opts: oauthtest.Options{TokenEndpoint: "http://localhost:PORT/token"},
			kind: "token endpoint", url: "http://localhost:PORT/token"},
		{name: "authorization endpoint", opts: oauthtest.Options{AuthorizationEndpoint: "http://TRAP/authorize"},
			kind: "authorization endpoint", url: "http://TRAP/authorize"},
		{name: "metadata redirect", opts: oauthtest.Options{RedirectMetadata: "http://TRAP"},
			kind: "authorization server metadata redirect", url: "http://TRAP/.well-known/oauth-authorization-server"},
		{name: "http token endpoint of an https loopback server", opts: oauthtest.Options{TokenEndpoint: "http://TRAP/token"}, loopback: true,
			kind: "token endpoint", url: "http://TRAP/token",
			rule: "plain http, which only a server that is itself plain http on loopback may use, and only to loopback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTrap(t)
			_, port, _ := net.SplitHostPort(tr.Listener.Addr().String())
			fill := strings.NewReplacer("TRAP", tr.Listener.Addr().String(), "PORT", port).Replace
			o := tt.opts
			o.AuthorizationServer, o.RegistrationEndpoint, o.TokenEndpoint = fill(o.AuthorizationServer), fill(o.RegistrationEndpoint), fill(o.TokenEndpoint)
			o.AuthorizationEndpoint, o.RedirectMetadata = fill(o.AuthorizationEndpoint), fill(o.RedirectMetadata)
			url := fill(tt.url)
			o.TLS = true
			if !tt.loopback {
				o.Host = remoteHost
			}
			srv, err := oauthtest.Start(o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			m := connectSignIn(t, srv, remotePolicy(srv), func(_ context.Context, _, url string) error {
				t.Errorf("the user was asked to sign in at %s", url)
				return errors.New("declined by the test")
			})

			if got := tr.requests(); len(got) != 0 {
				t.Errorf("the trap on loopback received %q", got)
			}
			st := m.Servers()[0]
			var ee *signin.EndpointError
			if st.State != StateFailed || !errors.As(st.Err, &ee) || !errors.Is(st.Err, urlpolicy.ErrRefused) {
				t.Fatalf("server: %v %v, want failed with a refused URL", st.State, st.Err)
			}
			rule := tt.rule
			if rule == "" {
				rule = "a server not on loopback may not send the agent to loopback"
			}
			if ee.Server != "remote" || ee.Kind != tt.kind || ee.URL != url || ee.Rule != rule {
				t.Errorf("refusal = %+v\nwant server remote, kind %q, URL %s, rule %q", ee, tt.kind, url, rule)
			}
			want := tt.kind + " " + url + ` of MCP server "remote" is refused: ` + rule
			if !strings.Contains(st.Err.Error(), want) {
				t.Errorf("error %q\nwant it to contain %q", st.Err, want)
			}
			if c := srv.Counts(); c.Registrations != 0 || c.Authorizations != 0 || c.CodeGrants != 0 {
				t.Errorf("server counts %+v, want no registration and no sign-in", c)
			}
		})
	}
}

// followRemote does what the user's browser does with a sign-in link of a
// server at remoteHost: it GETs the link (resolving remoteHost to srv's
// listener) and follows the redirect to the agent's loopback callback.
func followRemote(t *testing.T, srv *oauthtest.Server, link string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: srv.CertPool()},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, _, _ := net.SplitHostPort(addr); host == remoteHost {
				addr = srv.Addr()
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, link, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("following the sign-in link: %s %s", resp.Status, b)
	}
}

// TestSignIn_RemoteServer: a remote server whose OAuth endpoints are its
// own https ones signs in through the sign-in policy (its name resolved
// to a public address at every dial); a 401 challenge that points the
// agent's metadata discovery at loopback is skipped, not followed.
func TestSignIn_RemoteServer(t *testing.T) {
	tr := newTrap(t)
	srv, err := oauthtest.Start(oauthtest.Options{TLS: true, Host: remoteHost, ResourceMetadataURL: tr.URL + "/.well-known/oauth-protected-resource/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	prompts := make(chan string, 1)
	states := make(chan ServerStatus, 8)
	m := NewManager(&Options{
		URLs:           remotePolicy(srv),
		OAuth:          &OAuth{Store: signin.NewMemory(), Prompt: func(_ context.Context, _, url string) error { prompts <- url; return nil }},
		OnStateChanged: func(st ServerStatus) { states <- st },
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	if err := m.Connect(t.Context(), []ServerSpec{{Name: "remote", Transport: TransportHTTP, URL: srv.URL()}}); err != nil {
		t.Fatal(err)
	}
	if st := m.Servers()[0]; st.State != StateSignIn {
		t.Fatalf("after Connect: %v %v, want needs sign-in", st.State, st.Err)
	}
	h := &signInHarness{prompts: prompts, states: states}
	link := h.prompt(t)
	if !strings.HasPrefix(link, srv.Issuer()+"/authorize?") {
		t.Fatalf("sign-in link %s, want the server's own authorization endpoint", link)
	}
	followRemote(t, srv, link)
	if st := h.state(t); st.State != StateConnected {
		t.Fatalf("after sign-in: %v %v", st.State, st.Err)
	}
	res, err := toolByName(t, m, "mcp__remote__whoami").Execute(t.Context(), "c", nil, nil)
	if err != nil || res.IsError {
		t.Fatalf("whoami = %+v, %v", res, err)
	}
	if got := tr.requests(); len(got) != 0 {
		t.Errorf("the trap on loopback received %q", got)
	}
}
