package urlpolicy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

var (
	noLoopback   = Policy{RefuseLoopback: true}
	wantLoopback = "loopback address"
	wantLoopName = "loopback host"
)

// refuseLoopbackCases are CheckURL's expectations under RefuseLoopback:
// want "" means allowed, else a substring of the rule. Every loopback
// refusal must carry Setting SettingAllowHosts and Loopback.
var refuseLoopbackCases = []checkURLCase{
	// Literals, in every form the policy normalizes.
	{"127.0.0.1", noLoopback, "http://127.0.0.1:8808/mcp", wantLoopback + " 127.0.0.1, on the agent's own host, not the client's"},
	{"127.0.0.1 https", noLoopback, "https://127.0.0.1/mcp", wantLoopback + " 127.0.0.1"},
	{"127.8.9.10", noLoopback, "http://127.8.9.10/mcp", wantLoopback + " 127.8.9.10"},
	{"127.0.0.1 trailing dot", noLoopback, "http://127.0.0.1./mcp", wantLoopback},
	{"::1", noLoopback, "http://[::1]:3000/mcp", wantLoopback + " ::1"},
	{"mapped", noLoopback, "http://[::ffff:127.0.0.1]/mcp", wantLoopback + " ::ffff:127.0.0.1"},
	{"NAT64", noLoopback, "https://[64:ff9b::7f00:1]/", wantLoopback + " 64:ff9b::7f00:1"},
	{"IPv4-compatible", noLoopback, "https://[::127.0.0.1]/", wantLoopback},
	// Names.
	{"localhost", noLoopback, "http://localhost:8808/sse", wantLoopName + " localhost"},
	{"LOCALHOST.", noLoopback, "http://LOCALHOST./sse", wantLoopName + " localhost"},
	{"sub.localhost", noLoopback, "http://app.localhost:3000/mcp", wantLoopName + " app.localhost"},
	{"localhost https", noLoopback, "https://localhost/mcp", wantLoopName},
	// allowPrivateNetworks does not widen it.
	{"private networks allowed", Policy{RefuseLoopback: true, AllowPrivateNetworks: true}, "https://127.0.0.1/", wantLoopback},
	{"private networks allowed, NAT64", Policy{RefuseLoopback: true, AllowPrivateNetworks: true}, "https://[64:ff9b::7f00:1]/", wantLoopback},
	{"private networks allowed, name", Policy{RefuseLoopback: true, AllowPrivateNetworks: true}, "http://localhost/", wantLoopName},
	// allowHosts does, host by host, and plain http stays allowed there.
	{"allowHosts 127.0.0.1", Policy{RefuseLoopback: true, AllowHosts: []string{"127.0.0.1"}}, "http://127.0.0.1:8808/mcp", ""},
	{"allowHosts 127.0.0.1, mapped form", Policy{RefuseLoopback: true, AllowHosts: []string{"127.0.0.1"}}, "http://[::ffff:127.0.0.1]/mcp", ""},
	{"allowHosts 127.0.0.1, another loopback", Policy{RefuseLoopback: true, AllowHosts: []string{"127.0.0.1"}}, "http://127.0.0.2/mcp", wantLoopback + " 127.0.0.2"},
	{"allowHosts 127.0.0.1, not localhost", Policy{RefuseLoopback: true, AllowHosts: []string{"127.0.0.1"}}, "http://localhost/mcp", wantLoopName},
	{"allowHosts [::1]", Policy{RefuseLoopback: true, AllowHosts: []string{"[::1]"}}, "http://[::1]:3000/mcp", ""},
	{"allowHosts localhost", Policy{RefuseLoopback: true, AllowHosts: []string{"localhost"}}, "http://localhost:8808/mcp", ""},
	{"allowHosts *.localhost", Policy{RefuseLoopback: true, AllowHosts: []string{"*.localhost"}}, "http://app.localhost/mcp", ""},
	{"allowHosts *.localhost, not the apex", Policy{RefuseLoopback: true, AllowHosts: []string{"*.localhost"}}, "http://localhost/mcp", wantLoopName},
	// The other rules are unchanged.
	{"deny beats allow", Policy{RefuseLoopback: true, AllowHosts: []string{"127.0.0.1"}, DenyHosts: []string{"127.0.0.1"}}, "http://127.0.0.1/", "denyHosts"},
	{"public https", noLoopback, "https://mcp.example.com/mcp", ""},
	{"public http", noLoopback, "http://mcp.example.com/mcp", wantNotPlain},
	{"private", noLoopback, "https://10.0.0.1/", wantPrivate},
	{"metadata", noLoopback, "http://169.254.169.254/", wantMetadata},
	{"decimal spelling", noLoopback, "http://2130706433/", "non-canonical"},
}

func TestURLPolicy_CheckURLRefuseLoopback(t *testing.T) {
	for _, tt := range refuseLoopbackCases {
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
			loop := strings.HasPrefix(pe.Rule, wantLoopback) || strings.HasPrefix(pe.Rule, wantLoopName)
			if loop != pe.Loopback || loop && pe.Setting != SettingAllowHosts {
				t.Errorf("refusal = %+v: a loopback refusal has Loopback and Setting %q, no other has Loopback", pe, SettingAllowHosts)
			}
		})
	}
}

