package urlpolicy

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// signInNet is the DNS of the sign-in tests: mcp.example.com is public,
// mcp.corp.example and corp.example.com private, mcp.local.example resolves
// to loopback.
var signInNet = map[string][]string{
	"mcp.example.com":   {"93.184.216.34"},
	"as.example.com":    {"93.184.216.35"},
	"mcp.corp.example":  {"10.0.0.7"},
	"sso.corp.example":  {"10.0.0.8"},
	"mcp.local.example": {"127.0.0.1"},
	"rebind.example":    {"127.0.0.1"},
	"corp.example":      {"10.0.0.5"},
	"mixed.example":     {"10.0.0.5,93.184.216.36"},
	"app.localhost":     {"10.0.0.9"},
	"corp.example.com":  {"10.0.0.7"},
	"sso.example.com":   {"10.0.0.8"},
}

// signInPolicy returns the sign-in policy of server under policy, with
// signInNet as its DNS.
func signInPolicy(t *testing.T, policy Policy, server string) (*SignInPolicy, *fakeNet) {
	t.Helper()
	f := newFakeNet(t, signInNet)
	p := f.policy(policy)
	u, err := p.CheckURL(server)
	if err != nil {
		t.Fatalf("server URL %s: %v", server, err)
	}
	return p.SignIn(u), f
}

