package urlpolicy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// checkURLCase is one CheckURL expectation; want "" means allowed, else a
// substring of the refusal.
type checkURLCase struct {
	name   string
	policy Policy
	url    string
	want   string
}

var (
	allowPrivate = Policy{AllowPrivateNetworks: true}
	wantNotPlain = "plain http only to loopback"
	wantMetadata = "cloud metadata"
	wantPrivate  = "private network address"
)

var checkURLCases = []checkURLCase{
	// Schemes.
	{"ftp", Policy{}, "ftp://example.com/mcp", `scheme "ftp" not allowed`},
	{"file", Policy{}, "file:///etc/passwd", `scheme "file" not allowed`},
	{"ws", Policy{}, "ws://127.0.0.1/mcp", `scheme "ws" not allowed`},
	{"missing scheme", Policy{}, "example.com/mcp", "missing scheme"},
	{"empty", Policy{}, "", "missing scheme"},
	{"malformed", Policy{}, "https://exa mple.com/", "malformed URL"},
	{"https public", Policy{}, "https://mcp.example.com/mcp", ""},
	{"https public IP", Policy{}, "https://93.184.216.34:8443/mcp", ""},
	{"uppercase scheme and host", Policy{}, "HTTPS://MCP.Example.COM/mcp", ""},
	// Plain http.
	{"http localhost", Policy{}, "http://localhost:8808/sse", ""},
	{"http LOCALHOST", Policy{}, "http://LOCALHOST:8808/sse", ""},
	{"http localhost trailing dot", Policy{}, "http://localhost./mcp", ""},
	{"http sub.localhost", Policy{}, "http://app.localhost:3000/mcp", ""},
	{"http 127.0.0.1", Policy{}, "http://127.0.0.1:8808/mcp", ""},
	{"http 127.0.0.1 trailing dot", Policy{}, "http://127.0.0.1./mcp", ""},
	{"http 127.8.9.10", Policy{}, "http://127.8.9.10/mcp", ""},
	{"http ::1", Policy{}, "http://[::1]:3000/mcp", ""},
	{"http mapped loopback", Policy{}, "http://[::ffff:127.0.0.1]/mcp", ""},
	{"http public name", Policy{}, "http://mcp.example.com/mcp", wantNotPlain},
	{"http public IP", Policy{}, "http://93.184.216.34/mcp", wantNotPlain},
	{"http localhost.example", Policy{}, "http://localhost.example.com/", wantNotPlain},
	{"http private IP even if private allowed", allowPrivate, "http://10.0.0.1/mcp", wantNotPlain},
	{"http NAT64 loopback", Policy{}, "http://[64:ff9b::7f00:1]/", "reaches another host's loopback"},
	// Always refused.
	{"link-local", Policy{}, "https://169.254.10.20/", "link-local address 169.254.10.20"},
	{"link-local v6", Policy{}, "https://[fe80::1]/", "link-local address fe80::1"},
	{"link-local v6 zone", Policy{}, "https://[fe80::1%25eth0]/", "link-local address fe80::1"},
	{"metadata v4", Policy{}, "http://169.254.169.254/latest/meta-data/", "cloud metadata address 169.254.169.254"},
	{"metadata v6", Policy{}, "https://[fd00:ec2::254]/", "cloud metadata address fd00:ec2::254"},
	{"metadata alibaba", allowPrivate, "https://100.100.100.200/", wantMetadata},
	{"metadata.google.internal", Policy{}, "https://metadata.google.internal/computeMetadata/v1/", "cloud metadata host metadata.google.internal"},
	{"METADATA.GOOGLE.INTERNAL.", Policy{}, "https://METADATA.GOOGLE.INTERNAL./", wantMetadata},
	{"metadata short name", Policy{}, "https://metadata/", "cloud metadata host metadata"},
	{"metadata in allowHosts", Policy{AllowPrivateNetworks: true, AllowHosts: []string{"169.254.169.254", "metadata.google.internal"}}, "http://169.254.169.254/", wantMetadata},
	{"metadata name in allowHosts", Policy{AllowHosts: []string{"metadata.google.internal"}}, "http://metadata.google.internal/", wantMetadata},
	{"link-local in allowHosts", Policy{AllowHosts: []string{"169.254.1.1"}}, "https://169.254.1.1/", "link-local"},
	{"unspecified v4", Policy{}, "http://0.0.0.0:8080/", "unspecified address 0.0.0.0"},
	{"this network", Policy{}, "https://0.1.2.3/", "unspecified address 0.1.2.3"},
	{"unspecified v6", Policy{}, "http://[::]:8080/", "unspecified address ::"},
	{"multicast v4", Policy{}, "https://224.0.0.251/", "multicast address 224.0.0.251"},
	{"multicast v6", Policy{}, "https://[ff02::1]/", "multicast address ff02::1"},
	{"broadcast", Policy{}, "https://255.255.255.255/", "broadcast address"},
	{"reserved", Policy{}, "https://240.1.2.3/", "reserved address"},
	{"mapped metadata", Policy{}, "https://[::ffff:169.254.169.254]/", "cloud metadata address 169.254.169.254 (as IPv4-mapped ::ffff:169.254.169.254)"},
	{"mapped metadata hex", Policy{}, "https://[::ffff:a9fe:a9fe]/", wantMetadata},
	{"mapped link-local", Policy{}, "https://[::ffff:169.254.1.1]/", "link-local"},
	{"mapped unspecified", Policy{}, "https://[::ffff:0.0.0.0]/", "unspecified"},
	{"mapped multicast", Policy{}, "https://[::ffff:224.0.0.1]/", "multicast"},
	{"mapped broadcast", Policy{}, "https://[::ffff:255.255.255.255]/", "broadcast"},
	{"NAT64 metadata", Policy{}, "https://[64:ff9b::a9fe:a9fe]/", "cloud metadata address 169.254.169.254 (as NAT64 64:ff9b::a9fe:a9fe)"},
	{"IPv4-compatible metadata", Policy{}, "https://[::169.254.169.254]/", "(as IPv4-compatible"},
	{"IPv4-compatible zero net", Policy{}, "https://[::2]/", "unspecified address 0.0.0.2"},
	// Private ranges.
	{"10/8", Policy{}, "https://10.0.0.1/mcp", wantPrivate + " 10.0.0.1"},
	{"172.16/12", Policy{}, "https://172.31.255.254/", wantPrivate},
	{"172.32 is public", Policy{}, "https://172.32.0.1/", ""},
	{"192.168/16", Policy{}, "https://192.168.1.10/", wantPrivate},
	{"100.64/10", Policy{}, "https://100.64.0.1/", wantPrivate},
	{"fc00::/7", Policy{}, "https://[fd12:3456::1]/", wantPrivate},
	{"mapped private", Policy{}, "https://[::ffff:10.0.0.1]/", wantPrivate + " 10.0.0.1 (as IPv4-mapped ::ffff:10.0.0.1)"},
	{"NAT64 private", Policy{}, "https://[64:ff9b::a00:1]/", wantPrivate},
	{"10/8 allowed", allowPrivate, "https://10.0.0.1/mcp", ""},
	{"fc00::/7 allowed", allowPrivate, "https://[fd12:3456::1]/", ""},
	{"mapped private allowed", allowPrivate, "https://[::ffff:10.0.0.1]/", ""},
	// allowHosts widens the private rule and the http rule.
	{"allowHosts private IP", Policy{AllowHosts: []string{"10.0.0.7"}}, "https://10.0.0.7/", ""},
	{"allowHosts private IP, another one", Policy{AllowHosts: []string{"10.0.0.7"}}, "https://10.0.0.8/", wantPrivate},
	{"allowHosts http IP", Policy{AllowHosts: []string{"10.0.0.7"}}, "http://10.0.0.7:8080/", ""},
	{"allowHosts bracketed v6", Policy{AllowHosts: []string{"[fd00::7]"}}, "http://[fd00::7]/", ""},
	{"allowHosts http name", Policy{AllowHosts: []string{"mcp.corp"}}, "http://mcp.corp/mcp", ""},
	{"allowHosts case and dot", Policy{AllowHosts: []string{"MCP.corp."}}, "http://mcp.CORP./mcp", ""},
	{"allowHosts suffix", Policy{AllowHosts: []string{"*.corp.example"}}, "http://a.corp.example/", ""},
	{"allowHosts suffix deep", Policy{AllowHosts: []string{"*.corp.example"}}, "http://x.a.corp.example/", ""},
	{"allowHosts suffix not apex", Policy{AllowHosts: []string{"*.corp.example"}}, "http://corp.example/", wantNotPlain},
	{"allowHosts suffix not lookalike", Policy{AllowHosts: []string{"*.corp.example"}}, "http://evilcorp.example/", wantNotPlain},
	// denyHosts wins.
	{"deny exact", Policy{DenyHosts: []string{"evil.example"}}, "https://evil.example/", "host evil.example is in sandbox.denyHosts"},
	{"deny beats allow", Policy{DenyHosts: []string{"evil.example"}, AllowHosts: []string{"evil.example"}}, "https://EVIL.example./", "denyHosts"},
	{"deny suffix beats allow", Policy{DenyHosts: []string{"*.evil.example"}, AllowHosts: []string{"a.evil.example"}}, "https://a.evil.example/", "denyHosts"},
	{"deny suffix not apex", Policy{DenyHosts: []string{"*.evil.example"}}, "https://evil.example/", ""},
	{"deny before scheme", Policy{DenyHosts: []string{"evil.example"}}, "ftp://evil.example/", "denyHosts"},
	{"deny loopback", Policy{DenyHosts: []string{"127.0.0.1"}}, "http://127.0.0.1:1/mcp", "denyHosts"},
	{"deny mapped form", Policy{DenyHosts: []string{"127.0.0.1"}}, "http://[::ffff:127.0.0.1]/", "denyHosts"},
	{"deny v6", Policy{DenyHosts: []string{"[::1]"}}, "http://[::1]/", "denyHosts"},
	// Numeric spellings.
	{"decimal", Policy{}, "http://2130706433/", `non-canonical IP address spelling "2130706433" (means 127.0.0.1)`},
	{"octal", Policy{}, "http://0177.0.0.1/", `non-canonical IP address spelling "0177.0.0.1" (means 127.0.0.1)`},
	{"hex", Policy{}, "http://0x7f.0.0.1/", `(means 127.0.0.1)`},
	{"hex whole", Policy{}, "http://0x7F000001/", `(means 127.0.0.1)`},
	{"short", Policy{}, "http://127.1/", `non-canonical IP address spelling "127.1" (means 127.0.0.1)`},
	{"short three", Policy{}, "https://10.1.1/", `(means 10.1.0.1)`},
	{"leading zeros", Policy{}, "http://127.000.000.001/", `(means 127.0.0.1)`},
	{"octal metadata", Policy{}, "https://0251.0376.0251.0376/", `(means 169.254.169.254)`},
	{"decimal metadata", Policy{}, "https://2852039166/", `(means 169.254.169.254)`},
	{"trailing dot spelling", Policy{}, "https://2852039166./", `(means 169.254.169.254)`},
	{"out of range", Policy{}, "https://999.1.1.1/", `numeric host "999.1.1.1" is not a valid IP address`},
	{"five parts", Policy{}, "https://1.2.3.4.5/", "not a valid IP address"},
	{"numeric TLD", Policy{}, "https://example.123/", "not a valid IP address"},
	{"spelling in allowHosts", Policy{AllowHosts: []string{"0177.0.0.1"}}, "http://0177.0.0.1/", "non-canonical"},
	// Host and URL shape.
	{"userinfo", Policy{}, "https://user:pass@mcp.example.com/", "userinfo"},
	{"user only", Policy{}, "https://user@mcp.example.com/", "userinfo"},
	{"empty userinfo", Policy{}, "https://@mcp.example.com/", "userinfo"},
	{"empty host", Policy{}, "https:///mcp", "empty host"},
	{"empty host with port", Policy{}, "https://:443/mcp", "empty host"},
	{"opaque", Policy{}, "http:localhost", "empty host"},
	{"empty label", Policy{}, "https://a..example/", "empty label"},
	{"two trailing dots", Policy{}, "http://localhost../", "empty label"},
	{"non-ASCII", Policy{}, "https://ｅｘａｍｐｌｅ.com/", "non-ASCII host"},
	{"fullwidth digits", Policy{}, "https://１２７.0.0.1/", "non-ASCII host"},
	{"punycode", Policy{}, "https://xn--80ak6aa92e.com/", ""},
	{"underscore", Policy{}, "https://my_server.example/", ""},
	{"sub-delim", Policy{}, "https://a$b.example/", "invalid character"},
	{"port 0", Policy{}, "https://mcp.example.com:0/", `invalid port "0"`},
	{"port too big", Policy{}, "https://mcp.example.com:65536/", "invalid port"},
}

