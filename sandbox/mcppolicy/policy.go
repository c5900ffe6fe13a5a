package mcppolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The keys of the policy file.
const (
	keyAllowed = "allowedMcpServers"
	keyDenied  = "deniedMcpServers"
	keyTenants = "tenants"
	keyName    = "serverName"
	keyCommand = "serverCommand"
	keyURL     = "serverUrl"
)

// Rule is one entry of allowedMcpServers or deniedMcpServers. Exactly one
// of Name, Command and URL is set; the zero Rule matches nothing.
//
//   - Name (serverName) matches a server of that name, exactly, whatever
//     its transport.
//   - Command (serverCommand) matches a stdio server whose command and
//     arguments ([command, args...]) match it element by element: as many
//     elements, each pattern element matching the element at its place,
//     where "*" matches any run of characters (none included, "/"
//     included) and every other character itself. A last element that is
//     exactly "**" matches any number of further arguments, none included.
//     ["npx", "-y", "pkg"] matches only `npx -y pkg` (Claude Code's exact
//     match); ["npx", "*"] matches npx with one argument; ["npx", "**"]
//     npx with any. The command is compared as the server's entry gives
//     it, not looked up in PATH: "npx" does not match "/usr/bin/npx", so a
//     denylist names both ("npx" and "*/npx").
//   - URL (serverUrl) matches an http or sse server whose URL it matches
//     whole, "*" matching any run of characters (none, "/", ":" and "."
//     included), every other character itself. Before the match, the
//     server's URL loses its user information and fragment, and its
//     scheme and host are lowercased (so is the pattern's part before its
//     first "/" after "://"); its port, path and query stay as written:
//     "https://*.corp.example/*" matches "https://mcp.corp.example/v1" but
//     not "https://mcp.corp.example:8443/v1" or "https://corp.example/".
//
// No character escapes "*": a pattern cannot match a literal "*" alone.
type Rule struct {
	// Name is serverName.
	Name string
	// Command is serverCommand: the command and its arguments, as
	// patterns.
	Command []string
	// URL is serverUrl, a pattern.
	URL string
	// Where is the entry's place in its file, as errors name it:
	// "deniedMcpServers[1]", "tenants.alice.allowedMcpServers[0]". Empty
	// for a Rule built in code.
	Where string
}

// String is the entry as a refusal shows it: {serverName: "github"},
// {serverCommand: ["npx", "*"]}, {serverUrl: "https://*.example/*"}.
func (r Rule) String() string {
	switch {
	case r.Command != nil:
		q := make([]string, len(r.Command))
		for i, c := range r.Command {
			q[i] = strconv.Quote(c)
		}
		return "{" + keyCommand + ": [" + strings.Join(q, ", ") + "]}"
	case r.URL != "":
		return "{" + keyURL + ": " + strconv.Quote(r.URL) + "}"
	}
	return "{" + keyName + ": " + strconv.Quote(r.Name) + "}"
}

// Describe is the entry with its place: `deniedMcpServers[1]
// {serverCommand: ["npx", "*"]}`, or String alone when Where is empty.
func (r Rule) Describe() string {
	if r.Where == "" {
		return r.String()
	}
	return r.Where + " " + r.String()
}

// Lists are the two lists of a policy, the base's or a tenant's.
type Lists struct {
	// Allowed is allowedMcpServers. It restricts servers only when
	// AllowedDefined is true.
	Allowed []Rule
	// AllowedDefined says the file has allowedMcpServers: false allows
	// every server Denied does not refuse; true with an empty Allowed
	// allows none.
	AllowedDefined bool
	// Denied is deniedMcpServers: a server any of them matches is refused,
	// whatever Allowed says.
	Denied []Rule
}

// Policy is a managed policy of MCP servers (see the package
// documentation). A nil *Policy is no policy: it allows every server.
type Policy struct {
	// Source is the policy file, named by every refusal.
	Source string
	// Lists are the base policy's lists, every tenant's unless ForTenant
	// says otherwise.
	Lists
	// Tenants are the lists of "tenants", by tenant name; ForTenant
	// merges them with the base's. Nil in a policy ForTenant returned.
	Tenants map[string]Lists

	// allowedKey is the key of the allowlist in effect, for refusals:
	// "" (allowedMcpServers) or "tenants.<t>.allowedMcpServers".
	allowedKey string
}

// Load reads and parses the policy file at path (Parse). A file that
// cannot be read is an error naming it, as the os package words it.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("managed policy: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a policy file's contents; source names the file in errors
// and refusals. It is strict: broken JSON, an unknown key, a value of the
// wrong type, a null, an entry with none or two of serverName,
// serverCommand and serverUrl, an empty name, command, command element or
// URL, and "**" anywhere but last in a command are *InvalidError values.
// An empty object is a policy that allows every server.
func Parse(source string, data []byte) (*Policy, error) {
	p := &Policy{Source: source}
	bad := func(key, format string, args ...any) error {
		return &InvalidError{File: source, Key: key, Rule: fmt.Sprintf(format, args...)}
	}
	top, err := object(source, data, "")
	if err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(top) {
		switch k {
		case keyAllowed, keyDenied:
			if err := p.parseList(&p.Lists, k, k, top[k]); err != nil {
				return nil, err
			}
		case keyTenants:
			tenants, err := object(source, top[k], keyTenants)
			if err != nil {
				return nil, err
			}
			p.Tenants = make(map[string]Lists, len(tenants))
			for _, t := range sortedKeys(tenants) {
				at := keyTenants + "." + t
				if t == "" {
					return nil, bad(keyTenants, "a tenant's name is empty")
				}
				lists, err := object(source, tenants[t], at)
				if err != nil {
					return nil, err
				}
				var l Lists
				for _, lk := range sortedKeys(lists) {
					if lk != keyAllowed && lk != keyDenied {
						return nil, bad(at+"."+lk, "unknown key (a tenant has %s and %s)", keyAllowed, keyDenied)
					}
					if err := p.parseList(&l, lk, at+"."+lk, lists[lk]); err != nil {
						return nil, err
					}
				}
				p.Tenants[t] = l
			}
		default:
			return nil, bad(k, "unknown key (valid keys: %s, %s, %s)", keyAllowed, keyDenied, keyTenants)
		}
	}
	return p, nil
}

