package urlpolicy

// The URL policy of a sign-in: the URLs an MCP server's OAuth metadata and
// redirects lead the agent to are judged against the server's own place.

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
)

// reach is how close to the agent an address, or an MCP server, is:
// public < private network < loopback.
type reach int

const (
	reachPublic reach = iota
	reachPrivate
	reachLoopback
)

// reachOf is the reach of an address of class c; ok is false for an
// always-refused one.
func reachOf(c addrClass) (r reach, ok bool) {
	switch c {
	case addrLoopback:
		return reachLoopback, true
	case addrPrivate:
		return reachPrivate, true
	case addrPublic:
		return reachPublic, true
	}
	return reachPublic, false
}

// The rules a sign-in breaks by leading the agent closer than its server.
const (
	ruleNotLoopback = "a server not on loopback may not send the agent to loopback"
	ruleNotPrivate  = "a server not on a private network may not send the agent to a private network address"
	rulePlainHTTP   = "plain http, which only a server that is itself plain http on loopback may use, and only to loopback"
	ruleLinkHTTP    = "plain http: the sign-in link must be https (or loopback, for a server on loopback)"
)

// SignInPolicy is the URL policy of the sign-in of one MCP server: which
// URLs its OAuth flow may lead the agent to (protected resource and
// authorization server metadata, client registration, token and
// revocation endpoints, and every redirect of these), and which sign-in
// link the user may be shown. [Policy.SignIn] makes it. It is safe for
// concurrent use.
//
// A URL must pass [Policy.CheckURL], and go no closer to the agent than
// the server itself is:
//
//   - Loopback (localhost, *.localhost, 127.0.0.0/8, ::1, and any name
//     that resolves there) only for a server whose URL is on loopback
//     (localhost, *.localhost or a loopback address; a name that merely
//     resolves to loopback does not count).
//   - A private network address (as a literal or resolved) only for a
//     server on loopback, or on a private network address the policy
//     allows (its literal, or, for a name, one of its addresses, looked up
//     with Resolver when a URL needs it); the policy's own private-network
//     rule applies on top.
//   - https only, except plain http to loopback for a server that is
//     itself plain http on loopback (local test and development servers);
//     AllowHosts does not widen this.
//
// The rules are checked on the URL of each request and redirect, and on
// every address its client dials (DNS rebinding cannot lead a name
// elsewhere). A redirect must also keep https (no downgrade) and may not
// lead into a loopback or non-public address whatever the server is, as
// go-sdk's OAuth discovery client checks: the client given to go-sdk
// replaces its redirect check, so the check is kept here.
type SignInPolicy struct {
	p *Policy
	// host is the server's canonical host.
	host string
	// fixed is the server's reach when its host is an IP literal or a
	// loopback name; named says it is another name, whose reach is looked
	// up (reachPublic or reachPrivate, never reachLoopback).
	fixed reach
	named bool
	// plainLoopback says the server is plain http on a loopback host.
	plainLoopback bool
}

// SignIn returns the sign-in policy of the MCP server at server, a URL
// CheckURL accepted.
func (p *Policy) SignIn(server *url.URL) *SignInPolicy {
	p = p.orDefault()
	o := originOf(server)
	s := &SignInPolicy{p: p, host: o.host}
	switch ip, isIP := parseIP(o.host); {
	case isIP:
		c, _ := classify(ip)
		s.fixed, _ = reachOf(c)
	case isLoopbackName(o.host):
		s.fixed = reachLoopback
	default:
		s.named = true
	}
	s.plainLoopback = o.scheme == "http" && !s.named && s.fixed == reachLoopback
	return s
}

// serverReach is how close the server is; for a name, it looks the name up
// (a failed lookup counts as public).
func (s *SignInPolicy) serverReach(ctx context.Context) reach {
	if !s.named {
		return s.fixed
	}
	addrs, err := s.p.resolve(ctx, s.host)
	if err != nil {
		return reachPublic
	}
	allowed := matchAny(s.p.AllowHosts, s.host, netip.Addr{}, false)
	for _, a := range addrs {
		if c, rule := classify(a); c == addrPrivate && s.p.addrRule(c, rule, allowed) == "" {
			return reachPrivate
		}
	}
	return reachPublic
}

// reachRule returns the rule refusing a destination of reach r, or "".
func (s *SignInPolicy) reachRule(ctx context.Context, r reach) string {
	switch {
	case r == reachPublic:
		return ""
	case r == reachLoopback && (s.named || s.fixed < reachLoopback):
		return ruleNotLoopback
	case r == reachPrivate && s.serverReach(ctx) < reachPrivate:
		return ruleNotPrivate
	}
	return ""
}

// staticReach is the reach of a canonical host known without DNS: an IP
// literal's (ok false for an always-refused one) or a loopback name's.
func staticReach(host string) (r reach, ok bool) {
	if ip, isIP := parseIP(host); isIP {
		c, _ := classify(ip)
		return reachOf(c)
	}
	if isLoopbackName(host) {
		return reachLoopback, true
	}
	return reachPublic, false
}