func TestURLPolicy_CheckURL(t *testing.T) {
	for _, tt := range checkURLCases {
		t.Run(tt.name, func(t *testing.T) {
			u, err := tt.policy.CheckURL(tt.url)
			if tt.want == "" {
				if err != nil || u == nil {
					t.Fatalf("CheckURL(%q) = %v, want allowed", tt.url, err)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || !errors.Is(err, ErrRefused) {
				t.Fatalf("CheckURL(%q) = %v, %v; want a *Error", tt.url, u, err)
			}
			if !strings.Contains(pe.Rule, tt.want) {
				t.Errorf("rule = %q, want it to contain %q", pe.Rule, tt.want)
			}
			if !strings.Contains(tt.url, "@") && !strings.Contains(err.Error(), fmt.Sprintf("URL %q refused: ", tt.url)) {
				t.Errorf("error %q does not name the URL", err)
			}
		})
	}
}

// A refusal states the fact; Setting names the configuration key that
// would allow it, for the front end to say.
func TestURLPolicy_ErrorText(t *testing.T) {
	var p *Policy // nil is the default policy
	for _, tt := range []struct{ url, text, setting string }{
		{"http://10.0.0.1/mcp", `URL "http://10.0.0.1/mcp" refused: private network address 10.0.0.1`, SettingAllowPrivateNetworks},
		{"http://mcp.example.com/mcp", `URL "http://mcp.example.com/mcp" refused: plain http only to loopback (localhost, 127.0.0.0/8, ::1)`, SettingAllowHosts},
		{"http://169.254.169.254/", `URL "http://169.254.169.254/" refused: cloud metadata address 169.254.169.254`, ""},
	} {
		_, err := p.CheckURL(tt.url)
		var pe *Error
		if !errors.As(err, &pe) || err.Error() != tt.text || pe.Setting != tt.setting {
			t.Errorf("CheckURL(%q) = %v (%#v)\nwant %s, Setting %q", tt.url, err, pe, tt.text, tt.setting)
		}
	}
	_, err := p.CheckURL("https://user:s3cret@mcp.example.com/")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("err = %v, want a refusal without the password", err)
	}
}

// settingFor is the Setting a dial-time refusal with rule carries.
func settingFor(rule string) string {
	if strings.Contains(rule, "private network address") {
		return SettingAllowPrivateNetworks
	}
	return ""
}

// fakeNet is a Resolver and a Dialer that never touch the network.
type fakeNet struct {
	t       *testing.T
	answers map[string][][]netip.Addr // successive answers per host; the last repeats
	mu      sync.Mutex
	asked   map[string]int
	dialed  []string
}

func newFakeNet(t *testing.T, answers map[string][]string) *fakeNet {
	f := &fakeNet{t: t, answers: map[string][][]netip.Addr{}, asked: map[string]int{}}
	for host, list := range answers {
		for _, a := range list {
			var round []netip.Addr
			for _, s := range strings.Split(a, ",") {
				round = append(round, netip.MustParseAddr(s))
			}
			f.answers[host] = append(f.answers[host], round)
		}
	}
	return f
}

func (f *fakeNet) resolve(_ context.Context, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rounds, ok := f.answers[strings.TrimSuffix(strings.ToLower(host), ".")]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := min(f.asked[host], len(rounds)-1)
	f.asked[host]++ // per spelling; tests use one
	return rounds[i], nil
}

func (f *fakeNet) dial(_ context.Context, network, addr string) (net.Conn, error) {
	f.mu.Lock()
	f.dialed = append(f.dialed, addr)
	f.mu.Unlock()
	c1, c2 := net.Pipe()
	_ = c2.Close()
	return c1, nil
}

func (f *fakeNet) policy(p Policy) *Policy {
	p.Resolver, p.Dialer = f.resolve, f.dial
	return &p
}

func TestURLPolicy_DialContext(t *testing.T) {
	answers := map[string][]string{
		"local.test":     {"127.0.0.1"},
		"both.test":      {"::1,127.0.0.1"},
		"corp.test":      {"10.0.0.5"},
		"mixed.test":     {"10.0.0.5,93.184.216.34"},
		"metadata.test":  {"93.184.216.34,169.254.169.254"},
		"mapped.test":    {"::ffff:169.254.169.254"},
		"nat64.test":     {"64:ff9b::a9fe:a9fe"},
		"public.test":    {"93.184.216.34"},
		"multicast.test": {"93.184.216.34,ff02::1"},
	}
	tests := []struct {
		name    string
		policy  Policy
		network string
		addr    string
		dialed  string // the address dialed, if allowed
		refused string // a substring of the rule, if refused
	}{
		{"name to loopback", Policy{}, "tcp", "local.test:8080", "127.0.0.1:8080", ""},
		{"name trailing dot", Policy{}, "tcp", "LOCAL.test.:8080", "127.0.0.1:8080", ""},
		{"v6 first", Policy{}, "tcp", "both.test:80", "[::1]:80", ""},
		{"tcp4 filters", Policy{}, "tcp4", "both.test:80", "127.0.0.1:80", ""},
		{"public", Policy{}, "tcp", "public.test:443", "93.184.216.34:443", ""},
		{"literal loopback", Policy{}, "tcp", "[::1]:80", "[::1]:80", ""},
		{"literal mapped loopback", Policy{}, "tcp", "[::ffff:127.0.0.1]:80", "127.0.0.1:80", ""},
		{"private refused", Policy{}, "tcp", "corp.test:443", "", "corp.test resolves to private network address 10.0.0.5"},
		{"private allowed", Policy{AllowPrivateNetworks: true}, "tcp", "corp.test:443", "10.0.0.5:443", ""},
		{"private allowHosts", Policy{AllowHosts: []string{"*.test"}}, "tcp", "corp.test:443", "10.0.0.5:443", ""},
		{"private skipped", Policy{}, "tcp", "mixed.test:443", "93.184.216.34:443", ""},
		{"public and metadata", Policy{}, "tcp", "metadata.test:443", "", "metadata.test resolves to cloud metadata address 169.254.169.254"},
		{"metadata despite allow", Policy{AllowPrivateNetworks: true, AllowHosts: []string{"metadata.test"}}, "tcp", "metadata.test:443", "", "cloud metadata"},
		{"mapped metadata", Policy{}, "tcp", "mapped.test:443", "", "cloud metadata"},
		{"NAT64 metadata", Policy{}, "tcp", "nat64.test:443", "", "cloud metadata"},
		{"multicast answer", Policy{}, "tcp", "multicast.test:443", "", "multicast"},
		{"literal metadata", Policy{}, "tcp", "169.254.169.254:80", "", "cloud metadata address 169.254.169.254"},
		{"literal private", Policy{}, "tcp", "10.0.0.5:80", "", "private network address 10.0.0.5"},
		{"metadata name, no lookup", Policy{}, "tcp", "metadata.google.internal:80", "", "cloud metadata host"},
		{"spelling", Policy{}, "tcp", "0x7f.1:80", "", "non-canonical"},
		{"deny name", Policy{DenyHosts: []string{"local.test"}}, "tcp", "local.test:80", "", "denyHosts"},
		{"deny resolved IP", Policy{DenyHosts: []string{"10.0.0.5"}, AllowPrivateNetworks: true}, "tcp", "corp.test:80", "", "corp.test resolves to 10.0.0.5, which is in sandbox.denyHosts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeNet(t, answers)
			c, err := f.policy(tt.policy).DialContext(t.Context(), tt.network, tt.addr)
			if tt.refused != "" {
				var pe *Error
				if !errors.As(err, &pe) || !errors.Is(err, ErrRefused) {
					t.Fatalf("DialContext = %v, want a *Error", err)
				}
				if !strings.Contains(pe.Rule, tt.refused) || pe.Addr != tt.addr {
					t.Errorf("refusal = %+v, want addr %q and rule containing %q", pe, tt.addr, tt.refused)
				}
				if want := settingFor(pe.Rule); pe.Setting != want {
					t.Errorf("refusal = %+v, want Setting %q", pe, want)
				}
				if len(f.dialed) != 0 {
					t.Errorf("dialed %v despite the refusal", f.dialed)
				}
				return
			}
			if err != nil {
				t.Fatalf("DialContext = %v", err)
			}
			_ = c.Close()
			if !slices.Equal(f.dialed, []string{tt.dialed}) {
				t.Errorf("dialed %v, want [%s]", f.dialed, tt.dialed)
			}
		})
	}
}

