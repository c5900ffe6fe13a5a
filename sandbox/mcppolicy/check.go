package mcppolicy

import (
	"net/url"
	"strings"
)

// Transport is how a server is reached, as far as the policy cares: it
// decides which entries can match the server.
type Transport string

// The transports the policy tells apart; any other matches by name only.
const (
	// TransportStdio is a command the agent starts: it matches by name or
	// command.
	TransportStdio Transport = "stdio"
	// TransportHTTP (Streamable HTTP) and TransportSSE (legacy SSE) are
	// reached at a URL: they match by name or URL.
	TransportHTTP Transport = "http"
	TransportSSE  Transport = "sse"
	// TransportACP is a server the editor hosts over its ACP connection:
	// it matches by name only.
	TransportACP Transport = "acp"
)

// Server is what the policy sees of an MCP server.
type Server struct {
	// Name is the server's name in the session.
	Name string
	// Transport is how it is reached.
	Transport Transport
	// Command is a stdio server's command followed by its arguments.
	Command []string
	// URL is an http or sse server's URL.
	URL string
}

// Check decides whether s may start (or be reached): nil, or a
// *RefusedError naming the deniedMcpServers entry that matched s, or the
// allowlist that lists no entry s matches (see the package documentation
// for the order and Rule for what matches). A nil p allows every server.
func (p *Policy) Check(s Server) error {
	if p == nil {
		return nil
	}
	for i := range p.Denied {
		if p.Denied[i].matches(s) {
			r := p.Denied[i]
			return &RefusedError{Server: s.Name, Source: p.Source, Denied: &r}
		}
	}
	if !p.AllowedDefined {
		return nil
	}
	// Which entries may allow s: a stdio server's command entries when
	// the list has any, an http or sse server's URL entries likewise, else
	// the name entries.
	var commands, urls bool
	for _, r := range p.Allowed {
		commands = commands || r.Command != nil
		urls = urls || r.URL != ""
	}
	byCommand := commands && s.Transport == TransportStdio
	byURL := urls && (s.Transport == TransportHTTP || s.Transport == TransportSSE)
	for _, r := range p.Allowed {
		switch {
		case byCommand && r.Command != nil, byURL && r.URL != "", !byCommand && !byURL && r.Name != "":
			if r.matches(s) {
				return nil
			}
		}
	}
	why := "no " + keyName + " entry names it"
	switch {
	case len(p.Allowed) == 0:
		why = "the list is empty, so no server is allowed"
	case byCommand:
		why = "its command matches no " + keyCommand + " entry, and a stdio server must match one when the list has any"
	case byURL:
		why = "its URL matches no " + keyURL + " entry, and an http or sse server must match one when the list has any"
	}
	list := p.allowedKey
	if list == "" {
		list = keyAllowed
	}
	return &RefusedError{Server: s.Name, Source: p.Source, List: list, Why: why}
}

// matches reports whether r matches s (see Rule).
func (r Rule) matches(s Server) bool {
	switch {
	case r.Command != nil:
		return s.Transport == TransportStdio && matchCommand(r.Command, s.Command)
	case r.URL != "":
		return (s.Transport == TransportHTTP || s.Transport == TransportSSE) && s.URL != "" && glob(r.URL, normalURL(s.URL))
	}
	return r.Name != "" && r.Name == s.Name
}

// matchCommand matches a command against a serverCommand pattern (Rule).
func matchCommand(pattern, cmd []string) bool {
	if n := len(pattern); n > 0 && pattern[n-1] == "**" {
		pattern = pattern[:n-1]
		if len(cmd) < len(pattern) {
			return false
		}
		cmd = cmd[:len(pattern)]
	}
	if len(pattern) != len(cmd) {
		return false
	}
	for i := range pattern {
		if !glob(pattern[i], cmd[i]) {
			return false
		}
	}
	return true
}

// glob reports whether s matches pattern whole, "*" in pattern matching
// any run of characters (none included) and every other byte itself. It
// runs in O(len(pattern) × len(s)) at worst.
func glob(pattern, s string) bool {
	// The classic greedy match with one backtrack point: the last "*"
	// seen and where in s its run would end next.
	p, i := 0, 0
	star, next := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, next = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			next++
			p, i = star+1, next
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// normalURL is raw as URL entries are matched against it: without user
// information and fragment, scheme and host lowercased; raw itself when it
// is no absolute URL.
func normalURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return raw
	}
	u.User, u.Fragment, u.RawFragment = nil, "", ""
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return u.String()
}

// lowerOrigin lowercases a URL pattern's scheme and authority: what comes
// before the first "/" after "://" (all that follows "://" when there is
// no such "/"). A pattern without "://" is returned as it is.
func lowerOrigin(pattern string) string {
	i := strings.Index(pattern, "://")
	if i < 0 {
		return pattern
	}
	end := len(pattern)
	if j := strings.IndexByte(pattern[i+3:], '/'); j >= 0 {
		end = i + 3 + j
	}
	return strings.ToLower(pattern[:end]) + pattern[end:]
}
