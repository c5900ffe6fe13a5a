package urlpolicy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrRefused is wrapped by every *Error: errors.Is(err, ErrRefused)
// tells a refusal by the URL policy from a network failure.
var ErrRefused = errors.New("refused by the URL policy")

// The settings of the agent's configuration that widen the URL policy, as a
// Error's Setting names them.
const (
	// SettingAllowPrivateNetworks is the configuration key of
	// Policy.AllowPrivateNetworks: set, it allows a refused private
	// network address.
	SettingAllowPrivateNetworks = "sandbox.allowPrivateNetworks"
	// SettingAllowHosts is the configuration key of Policy.AllowHosts:
	// a host listed there may be reached over plain http, and on loopback
	// under Policy.RefuseLoopback.
	SettingAllowHosts = "sandbox.allowHosts"
)

// Error is a URL or address the URL policy refuses. Its text states the
// fact; [Error.Remedy] says what would allow it, from Setting.
type Error struct {
	// URL is the refused URL, redacted (RedactURL: no query values, no
	// password). It is empty for a refusal at dial time, which sets Addr.
	URL string
	// Addr is the host:port being dialed, for a refusal at dial time.
	Addr string
	// Rule names the rule, such as "private network address 10.0.0.1".
	Rule string
	// Setting is the configuration key that would allow the URL or
	// address: SettingAllowPrivateNetworks for a private network address,
	// SettingAllowHosts for plain http to a host not on loopback and for
	// a loopback host or address refused by Policy.RefuseLoopback; ""
	// when no setting allows it (a cloud metadata address, a malformed
	// URL, a redirect to another origin, a sign-in's rules).
	Setting string
	// Loopback says the refusal is of a loopback host or address under
	// Policy.RefuseLoopback (Setting is then SettingAllowHosts): a
	// front end advises listing the host, not https, which would be
	// refused too.
	Loopback bool
}

// Error reads like `URL "http://10.0.0.1/mcp" refused: private network
// address 10.0.0.1`, or `address "x.example:443" refused: x.example
// resolves to …` at dial time. It does not name Setting.
func (e *Error) Error() string {
	if e.URL == "" && e.Addr != "" {
		return fmt.Sprintf("address %q refused: %s", e.Addr, e.Rule)
	}
	return fmt.Sprintf("URL %q refused: %s", e.URL, e.Rule)
}

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *Error) Unwrap() error { return ErrRefused }

// Remedy says what would allow the URL or address, as the front ends show
// it after the error's text (gateway.ErrorText, whose Remedier contract it
// meets): for a loopback refusal under Policy.RefuseLoopback, "its
// operator may list the host in sandbox.allowHosts" (https would be
// refused too); for plain http, "use https, or add the host to
// sandbox.allowHosts"; for a private network address, " (set
// sandbox.allowPrivateNetworks to allow it)"; "" when no setting allows it.
func (e *Error) Remedy() string {
	switch {
	case e.Loopback:
		return "its operator may list the host in " + e.Setting
	case e.Setting == SettingAllowHosts:
		return "use https, or add the host to " + e.Setting
	case e.Setting != "":
		return " (set " + e.Setting + " to allow it)"
	}
	return ""
}

// maxRedirects is the number of same-origin redirects a client follows.
const maxRedirects = 10