// TestSignInPolicy_CheckURL: an endpoint passes the URL policy and goes no
// closer to the agent than its server: loopback only for a server on
// loopback, private networks only for a server on one, plain http only
// from a plain-http loopback server to loopback.
func TestSignInPolicy_CheckURL(t *testing.T) {
	const (
		plainLoopback = "http://127.0.0.1:8080/mcp"
		tlsLoopback   = "https://localhost:8443/mcp"
		remote        = "https://mcp.example.com/mcp"
	)
	tests := []struct {
		name     string
		policy   Policy
		server   string
		endpoint string
		want     string // "" if allowed, else a substring of the rule
	}{
		// A local server, as in tests and development.
		{"loopback to loopback http", Policy{}, plainLoopback, "http://127.0.0.1:9000/token", ""},
		{"loopback to localhost http", Policy{}, plainLoopback, "http://localhost:9000/token", ""},
		{"loopback to v6 loopback", Policy{}, plainLoopback, "http://[::1]:9000/token", ""},
		{"loopback to public https", Policy{}, plainLoopback, "https://as.example.com/token", ""},
		{"loopback to public http", Policy{}, plainLoopback, "http://as.example.com/token", wantNotPlain},
		{"loopback to private", Policy{}, plainLoopback, "https://10.0.0.5/token", wantPrivate},
		{"loopback to private allowed", allowPrivate, plainLoopback, "https://10.0.0.5/token", ""},
		{"loopback to metadata", Policy{}, plainLoopback, "http://169.254.169.254/", wantMetadata},
		{"loopback to allowHosts http", Policy{AllowHosts: []string{"as.corp"}}, plainLoopback, "http://as.corp/token", rulePlainHTTP},
		{"loopback to userinfo", Policy{}, plainLoopback, "http://u:p@127.0.0.1/token", "userinfo"},
		{"loopback to ftp", Policy{}, plainLoopback, "ftp://127.0.0.1/token", `scheme "ftp"`},
		{"https loopback to https loopback", Policy{}, tlsLoopback, "https://127.0.0.1:9000/token", ""},
		{"https loopback to http loopback", Policy{}, tlsLoopback, "http://127.0.0.1:9000/token", rulePlainHTTP},
		// A remote server.
		{"remote to public", Policy{}, remote, "https://as.example.com/token", ""},
		{"remote to loopback http", Policy{}, remote, "http://127.0.0.1:5555/token", ruleNotLoopback},
		{"remote to loopback https", Policy{}, remote, "https://127.0.0.1:5555/token", ruleNotLoopback},
		{"remote to 127.8.9.10", Policy{}, remote, "https://127.8.9.10/token", ruleNotLoopback},
		{"remote to localhost", Policy{}, remote, "http://localhost:5555/token", ruleNotLoopback},
		{"remote to LOCALHOST.", Policy{}, remote, "http://LOCALHOST.:5555/token", ruleNotLoopback},
		{"remote to sub.localhost", Policy{}, remote, "https://app.localhost/token", ruleNotLoopback},
		{"remote to v6 loopback", Policy{}, remote, "https://[::1]:5555/token", ruleNotLoopback},
		{"remote to mapped loopback", Policy{}, remote, "https://[::ffff:127.0.0.1]/token", ruleNotLoopback},
		{"remote to loopback in allowHosts", Policy{AllowHosts: []string{"127.0.0.1"}}, remote, "http://127.0.0.1/token", ruleNotLoopback},
		{"remote to private", Policy{}, remote, "https://10.0.0.5/token", ruleNotPrivate},
		{"remote to private allowed", allowPrivate, remote, "https://10.0.0.5/token", ruleNotPrivate},
		{"remote to private in allowHosts", Policy{AllowHosts: []string{"10.0.0.5"}}, remote, "https://10.0.0.5/token", ruleNotPrivate},
		{"remote to NAT64 loopback", allowPrivate, remote, "https://[64:ff9b::7f00:1]/token", ruleNotPrivate},
		{"remote to public http", Policy{}, remote, "http://as.example.com/token", wantNotPlain},
		{"remote to allowHosts http", Policy{AllowHosts: []string{"as.example.com"}}, remote, "http://as.example.com/token", rulePlainHTTP},
		{"remote to denied", Policy{DenyHosts: []string{"as.example.com"}}, remote, "https://as.example.com/token", "denyHosts"},
		{"remote to metadata", Policy{}, remote, "https://169.254.169.254/", wantMetadata},
		{"remote to spelling", Policy{}, remote, "http://2130706433/token", "non-canonical"},
		// A name that resolves to loopback is not a server on loopback.
		{"name on loopback to loopback", Policy{}, "https://mcp.local.example/mcp", "https://127.0.0.1/token", ruleNotLoopback},
		// A server on a private network, allowed by the policy.
		{"private literal to private", allowPrivate, "https://10.0.0.7/mcp", "https://10.0.0.8/token", ""},
		{"private literal to loopback", allowPrivate, "https://10.0.0.7/mcp", "https://127.0.0.1/token", ruleNotLoopback},
		{"private name to private", allowPrivate, "https://mcp.corp.example/mcp", "https://10.0.0.8/token", ""},
		{"private name in allowHosts to private", Policy{AllowHosts: []string{"mcp.corp.example", "10.0.0.8"}}, "https://mcp.corp.example/mcp", "https://10.0.0.8/token", ""},
		{"private name to private not allowed", Policy{AllowHosts: []string{"mcp.corp.example"}}, "https://mcp.corp.example/mcp", "https://10.0.0.8/token", wantPrivate},
		{"private name to loopback", allowPrivate, "https://mcp.corp.example/mcp", "http://127.0.0.1/token", ruleNotLoopback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, f := signInPolicy(t, tt.policy, tt.server)
			u, err := s.CheckURL(t.Context(), tt.endpoint)
			if tt.want == "" {
				if err != nil || u == nil {
					t.Fatalf("CheckURL(%q) = %v, want allowed", tt.endpoint, err)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || !errors.Is(err, ErrRefused) {
				t.Fatalf("CheckURL(%q) = %v, %v; want a *Error", tt.endpoint, u, err)
			}
			if !strings.Contains(pe.Rule, tt.want) {
				t.Errorf("rule = %q, want it to contain %q", pe.Rule, tt.want)
			}
			if !strings.Contains(tt.endpoint, "@") && pe.URL != tt.endpoint {
				t.Errorf("refused URL = %q, want %q", pe.URL, tt.endpoint)
			}
			if len(f.dialed) != 0 {
				t.Errorf("dialed %v", f.dialed)
			}
		})
	}
}

// TestSignInPolicy_CheckLink: the sign-in link is https, or loopback for a
// server on loopback; the browser, not the agent, follows it.
func TestSignInPolicy_CheckLink(t *testing.T) {
	tests := []struct {
		server, link string
		want         string
	}{
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/authorize?x=1", ""},
		{"http://127.0.0.1:8080/mcp", "https://sso.example.com/authorize", ""},
		{"http://127.0.0.1:8080/mcp", "http://sso.example.com/authorize", ruleLinkHTTP},
		{"https://localhost:8443/mcp", "http://localhost:9/authorize", ""},
		{"https://mcp.example.com/mcp", "https://sso.example.com/authorize", ""},
		{"https://mcp.example.com/mcp", "https://10.0.0.5/authorize", ""}, // the browser's business
		{"https://mcp.example.com/mcp", "http://127.0.0.1:5555/authorize", ruleNotLoopback},
		{"https://mcp.example.com/mcp", "https://localhost/authorize", ruleNotLoopback},
		{"https://mcp.example.com/mcp", "http://sso.example.com/authorize", ruleLinkHTTP},
		{"https://mcp.example.com/mcp", "javascript:alert(1)", `scheme "javascript"`},
		{"https://mcp.example.com/mcp", "https://u:p@sso.example.com/", "userinfo"},
		{"https://mcp.example.com/mcp", "https:///authorize", "empty host"},
	}
	for _, tt := range tests {
		s, _ := signInPolicy(t, Policy{}, tt.server)
		err := s.CheckLink(tt.link)
		var pe *Error
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("server %s: CheckLink(%q) = %v, want allowed", tt.server, tt.link, err)
		case tt.want != "" && (!errors.As(err, &pe) || !strings.Contains(pe.Rule, tt.want)):
			t.Errorf("server %s: CheckLink(%q) = %v, want a refusal containing %q", tt.server, tt.link, err, tt.want)
		}
	}
}