// parseList parses the list at key path (name is keyAllowed or keyDenied)
// into l.
func (p *Policy) parseList(l *Lists, name, path string, raw json.RawMessage) error {
	var entries []json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &entries) != nil {
		return &InvalidError{File: p.Source, Key: path, Rule: "must be an array of entries such as {\"serverName\": \"github\"}"}
	}
	rules := make([]Rule, 0, len(entries))
	for i, e := range entries {
		r, err := p.parseRule(fmt.Sprintf("%s[%d]", path, i), e)
		if err != nil {
			return err
		}
		rules = append(rules, r)
	}
	if name == keyAllowed {
		l.Allowed, l.AllowedDefined = rules, true
	} else {
		l.Denied = rules
	}
	return nil
}

// parseRule parses the entry at key path where.
func (p *Policy) parseRule(where string, raw json.RawMessage) (Rule, error) {
	bad := func(format string, args ...any) (Rule, error) {
		return Rule{}, &InvalidError{File: p.Source, Key: where, Rule: fmt.Sprintf(format, args...)}
	}
	var fields map[string]json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &fields) != nil {
		return bad("an entry is an object with one of %s, %s, %s", keyName, keyCommand, keyURL)
	}
	keys := sortedKeys(fields)
	for _, k := range keys {
		if k != keyName && k != keyCommand && k != keyURL {
			return bad("unknown key %q (an entry has exactly one of %s, %s, %s)", k, keyName, keyCommand, keyURL)
		}
	}
	switch len(keys) {
	case 0:
		return bad("an entry has exactly one of %s, %s, %s; this one has none", keyName, keyCommand, keyURL)
	case 1:
	default:
		return bad("an entry has exactly one of %s, %s, %s; this one has %s", keyName, keyCommand, keyURL, strings.Join(keys, " and "))
	}
	r := Rule{Where: where}
	k, v := keys[0], fields[keys[0]]
	switch k {
	case keyName:
		if isNull(v) || json.Unmarshal(v, &r.Name) != nil || r.Name == "" {
			return bad("%s must be a non-empty string", keyName)
		}
	case keyURL:
		if isNull(v) || json.Unmarshal(v, &r.URL) != nil || r.URL == "" {
			return bad("%s must be a non-empty string (\"*\" matches any run of characters)", keyURL)
		}
		r.URL = lowerOrigin(r.URL)
	case keyCommand:
		var elems []*string
		if isNull(v) || json.Unmarshal(v, &elems) != nil || len(elems) == 0 {
			return bad("%s must be a non-empty array of strings: the command and its arguments", keyCommand)
		}
		r.Command = make([]string, len(elems))
		for i, e := range elems {
			switch {
			case e == nil || *e == "":
				return bad("%s[%d] must be a non-empty string", keyCommand, i)
			case *e == "**" && i != len(elems)-1:
				return bad("%s[%d]: \"**\" (any further arguments) may only be the last element", keyCommand, i)
			}
			r.Command[i] = *e
		}
	}
	return r, nil
}

// object decodes data as a JSON object (the whole file when key is ""),
// its members by name. Broken JSON is an error giving its line and column.
func object(source string, data []byte, key string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	err := json.Unmarshal(data, &m)
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return nil, &InvalidError{File: source, Key: fmt.Sprintf("line %d, column %d", line, col), Rule: syn.Error()}
	case err != nil || isNull(data):
		if key == "" {
			return nil, &InvalidError{File: source, Rule: "the file must be a JSON object, such as {\"deniedMcpServers\": [{\"serverName\": \"github\"}]}"}
		}
		return nil, &InvalidError{File: source, Key: key, Rule: "must be an object"}
	}
	return m, nil
}

// position is the line and column (from 1, counting bytes) of the last
// byte json read before it found an error after off bytes: the byte at
// fault.
func position(data []byte, off int64) (line, col int) {
	if len(data) == 0 {
		return 1, 1
	}
	off = min(max(off, 1), int64(len(data)))
	before := data[:off-1]
	line = bytes.Count(before, []byte("\n")) + 1
	return line, len(before) - (bytes.LastIndexByte(before, '\n') + 1) + 1
}

// isNull reports whether raw is the JSON null.
func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// sortedKeys are m's keys in order, so the first error found is the same
// on every run.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ForTenant returns tenant's effective policy: the base's denied entries
// followed by the tenant's, and the tenant's allowedMcpServers if the file
// defines one for it, else the base's. A tenant the file does not name,
// and the empty tenant, get the base policy. The result has no Tenants. A
// nil p returns nil.
func (p *Policy) ForTenant(tenant string) *Policy {
	if p == nil {
		return nil
	}
	out := &Policy{Source: p.Source, Lists: p.Lists, allowedKey: p.allowedKey}
	t, ok := p.Tenants[tenant]
	if !ok || tenant == "" {
		return out
	}
	out.Denied = append(slices.Clip(p.Denied), t.Denied...)
	if t.AllowedDefined {
		out.Allowed, out.AllowedDefined = t.Allowed, true
		out.allowedKey = keyTenants + "." + tenant + "." + keyAllowed
	}
	return out
}