// Policy decides which MCP server URLs (Streamable HTTP and legacy SSE)
// and addresses the agent may reach. The zero value, and a nil *Policy,
// is the default policy. It is safe for concurrent use once built; do not
// change its fields afterwards.
//
// The rules, in order:
//
//   - A host in DenyHosts is refused before anything else.
//   - Only http and https. Plain http only to loopback: localhost,
//     *.localhost, 127.0.0.0/8, ::1 (and ::ffff:127.0.0.0/104); the
//     client's dialer then also requires every address it dials to be
//     loopback.
//   - Always refused, whatever AllowHosts says, as a literal and as any
//     resolved address: link-local (169.254.0.0/16, fe80::/10), cloud
//     metadata (169.254.169.254, fd00:ec2::254, 100.100.100.200, and the
//     hosts metadata.google.internal and metadata), unspecified (0.0.0.0/8,
//     ::), multicast, broadcast and reserved (240.0.0.0/4). An IPv4 address
//     embedded in IPv6 (::ffff:a.b.c.d, NAT64 64:ff9b::/96, IPv4-compatible
//     ::a.b.c.d) is judged as the IPv4 address; a loopback address behind
//     NAT64 or IPv4-compatible counts as private.
//   - Private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7,
//     fec0::/10) only with AllowPrivateNetworks or for a host in AllowHosts.
//   - Loopback is allowed, unless RefuseLoopback is set: then loopback
//     (localhost and *.localhost, 127.0.0.0/8 and ::1, as a literal in any
//     of the embedded forms above and as any resolved address) only for a
//     host in AllowHosts; AllowPrivateNetworks does not widen it.
//   - Userinfo, an empty host, an empty label ("a..b"), a non-ASCII host
//     (write it in punycode), a character outside [a-z0-9._-] in a host
//     name, a port outside 1-65535, and a host that ends in a number but is
//     not a canonical IP literal (2130706433, 0177.0.0.1, 0x7f.1, 127.1) are
//     refused, so that no spelling reaches an address the rules did not see.
//
// Hosts are matched case-insensitively, IPv6 literals without brackets, and
// one trailing dot is ignored.
//
// The URLs a server's OAuth sign-in leads the agent to (its metadata,
// endpoints and their redirects) follow these rules and SignIn's: no
// closer to the agent than the server itself.
type Policy struct {
	// AllowPrivateNetworks lets servers be reached on private addresses
	// (config sandbox.allowPrivateNetworks).
	AllowPrivateNetworks bool
	// AllowHosts are hosts that may use private addresses and plain http
	// (config sandbox.allowHosts). A pattern is an exact host
	// ("mcp.corp", "10.0.0.7", "[fd00::7]") or "*.suffix", which matches
	// the subdomains of suffix ("*.corp.example" matches a.corp.example and
	// a.b.corp.example, not corp.example). AllowHosts never widens the
	// always-refused rules.
	AllowHosts []string
	// DenyHosts are hosts never reached, with the same patterns (config
	// sandbox.denyHosts). Deny wins over everything. An IP pattern also
	// refuses a name that resolves to that address.
	DenyHosts []string
	// RefuseLoopback refuses loopback hosts and addresses (localhost,
	// *.localhost, 127.0.0.0/8, ::1, their IPv4-in-IPv6 forms, and any name
	// that resolves to one) unless the host is in AllowHosts, both in
	// CheckURL and at dial time; AllowPrivateNetworks does not widen it. It
	// is for an agent whose clients are not on its host (acp-agent
	// gateway): this host's loopback services are not theirs to reach. A
	// refusal is a *Error with Setting SettingAllowHosts and
	// Loopback set. A loopback host in AllowHosts may still use plain
	// http. False (the default) allows loopback, as a local agent's
	// editor is on its host.
	RefuseLoopback bool
	// Resolver looks up host names, given as dialed (case and a trailing
	// dot kept); nil means net.DefaultResolver.LookupNetIP(ctx, "ip", host).
	Resolver func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dialer dials a checked IP address ("ip:port"); nil means
	// (&net.Dialer{Timeout: 30 * time.Second}).DialContext.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs are the certificate authorities https servers are verified
	// against; nil means the system's. Tests set it to trust a server of
	// their own; a private CA is another use.
	RootCAs *x509.CertPool
}

func (p *Policy) orDefault() *Policy {
	if p == nil {
		return &Policy{}
	}
	return p
}

// CheckURL parses raw and applies the static rules: those that need no
// DNS lookup. It returns the parsed URL, or a *Error naming raw and
// the rule. A URL that passes may still be refused when a connection is
// dialed, on its resolved addresses.
func (p *Policy) CheckURL(raw string) (*url.URL, error) {
	p = p.orDefault()
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &Error{URL: RedactURL(raw), Rule: "malformed URL: " + RedactURLs(err.Error())}
	}
	shown := RedactURL(raw)
	refuse := func(format string, args ...any) (*url.URL, error) {
		return nil, &Error{URL: shown, Rule: fmt.Sprintf(format, args...)}
	}
	refuseFor := func(setting, rule string) (*url.URL, error) {
		return nil, &Error{URL: shown, Rule: rule, Setting: setting}
	}
	host := canonHost(u.Hostname())
	ip, isIP := parseIP(host)
	if host != "" && matchAny(p.DenyHosts, host, ip, isIP) {
		return refuse("host %s is in sandbox.denyHosts", host)
	}
	switch u.Scheme {
	case "http", "https":
	case "":
		return refuse("missing scheme (only http and https)")
	default:
		return refuse("scheme %q not allowed (only http and https)", u.Scheme)
	}
	if u.User != nil {
		return refuse("userinfo (user:password@) not allowed in the URL")
	}
	if host == "" {
		return refuse("empty host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return refuse("invalid port %q (1-65535)", port)
		}
	}
	allowed := matchAny(p.AllowHosts, host, ip, isIP)
	var loopback bool
	if isIP {
		c, rule := classify(ip)
		if rule := p.loopbackRule(ip, allowed); rule != "" {
			return nil, &Error{URL: shown, Rule: rule, Setting: SettingAllowHosts, Loopback: true}
		}
		if rule := p.addrRule(c, rule, allowed); rule != "" {
			return refuseFor(settingOf(c), rule)
		}
		loopback = c == addrLoopback
	} else {
		if rule := hostNameRule(host); rule != "" {
			return refuse("%s", rule)
		}
		loopback = isLoopbackName(host)
		if loopback && p.RefuseLoopback && !allowed {
			return nil, &Error{URL: shown, Rule: "loopback host " + host + ruleLoopbackWhy, Setting: SettingAllowHosts, Loopback: true}
		}
	}
	if u.Scheme == "http" && !loopback && !allowed {
		return refuseFor(SettingAllowHosts, "plain http only to loopback (localhost, 127.0.0.0/8, ::1)")
	}
	return u, nil
}