func TestURLPolicy_DialContextErrors(t *testing.T) {
	f := newFakeNet(t, nil)
	p := f.policy(Policy{})
	if _, err := p.DialContext(t.Context(), "tcp", "nowhere.test:80"); err == nil || errors.Is(err, ErrRefused) {
		t.Errorf("lookup failure = %v, want a non-policy error", err)
	}
	if _, err := p.DialContext(t.Context(), "udp", "127.0.0.1:53"); err == nil {
		t.Error("udp was dialed")
	}
	if _, err := p.DialContext(t.Context(), "tcp", "127.0.0.1"); err == nil {
		t.Error("an address without a port was dialed")
	}
	if len(f.dialed) != 0 {
		t.Errorf("dialed %v", f.dialed)
	}
}

func TestURLPolicy_DNSRebinding(t *testing.T) {
	f := newFakeNet(t, map[string][]string{"rebind.test": {"127.0.0.1", "169.254.169.254"}})
	p := f.policy(Policy{})
	if _, err := p.CheckURL("http://rebind.test/"); err == nil {
		t.Fatal("plain http to a name that is not localhost was accepted")
	}
	if _, err := p.CheckURL("https://rebind.test:8443/mcp"); err != nil {
		t.Fatal(err)
	}
	c, err := p.DialContext(t.Context(), "tcp", "rebind.test:8443")
	if err != nil {
		t.Fatalf("first dial: %v", err)
	}
	_ = c.Close()
	_, err = p.DialContext(t.Context(), "tcp", "rebind.test:8443")
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Rule, "rebind.test resolves to cloud metadata address 169.254.169.254") {
		t.Fatalf("second dial = %v, want a refusal naming the metadata address", err)
	}
	if !slices.Equal(f.dialed, []string{"127.0.0.1:8443"}) {
		t.Errorf("dialed %v", f.dialed)
	}
}

func TestURLPolicy_HTTPClientPlainHTTPDialsLoopbackOnly(t *testing.T) {
	f := newFakeNet(t, map[string][]string{"app.localhost": {"10.0.0.9"}})
	p := f.policy(Policy{AllowPrivateNetworks: true})
	u, err := p.CheckURL("http://app.localhost:3000/mcp")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.HTTPClient(u).Get(u.String())
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Rule, "app.localhost resolves to 10.0.0.9, and plain http goes only to loopback") {
		t.Fatalf("Get = %v, want a loopback refusal", err)
	}
	if len(f.dialed) != 0 {
		t.Errorf("dialed %v", f.dialed)
	}

	// In allowHosts, plain http may reach the private address.
	p.AllowHosts = []string{"app.localhost"}
	_, err = p.HTTPClient(u).Get(u.String())
	if errors.Is(err, ErrRefused) || !slices.Equal(f.dialed, []string{"10.0.0.9:3000"}) {
		t.Errorf("Get = %v, dialed %v; want 10.0.0.9:3000 dialed", err, f.dialed)
	}
}

func TestURLPolicy_HTTPClientNoProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:9")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct") }))
	t.Cleanup(ts.Close)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	// A name resolved by the policy, dialed at the server's loopback address.
	p := &Policy{Resolver: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}}
	u, err := p.CheckURL("http://mcp.localhost:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.HTTPClient(u).Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "direct" {
		t.Errorf("body = %q", b)
	}
}