// TestSignInPolicy_Dial: a name is judged by the addresses it resolves to,
// at dial time, and only the addresses checked are dialed.
func TestSignInPolicy_Dial(t *testing.T) {
	tests := []struct {
		name     string
		policy   Policy
		server   string
		endpoint string
		dialed   string // the address dialed, if allowed
		refused  string // a substring of the rule, if refused
	}{
		{"remote to public", Policy{}, "https://mcp.example.com/mcp", "https://as.example.com/token", "93.184.216.35:443", ""},
		{"remote to a name on loopback", Policy{}, "https://mcp.example.com/mcp", "https://rebind.example/token", "",
			"rebind.example resolves to 127.0.0.1, and " + ruleNotLoopback},
		{"remote to a name on a private network", allowPrivate, "https://mcp.example.com/mcp", "https://corp.example/token", "",
			"corp.example resolves to 10.0.0.5, and " + ruleNotPrivate},
		{"remote to a name on both", allowPrivate, "https://mcp.example.com/mcp", "https://mixed.example/token", "93.184.216.36:443", ""},
		{"private to a name on a private network", allowPrivate, "https://mcp.corp.example/mcp", "https://sso.corp.example/token", "10.0.0.8:443", ""},
		{"private to a name on loopback", allowPrivate, "https://mcp.corp.example/mcp", "https://rebind.example/token", "", ruleNotLoopback},
		{"loopback to a name on loopback", Policy{}, "http://127.0.0.1:8080/mcp", "https://rebind.example/token", "127.0.0.1:443", ""},
		{"loopback http to a loopback name on a private network", Policy{AllowPrivateNetworks: true, AllowHosts: []string{"app.localhost"}},
			"http://127.0.0.1:8080/mcp", "http://app.localhost/token", "", "app.localhost resolves to 10.0.0.9, and plain http goes only to loopback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, f := signInPolicy(t, tt.policy, tt.server)
			resp, err := s.HTTPClient().Post(tt.endpoint, "application/x-www-form-urlencoded", strings.NewReader("grant_type=x"))
			if err == nil {
				resp.Body.Close()
			}
			if tt.refused != "" {
				var pe *Error
				if !errors.As(err, &pe) || !strings.Contains(pe.Rule, tt.refused) {
					t.Fatalf("Post = %v, want a refusal containing %q", err, tt.refused)
				}
				if len(f.dialed) != 0 {
					t.Errorf("dialed %v despite the refusal", f.dialed)
				}
				return
			}
			// The fake dialer's connection is closed: the request fails after the dial.
			if errors.Is(err, ErrRefused) || !slices.Equal(f.dialed, []string{tt.dialed}) {
				t.Errorf("Post = %v, dialed %v; want %s dialed", err, f.dialed, tt.dialed)
			}
		})
	}
}

// TestSignInPolicy_DNSRebinding: a name checked once is checked again at
// every dial, against what it resolves to then.
func TestSignInPolicy_DNSRebinding(t *testing.T) {
	f := newFakeNet(t, map[string][]string{"mcp.example.com": {"93.184.216.34"}, "as.example.com": {"93.184.216.35", "127.0.0.1"}})
	p := f.policy(Policy{})
	u, _ := p.CheckURL("https://mcp.example.com/mcp")
	client := p.SignIn(u).HTTPClient()
	for i, want := range []string{"", ruleNotLoopback} {
		_, err := client.Get("https://as.example.com/.well-known/oauth-authorization-server")
		var pe *Error
		if refused := errors.As(err, &pe); refused != (want != "") || refused && !strings.Contains(pe.Rule, "as.example.com resolves to 127.0.0.1, and "+want) {
			t.Fatalf("request %d = %v, want refused %v", i, err, want != "")
		}
		client.CloseIdleConnections()
	}
	if !slices.Equal(f.dialed, []string{"93.184.216.35:443"}) {
		t.Errorf("dialed %v", f.dialed)
	}
}