// HTTPClient returns a client for the one server at u, a URL CheckURL
// accepted. Its transport has the settings of http.DefaultTransport but no
// proxy (environment proxies are never used) and dials through the policy
// (see DialContext); for a plain http URL whose host is not in AllowHosts,
// every dialed address must also be loopback. A request to another origin
// (scheme, host or port) than u's fails with a *Error; so does a
// redirect to another origin. At most 10 same-origin redirects are
// followed. The client has no overall timeout: use the request context.
func (p *Policy) HTTPClient(u *url.URL) *http.Client {
	p = p.orDefault()
	o := originOf(u)
	ip, isIP := parseIP(o.host)
	loopbackOnly := o.scheme == "http" && !matchAny(p.AllowHosts, o.host, ip, isIP)
	return &http.Client{
		Transport: &originTransport{base: p.transport(dialLimit{loopbackOnly: loopbackOnly}), origin: o},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if originOf(req.URL) != o {
				return &Error{URL: RedactURL(req.URL.String()), Rule: fmt.Sprintf("redirect from %s to another host, port or scheme", o)}
			}
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			return nil
		},
	}
}

// transport returns a transport with the settings of http.DefaultTransport
// but no proxy, dialing through the policy narrowed by lim, and verifying
// https servers against RootCAs.
func (p *Policy) transport(lim dialLimit) *http.Transport {
	var tlsConfig *tls.Config
	if p.RootCAs != nil {
		tlsConfig = &tls.Config{RootCAs: p.RootCAs}
	}
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return p.dial(ctx, network, addr, lim)
		},
		TLSClientConfig:       tlsConfig,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
	}
}

// DialContext dials addr ("host:port") for network "tcp", "tcp4" or
// "tcp6" under the policy: it applies the host rules, resolves a name with
// Resolver, and checks every resolved address. Any always-refused address
// (or one in DenyHosts) refuses the dial; private addresses the policy does
// not allow are skipped. It then dials the remaining addresses, as IP
// literals, in order until one connects, so the address checked is the
// address connected to, even if the name now resolves elsewhere (DNS
// rebinding). A refusal is a *Error naming addr, the address and the
// rule; lookup and dial failures are returned as they are.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return p.orDefault().dial(ctx, network, addr, dialLimit{})
}

// dialLimit narrows the addresses a dial may connect to, beyond the
// policy's own rules. The zero value adds nothing.
type dialLimit struct {
	// loopbackOnly requires every address to be loopback (plain http),
	// unless the host is in AllowHosts and strict is false.
	loopbackOnly bool
	// strict keeps loopbackOnly for a host in AllowHosts too.
	strict bool
	// addr, if non-nil, returns the rule refusing address a of class c
	// (neither addrRefused), or "". Its rule is checked before the
	// policy's private-network rule, and the address is skipped as a
	// private one is.
	addr func(ctx context.Context, a netip.Addr, c addrClass) string
}