// A loopback refusal states the fact and names sandbox.allowHosts as the
// setting; without RefuseLoopback loopback is allowed, as it always was.
func TestURLPolicy_RefuseLoopbackErrorText(t *testing.T) {
	_, err := noLoopback.CheckURL("http://127.0.0.1:9/mcp")
	var pe *Error
	want := `URL "http://127.0.0.1:9/mcp" refused: loopback address 127.0.0.1, on the agent's own host, not the client's`
	if !errors.As(err, &pe) || err.Error() != want || pe.Setting != SettingAllowHosts || !pe.Loopback {
		t.Errorf("CheckURL = %v (%#v)\nwant %s, Setting %q, Loopback", err, pe, want, SettingAllowHosts)
	}
	for _, raw := range []string{"http://127.0.0.1:9/mcp", "http://localhost/", "http://[::1]/"} {
		if _, err := (&Policy{}).CheckURL(raw); err != nil {
			t.Errorf("default policy: CheckURL(%q) = %v, want loopback allowed", raw, err)
		}
	}
}

// The dialer refuses what a name resolves to on loopback, as CheckURL
// cannot see it: a name that resolves there now, or later (DNS
// rebinding), never reaches this host's loopback.
func TestURLPolicy_DialContextRefuseLoopback(t *testing.T) {
	answers := map[string][]string{
		"local.test":  {"127.0.0.1"},
		"v6.test":     {"::1"},
		"mapped.test": {"::ffff:127.0.0.1"},
		"nat64.test":  {"64:ff9b::7f00:1"},
		"localhost":   {"127.0.0.1"},
		"mixed.test":  {"127.0.0.1,93.184.216.34"},
	}
	tests := []struct {
		name    string
		policy  Policy
		addr    string
		dialed  string // the address dialed, if allowed
		refused string // a substring of the rule, if refused
	}{
		{"name to loopback", noLoopback, "local.test:8080", "", "local.test resolves to loopback address 127.0.0.1"},
		{"name to ::1", noLoopback, "v6.test:8080", "", "v6.test resolves to loopback address ::1"},
		{"name to mapped", noLoopback, "mapped.test:8080", "", "loopback address ::ffff:127.0.0.1"},
		{"name to NAT64", Policy{RefuseLoopback: true, AllowPrivateNetworks: true}, "nat64.test:8080", "", "loopback address 64:ff9b::7f00:1"},
		{"localhost resolved", noLoopback, "localhost:8080", "", "localhost resolves to loopback address 127.0.0.1"},
		{"literal", noLoopback, "127.0.0.1:8080", "", "loopback address 127.0.0.1"},
		{"literal v6", noLoopback, "[::1]:8080", "", "loopback address ::1"},
		{"private networks allowed", Policy{RefuseLoopback: true, AllowPrivateNetworks: true}, "local.test:8080", "", "loopback address 127.0.0.1"},
		{"loopback skipped", noLoopback, "mixed.test:443", "93.184.216.34:443", ""},
		{"allowHosts name", Policy{RefuseLoopback: true, AllowHosts: []string{"local.test"}}, "local.test:8080", "127.0.0.1:8080", ""},
		{"allowHosts literal", Policy{RefuseLoopback: true, AllowHosts: []string{"127.0.0.1"}}, "127.0.0.1:8080", "127.0.0.1:8080", ""},
		{"allowHosts IP is not the name", Policy{RefuseLoopback: true, AllowHosts: []string{"127.0.0.1"}}, "local.test:8080", "", "loopback address 127.0.0.1"},
		{"default allows it", Policy{}, "local.test:8080", "127.0.0.1:8080", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeNet(t, answers)
			c, err := f.policy(tt.policy).DialContext(t.Context(), "tcp", tt.addr)
			if tt.refused != "" {
				var pe *Error
				if !errors.As(err, &pe) || !errors.Is(err, ErrRefused) {
					t.Fatalf("DialContext = %v, want a *Error", err)
				}
				if !strings.Contains(pe.Rule, tt.refused) || pe.Addr != tt.addr || pe.Setting != SettingAllowHosts || !pe.Loopback {
					t.Errorf("refusal = %+v, want addr %q, rule containing %q, Setting %q, Loopback", pe, tt.addr, tt.refused, SettingAllowHosts)
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

// A name CheckURL accepted (it looks public) and that resolves to a
// public address at first is refused once it resolves to loopback.
func TestURLPolicy_DNSRebindingToLoopback(t *testing.T) {
	f := newFakeNet(t, map[string][]string{"rebind.test": {"93.184.216.34", "127.0.0.1"}})
	p := f.policy(noLoopback)
	u, err := p.CheckURL("https://rebind.test:8443/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.DialContext(t.Context(), "tcp", "rebind.test:8443")
	if err != nil {
		t.Fatalf("first dial: %v", err)
	}
	_ = c.Close()
	_, err = p.HTTPClient(u).Get(u.String())
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Rule, "rebind.test resolves to loopback address 127.0.0.1") || !pe.Loopback {
		t.Fatalf("second dial = %v, want a loopback refusal", err)
	}
	if !slices.Equal(f.dialed, []string{"93.184.216.34:8443"}) {
		t.Errorf("dialed %v", f.dialed)
	}
}

// A loopback server in allowHosts is reached over plain http under
// RefuseLoopback: the client's dialer allows the listed host.
func TestURLPolicy_RefuseLoopbackAllowHostsPlainHTTP(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(ts.Close)
	refused := &Policy{RefuseLoopback: true}
	if _, err := refused.CheckURL(ts.URL + "/mcp"); !errors.Is(err, ErrRefused) {
		t.Fatalf("CheckURL(%s) = %v, want a refusal", ts.URL, err)
	}
	// Dialed directly too: the client of a URL checked elsewhere.
	raw, err := url.Parse(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := refused.HTTPClient(raw).Get(ts.URL + "/mcp"); !errors.Is(err, ErrRefused) {
		t.Fatalf("Get through the dialer = %v, want a refusal", err)
	}
	p := &Policy{RefuseLoopback: true, AllowHosts: []string{"127.0.0.1"}}
	u, err := p.CheckURL(ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.HTTPClient(u).Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Errorf("body = %q", b)
	}
}