// CheckURL checks a URL the sign-in would send a request to, without
// dialing: the rules of [Policy.CheckURL], then those of SignInPolicy
// that need no lookup of the URL's host (a name is judged by its addresses
// when dialed). It may look up the server's own name, with ctx. It returns
// the parsed URL, or a *Error naming the URL and the rule, such as
// "a server not on loopback may not send the agent to loopback".
func (s *SignInPolicy) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	if u, err := url.Parse(raw); err == nil {
		if r, ok := staticReach(canonHost(u.Hostname())); ok {
			if rule := s.reachRule(ctx, r); rule != "" {
				return nil, &Error{URL: RedactURL(raw), Rule: rule}
			}
		}
	}
	u, err := s.p.CheckURL(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "http" {
		if r, ok := staticReach(canonHost(u.Hostname())); !s.plainLoopback || !ok || r != reachLoopback {
			return nil, &Error{URL: RedactURL(raw), Rule: rulePlainHTTP}
		}
	}
	return u, nil
}

// CheckLink checks the sign-in link (the authorization URL) the user is
// shown, which the agent never fetches: an absolute http or https URL
// without userinfo, https unless the server is on loopback and the link is
// too, and on loopback only for a server on loopback. The URL policy's
// address rules do not apply: the user's browser, not the agent, follows
// it. A refusal is a *Error.
func (s *SignInPolicy) CheckLink(raw string) error {
	refuse := func(rule string) error { return &Error{URL: RedactURL(raw), Rule: rule} }
	u, err := url.Parse(raw)
	if err != nil {
		return refuse("malformed URL")
	}
	host := canonHost(u.Hostname())
	r, ok := staticReach(host)
	loopback := ok && r == reachLoopback
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return refuse(fmt.Sprintf("scheme %q not allowed (only https)", u.Scheme))
	case u.User != nil:
		return refuse("userinfo (user:password@) not allowed in the URL")
	case host == "":
		return refuse("empty host")
	case loopback && (s.named || s.fixed < reachLoopback):
		return refuse(ruleNotLoopback)
	case u.Scheme == "http" && !loopback:
		return refuse(ruleLinkHTTP)
	}
	return nil
}

// HTTPClient returns the client for every request of the sign-in. A
// request whose URL CheckURL refuses fails with its *Error, before
// any connection; so does a redirect that breaks the rules of
// SignInPolicy. Its dialer applies the policy's rules
// ([Policy.DialContext]) and SignInPolicy's to every address it dials, and plain http dials
// loopback only. At most 10 redirects are followed. The client has no
// overall timeout: use the request context.
func (s *SignInPolicy) HTTPClient() *http.Client {
	lim := dialLimit{addr: s.addrRule}
	plain := lim
	plain.loopbackOnly, plain.strict = true, true
	return &http.Client{
		Transport:     &signInTransport{s: s, plain: s.p.transport(plain), tls: s.p.transport(lim)},
		CheckRedirect: s.checkRedirect,
	}
}

// addrRule is the dialLimit.addr of the sign-in's client.
func (s *SignInPolicy) addrRule(ctx context.Context, a netip.Addr, c addrClass) string {
	r, _ := reachOf(c)
	if rule := s.reachRule(ctx, r); rule != "" {
		return fmt.Sprintf("%s, and %s", a, rule)
	}
	return ""
}

// checkRedirect is the CheckRedirect of the sign-in's client.
func (s *SignInPolicy) checkRedirect(req *http.Request, via []*http.Request) error {
	if _, err := s.CheckURL(req.Context(), req.URL.String()); err != nil {
		return err
	}
	if len(via) > maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	refuse := func(format string, args ...any) error {
		return &Error{URL: RedactURL(req.URL.String()), Rule: fmt.Sprintf(format, args...)}
	}
	if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return refuse("a redirect from https to plain http (a downgrade)")
	}
	// go-sdk's rule: no redirect into a loopback or non-public address.
	host := canonHost(req.URL.Hostname())
	if isLoopbackName(host) {
		return refuse("a redirect into loopback (%s)", host)
	}
	addrs := []netip.Addr{}
	if ip, isIP := parseIP(host); isIP {
		addrs = append(addrs, ip)
	} else {
		var err error
		if addrs, err = s.p.resolve(req.Context(), req.URL.Hostname()); err != nil {
			return fmt.Errorf("sandbox: looking up the redirect host %s: %w", host, err)
		}
	}
	for _, a := range addrs {
		switch c, _ := classify(a); c {
		case addrLoopback:
			return refuse("a redirect into loopback address %s", a)
		case addrPrivate, addrRefused:
			return refuse("a redirect into non-public address %s", a)
		}
	}
	return nil
}

// signInTransport sends a request only to a URL the sign-in policy
// accepts, over a transport whose dialer enforces it for the URL's scheme.
type signInTransport struct {
	s          *SignInPolicy
	plain, tls *http.Transport
}

func (t *signInTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	u, err := t.s.CheckURL(req.Context(), req.URL.String())
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	if u.Scheme == "http" {
		return t.plain.RoundTrip(req)
	}
	return t.tls.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of both transports.
func (t *signInTransport) CloseIdleConnections() {
	t.plain.CloseIdleConnections()
	t.tls.CloseIdleConnections()
}