func (p *Policy) dial(ctx context.Context, network, addr string, lim dialLimit) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("sandbox: dial %s %s: only tcp is allowed", network, addr)
	}
	rawHost, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("sandbox: dial %s: %w", addr, err)
	}
	refuse := func(format string, args ...any) error {
		return &Error{Addr: addr, Rule: fmt.Sprintf(format, args...)}
	}
	host := canonHost(rawHost)
	ip, isIP := parseIP(host)
	if host == "" {
		return nil, refuse("empty host")
	}
	if matchAny(p.DenyHosts, host, ip, isIP) {
		return nil, refuse("host %s is in sandbox.denyHosts", host)
	}
	allowed := matchAny(p.AllowHosts, host, ip, isIP)
	loopbackOnly := lim.loopbackOnly && (lim.strict || !allowed)
	addrs, prefix := []netip.Addr{ip}, ""
	if !isIP {
		if rule := hostNameRule(host); rule != "" {
			return nil, refuse("%s", rule)
		}
		if addrs, err = p.resolve(ctx, rawHost); err != nil {
			return nil, err
		}
		prefix = host + " resolves to "
	}
	var ok []netip.Addr
	var skipped, skippedSetting string // the rule of the first skipped address, and its Setting
	var skippedLoopback bool           // and its Loopback
	for _, a := range addrs {
		if !isIP && matchAny(p.DenyHosts, a.String(), a, true) {
			return nil, refuse("%s%s, which is in sandbox.denyHosts", prefix, a)
		}
		c, classRule := classify(a)
		if c == addrRefused {
			return nil, refuse("%s%s", prefix, classRule)
		}
		var rule, setting string
		var loop bool
		if lim.addr != nil {
			rule = lim.addr(ctx, a, c)
		}
		if rule == "" {
			if rule = p.loopbackRule(a, allowed); rule != "" {
				setting, loop = SettingAllowHosts, true
			}
		}
		if rule == "" {
			rule, setting = p.addrRule(c, classRule, allowed), settingOf(c)
		}
		if rule == "" && loopbackOnly && c != addrLoopback {
			rule, setting = fmt.Sprintf("%s, and plain http goes only to loopback", a), ""
		}
		if rule != "" {
			if skipped == "" {
				skipped, skippedSetting, skippedLoopback = prefix+rule, setting, loop
			}
			continue
		}
		if a = a.Unmap(); network == "tcp4" && !a.Is4() || network == "tcp6" && a.Is4() {
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		if skipped != "" {
			return nil, &Error{Addr: addr, Rule: skipped, Setting: skippedSetting, Loopback: skippedLoopback}
		}
		return nil, fmt.Errorf("sandbox: dial %s %s: no address of that family", network, addr)
	}
	dial := p.Dialer
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	}
	var first error
	for _, a := range ok {
		c, err := dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

func (p *Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	var err error
	if p.Resolver != nil {
		addrs, err = p.Resolver(ctx, host)
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("sandbox: lookup %s: no addresses", host)
	}
	return addrs, err
}

// settingOf returns the Error.Setting of a refused address of class c:
// SettingAllowPrivateNetworks for a private one, else "".
func settingOf(c addrClass) string {
	if c == addrPrivate {
		return SettingAllowPrivateNetworks
	}
	return ""
}

// addrRule returns the rule refusing an address of class c (whose own rule
// is rule), or "" if the policy allows it; allowed says the host is in
// AllowHosts.
func (p *Policy) addrRule(c addrClass, rule string, allowed bool) string {
	if c == addrRefused || c == addrPrivate && !p.AllowPrivateNetworks && !allowed {
		return rule
	}
	return ""
}

// ruleLoopbackWhy ends the rule of a loopback refusal (RefuseLoopback).
const ruleLoopbackWhy = ", on the agent's own host, not the client's"

// loopbackRule returns the rule refusing address a under RefuseLoopback,
// or "": a is loopback (127.0.0.0/8 or ::1, in any form unwrap sees
// through, NAT64 and IPv4-compatible included) and the host is not in
// AllowHosts (allowed).
func (p *Policy) loopbackRule(a netip.Addr, allowed bool) string {
	if !p.RefuseLoopback || allowed {
		return ""
	}
	if v, _ := unwrap(a.WithZone("")); !v.IsLoopback() {
		return ""
	}
	return "loopback address " + a.WithZone("").String() + ruleLoopbackWhy
}

// originTransport refuses requests to another origin than its server's:
// the legacy SSE transport POSTs to whatever URL the server's endpoint
// event names.
type originTransport struct {
	base   *http.Transport
	origin origin
}

func (t *originTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if originOf(req.URL) != t.origin {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, &Error{URL: RedactURL(req.URL.String()), Rule: fmt.Sprintf("request to another origin than the server's %s", t.origin)}
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of the base transport.
func (t *originTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// origin is a URL's scheme, canonical host and port (the scheme's default
// if the URL has none).
type origin struct{ scheme, host, port string }

func originOf(u *url.URL) origin {
	o := origin{scheme: strings.ToLower(u.Scheme), host: canonHost(u.Hostname()), port: u.Port()}
	if o.port == "" {
		o.port = map[string]string{"http": "80", "https": "443"}[o.scheme]
	}
	return o
}

func (o origin) String() string { return o.scheme + "://" + net.JoinHostPort(o.host, o.port) }