func TestURLPolicy_Redirect(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "other") }))
	t.Cleanup(other.Close)
	var hits atomic.Int32
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/b", http.StatusFound) })
	mux.HandleFunc("/b", func(w http.ResponseWriter, r *http.Request) { hits.Add(1); io.WriteString(w, "b") })
	mux.HandleFunc("/full", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:"+port+"/b", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/host", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+port+"/b", http.StatusFound)
	})
	mux.HandleFunc("/scheme", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://127.0.0.1:"+port+"/b", http.StatusFound)
	})
	mux.HandleFunc("/port", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/", http.StatusFound) })
	mux.HandleFunc("/loop/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			io.WriteString(w, "end")
			return
		}
		http.Redirect(w, r, "/loop/"+strconv.Itoa(n-1), http.StatusFound)
	})

	p := &Policy{}
	u, err := p.CheckURL(ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	client := p.HTTPClient(u)
	tests := []struct {
		path    string
		body    string // the body, if followed
		refused string // the refused target, if refused
	}{
		{"/a", "b", ""},
		{"/full", "b", ""},
		{"/loop/10", "end", ""},
		{"/host", "", "http://localhost:" + port + "/b"},
		{"/scheme", "", "https://127.0.0.1:" + port + "/b"},
		{"/port", "", other.URL + "/"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := client.Get(ts.URL + tt.path)
			if tt.refused != "" {
				var pe *Error
				if !errors.As(err, &pe) || pe.URL != tt.refused || !strings.Contains(pe.Rule, "another host, port or scheme") {
					t.Fatalf("Get = %v, want a refusal of %s", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != tt.body {
				t.Errorf("Get = %d %q, want 200 %q", resp.StatusCode, b, tt.body)
			}
		})
	}
	t.Run("too many", func(t *testing.T) {
		_, err := client.Get(ts.URL + "/loop/11")
		if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
			t.Errorf("Get = %v, want stopped after 10 redirects", err)
		}
	})
	t.Run("request to another origin", func(t *testing.T) {
		_, err := client.Get("http://localhost:" + port + "/b")
		var pe *Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Rule, "another origin") {
			t.Errorf("Get = %v, want a refusal", err)
		}
	})
	if hits.Load() != 2 {
		t.Errorf("/b served %d times, want 2 (the refused redirects must not reach it)", hits.Load())
	}
}

// forbiddenAddr says, independently of the policy's code, why the default
// policy must never accept a, or "".
func forbiddenAddr(a netip.Addr) string {
	a = a.WithZone("").Unmap()
	if nat := netip.MustParsePrefix("64:ff9b::/96"); nat.Contains(a) {
		b := a.As16()
		if why := forbiddenAddr(netip.AddrFrom4([4]byte(b[12:]))); why != "" {
			return "NAT64 " + why
		}
	}
	switch {
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsUnspecified() || a.Is4() && a.As4()[0] == 0:
		return "unspecified"
	case a.IsMulticast():
		return "multicast"
	case a == netip.MustParseAddr("169.254.169.254") || a == netip.MustParseAddr("fd00:ec2::254"):
		return "metadata"
	case a == netip.MustParseAddr("255.255.255.255"):
		return "broadcast"
	case a.IsPrivate() || netip.MustParsePrefix("100.64.0.0/10").Contains(a):
		return "private"
	}
	return ""
}

// unwrapForTest returns the IPv4 address embedded in a (IPv4-mapped,
// NAT64 64:ff9b::/96, IPv4-compatible ::a.b.c.d but :: and ::1), written
// apart from the policy's own unwrap.
func unwrapForTest(a netip.Addr) netip.Addr {
	a = a.WithZone("")
	if a.Is4In6() {
		return a.Unmap()
	}
	b := a.As16()
	if netip.MustParsePrefix("64:ff9b::/96").Contains(a) || a.Is6() && [12]byte(b[:12]) == [12]byte{} && !a.IsUnspecified() && !a.IsLoopback() {
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return a
}

func FuzzURLPolicy_CheckURL(f *testing.F) {
	for _, tt := range slices.Concat(checkURLCases, refuseLoopbackCases) {
		f.Add(tt.url)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// Under RefuseLoopback, nothing on loopback passes: the rules
		// below, and no loopback host or address at all.
		if u, err := (&Policy{RefuseLoopback: true, AllowPrivateNetworks: true}).CheckURL(raw); err == nil {
			host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
			a, perr := netip.ParseAddr(host)
			if perr == nil {
				if v := unwrapForTest(a); v.IsLoopback() {
					t.Fatalf("CheckURL(%q) with RefuseLoopback accepted loopback address %s", raw, a)
				}
			}
			if host == "localhost" || strings.HasSuffix(host, ".localhost") {
				t.Fatalf("CheckURL(%q) with RefuseLoopback accepted loopback host %q", raw, host)
			}
		} else if !errors.Is(err, ErrRefused) {
			t.Fatalf("CheckURL(%q) with RefuseLoopback = %v, not a refusal", raw, err)
		}
		var p Policy
		u, err := p.CheckURL(raw)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("CheckURL(%q) = %v, not a refusal", raw, err)
			}
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.User != nil {
			t.Fatalf("CheckURL(%q) accepted scheme %q, user %v", raw, u.Scheme, u.User)
		}
		host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if host == "" {
			t.Fatalf("CheckURL(%q) accepted an empty host", raw)
		}
		a, perr := netip.ParseAddr(host)
		if perr == nil {
			if why := forbiddenAddr(a); why != "" {
				t.Fatalf("CheckURL(%q) accepted %s address %s", raw, why, a)
			}
		} else if strings.Trim(host, "0123456789.") == "" {
			t.Fatalf("CheckURL(%q) accepted numeric host %q that is not an IP literal", raw, host)
		}
		loopback := host == "localhost" || strings.HasSuffix(host, ".localhost") || perr == nil && a.Unmap().IsLoopback()
		if u.Scheme == "http" && !loopback {
			t.Fatalf("CheckURL(%q) accepted plain http to %q", raw, host)
		}
		if _, err := url.Parse(u.String()); err != nil {
			t.Fatalf("accepted URL %q does not round-trip: %v", u, err)
		}
	})
}
