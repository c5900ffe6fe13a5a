package urlpolicy

// Host and address classification for Policy: canonical host names,
// numeric spellings, and the IP ranges the policy refuses or restricts.

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// canonHost lowercases h and strips IPv6 brackets and one trailing dot.
func canonHost(h string) string {
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// parseIP parses a canonical host as a canonical IP literal.
func parseIP(host string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(host)
	return a, err == nil
}

// matchAny reports whether the canonical host (ip if isIP) matches one of
// patterns. IP patterns match the same address in any IPv4-in-IPv6 form.
func matchAny(patterns []string, host string, ip netip.Addr, isIP bool) bool {
	for _, pat := range patterns {
		pat = canonHost(strings.TrimSpace(pat))
		if suffix, ok := strings.CutPrefix(pat, "*."); ok {
			if !isIP && strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if host == pat {
			return true
		}
		if pip, ok := parseIP(pat); ok && isIP {
			a, _ := unwrap(ip.WithZone(""))
			b, _ := unwrap(pip.WithZone(""))
			if a == b {
				return true
			}
		}
	}
	return false
}

// isLoopbackName reports whether a canonical host name is one of the
// loopback names: localhost and its subdomains (RFC 6761 section 6.3).
func isLoopbackName(host string) bool {
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// hostNameRule returns the rule refusing a canonical host that is not an
// IP literal, or "".
func hostNameRule(host string) string {
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c >= 0x80:
			return fmt.Sprintf("non-ASCII host %q (write it in punycode, xn--…)", host)
		case !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'):
			return fmt.Sprintf("invalid character %q in host %q", c, host)
		}
	}
	labels := strings.Split(host, ".")
	if slices.Contains(labels, "") {
		return fmt.Sprintf("empty label in host %q", host)
	}
	if host == "metadata.google.internal" || host == "metadata" {
		return "cloud metadata host " + host
	}
	if last := labels[len(labels)-1]; isNumber(last) {
		if a, ok := inetAton(host); ok {
			return fmt.Sprintf("non-canonical IP address spelling %q (means %s)", host, a)
		}
		return fmt.Sprintf("numeric host %q is not a valid IP address", host)
	}
	return ""
}

// isNumber reports whether a host label is a number to an IPv4 parser:
// decimal digits, or 0x and hex digits.
func isNumber(label string) bool {
	if rest, ok := strings.CutPrefix(label, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return label != "" && strings.Trim(label, "0123456789") == ""
}

// inetAton parses s as inet_aton(3) does: one to four dot-separated parts,
// each decimal, octal (leading 0) or hex (leading 0x), the last one filling
// the remaining bytes ("127.1" is 127.0.0.1).
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, part := range parts {
		base := 10
		if rest, ok := strings.CutPrefix(part, "0x"); ok {
			base, part = 16, rest
			if part == "" {
				part = "0"
			}
		} else if len(part) > 1 && part[0] == '0' {
			base, part = 8, part[1:]
		}
		v, err := strconv.ParseUint(part, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if v > 255 {
				return netip.Addr{}, false
			}
			b[i] = byte(v)
			continue
		}
		if v>>(8*(4-i)) != 0 {
			return netip.Addr{}, false
		}
		for j := 3; j >= i; j-- {
			b[j], v = byte(v), v>>8
		}
	}
	return netip.AddrFrom4(b), true
}

// addrClass is what an address is to the policy.
type addrClass int

const (
	addrPublic addrClass = iota
	addrLoopback
	addrPrivate
	addrRefused // always refused
)

var (
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, …
		netip.MustParseAddr("fd00:ec2::254"),   // AWS IPv6
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	}
	privatePrefixes = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("fc00::/7"),
		netip.MustParsePrefix("fec0::/10"),
	}
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
)

// classify says what a is; for a private or always-refused address it also
// returns the rule, naming the address.
func classify(a netip.Addr) (addrClass, string) {
	a = a.WithZone("")
	v, how := unwrap(a)
	note := ""
	if how != "" {
		note = fmt.Sprintf(" (as %s %s)", how, a)
	}
	switch {
	case slices.Contains(metadataAddrs, v):
		return addrRefused, fmt.Sprintf("cloud metadata address %s%s", v, note)
	case v.IsUnspecified() || thisNetwork.Contains(v):
		return addrRefused, fmt.Sprintf("unspecified address %s%s", v, note)
	case v.IsLinkLocalUnicast():
		return addrRefused, fmt.Sprintf("link-local address %s%s", v, note)
	case v.IsMulticast():
		return addrRefused, fmt.Sprintf("multicast address %s%s", v, note)
	case v == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return addrRefused, fmt.Sprintf("broadcast address %s%s", v, note)
	case reserved4.Contains(v):
		return addrRefused, fmt.Sprintf("reserved address %s%s", v, note)
	case v.IsLoopback() && (how == "" || how == "IPv4-mapped"):
		return addrLoopback, ""
	case v.IsLoopback():
		return addrPrivate, fmt.Sprintf("loopback address %s%s reaches another host's loopback", v, note)
	}
	for _, pre := range privatePrefixes {
		if pre.Contains(v) {
			return addrPrivate, fmt.Sprintf("private network address %s%s", v, note)
		}
	}
	return addrPublic, ""
}

// unwrap returns the IPv4 address embedded in a (IPv4-mapped ::ffff:0:0/96,
// NAT64 64:ff9b::/96, IPv4-compatible ::/96 but :: and ::1) and how it was
// embedded, or a itself and "".
func unwrap(a netip.Addr) (netip.Addr, string) {
	if a.Is4In6() {
		return a.Unmap(), "IPv4-mapped"
	}
	if !a.Is6() {
		return a, ""
	}
	b := a.As16()
	v4 := netip.AddrFrom4([4]byte(b[12:]))
	switch {
	case nat64.Contains(a):
		return v4, "NAT64"
	case [12]byte(b[:12]) == [12]byte{} && !a.IsUnspecified() && !a.IsLoopback():
		return v4, "IPv4-compatible"
	}
	return a, ""
}