// TestSignInPolicy_Redirect: a redirect passes the same rules as a request,
// keeps https, and never leads into a loopback or non-public address (the
// check go-sdk's discovery client makes, kept because the client replaces
// it).
func TestSignInPolicy_Redirect(t *testing.T) {
	mux := http.NewServeMux()
	ts := httptest.NewTLSServer(mux) // its certificate covers example.com and *.example.com
	t.Cleanup(ts.Close)
	plain := httptest.NewServer(mux)
	t.Cleanup(plain.Close)
	_, tlsPort, _ := net.SplitHostPort(ts.Listener.Addr().String())
	_, plainPort, _ := net.SplitHostPort(plain.Listener.Addr().String())
	redirect := func(to string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusTemporaryRedirect) }
	}
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.Handle("/to-public", redirect("https://as.example.com:"+tlsPort+"/ok"))
	mux.Handle("/to-loopback", redirect("https://127.0.0.1:"+tlsPort+"/ok"))
	mux.Handle("/to-localhost", redirect("http://localhost:"+plainPort+"/ok"))
	mux.Handle("/to-private-name", redirect("https://sso.example.com:"+tlsPort+"/ok"))
	mux.Handle("/to-metadata", redirect("http://169.254.169.254/latest/meta-data/"))
	mux.Handle("/to-plain", redirect("http://127.0.0.1:"+plainPort+"/ok"))
	mux.Handle("/to-self", redirect("/ok"))
	mux.Handle("/loop", redirect("https://as.example.com:"+tlsPort+"/loop"))

	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	f := newFakeNet(t, signInNet)
	policy := &Policy{
		RootCAs:              pool,
		AllowPrivateNetworks: true,
		Resolver:             f.resolve,
		// The example names resolve to public or private addresses, which
		// lead to the test servers on loopback.
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		},
	}
	signIn := func(t *testing.T, server string) *SignInPolicy {
		u, err := policy.CheckURL(server)
		if err != nil {
			t.Fatal(err)
		}
		return policy.SignIn(u)
	}
	get := func(s *SignInPolicy, u string) (string, error) {
		resp, err := s.HTTPClient().Get(u)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	remote := "https://mcp.example.com:" + tlsPort
	tests := []struct {
		name, server, url string
		want              string // the rule of the refusal, or "" to be followed
	}{
		{"remote to public", remote + "/mcp", remote + "/to-public", ""},
		{"remote to loopback", remote + "/mcp", remote + "/to-loopback", ruleNotLoopback},
		{"remote to localhost", remote + "/mcp", remote + "/to-localhost", ruleNotLoopback},
		{"remote to metadata", remote + "/mcp", remote + "/to-metadata", "cloud metadata"},
		{"private to a private name", "https://corp.example.com:" + tlsPort + "/mcp", "https://corp.example.com:" + tlsPort + "/to-private-name", "a redirect into non-public address 10.0.0.8"},
		{"loopback downgrade", plain.URL + "/mcp", "https://127.0.0.1:" + tlsPort + "/to-plain", "a redirect from https to plain http"},
		{"loopback to loopback", plain.URL + "/mcp", plain.URL + "/to-self", "a redirect into loopback address 127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := get(signIn(t, tt.server), tt.url)
			if tt.want == "" {
				if err != nil || body != "ok" {
					t.Fatalf("Get = %q, %v; want ok", body, err)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || !strings.Contains(pe.Rule, tt.want) {
				t.Fatalf("Get = %q, %v; want a refusal containing %q", body, err, tt.want)
			}
		})
	}
	t.Run("too many", func(t *testing.T) {
		if _, err := get(signIn(t, remote+"/mcp"), remote+"/loop"); err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
			t.Errorf("Get = %v, want stopped after 10 redirects", err)
		}
	})
}

// TestSignInPolicy_RequestBeforeDial: a refused request is not sent: its
// body is closed and nothing is dialed.
func TestSignInPolicy_RequestBeforeDial(t *testing.T) {
	s, f := signInPolicy(t, Policy{}, "https://mcp.example.com/mcp")
	body := &closeRecorder{Reader: strings.NewReader("code=x")}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1:5555/token", body)
	_, err := s.HTTPClient().Do(req)
	var pe *Error
	if !errors.As(err, &pe) || pe.URL != "http://127.0.0.1:5555/token" || pe.Rule != ruleNotLoopback {
		t.Fatalf("Do = %v, want the loopback refusal", err)
	}
	if !body.closed || len(f.dialed) != 0 {
		t.Errorf("body closed %v, dialed %v", body.closed, f.dialed)
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }
