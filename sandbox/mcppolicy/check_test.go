package mcppolicy

import (
	"errors"
	"strings"
	"testing"
)

// glob: "*" any run of characters, "/" included; everything else literal;
// the whole string.
func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		pattern, s string
		want       bool
	}{
		{"npx", "npx", true},
		{"npx", "npx2", false},
		{"npx", "/usr/bin/npx", false},
		{"*/npx", "/usr/bin/npx", true},
		{"*/npx", "npx", false},
		{"*", "", true},
		{"*", "any/thing:at all", true},
		{"a*", "a", true},
		{"*a", "ba", true},
		{"*a", "ab", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a*b*c", "abcbc", true},
		{"**", "x", true},
		{"https://*.corp.example/*", "https://mcp.corp.example/v1", true},
		{"https://*.corp.example/*", "https://evil.example/.corp.example/", true}, // "*" crosses "/": as documented
		{"https://*.corp.example/*", "https://corp.example/", false},
		{"https://*.corp.example/*", "https://mcp.corp.example:8443/v1", false},
		{"[a]", "a", false}, // no character classes
		{"?", "a", false},   // no single-character wildcard
		{"a\\*", "a\\b", true},
	} {
		if got := glob(tt.pattern, tt.s); got != tt.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// Check: deny wins; an undefined allowlist allows the rest; a defined one
// allows only what it lists, a stdio server by command when it has
// command entries, an http or sse server by URL when it has URL entries,
// else by name; an acp server by name only.
func TestPolicy_Check(t *testing.T) {
	stdio := func(name string, cmd ...string) Server {
		return Server{Name: name, Transport: TransportStdio, Command: cmd}
	}
	http := func(name, url string) Server { return Server{Name: name, Transport: TransportHTTP, URL: url} }
	for _, tt := range []struct {
		name   string
		policy string
		server Server
		want   string // "" allowed
	}{
		{"empty policy", `{}`, stdio("a", "npx", "x"), ""},
		{"denied by name", `{"deniedMcpServers": [{"serverName": "b"}, {"serverName": "a"}]}`, stdio("a", "x"),
			`server "a" is refused by the managed policy F: deniedMcpServers[1] {serverName: "a"}`},
		{"denied by exact command", `{"deniedMcpServers": [{"serverCommand": ["npx", "-y", "bad"]}]}`, stdio("a", "npx", "-y", "bad"),
			`server "a" is refused by the managed policy F: deniedMcpServers[0] {serverCommand: ["npx", "-y", "bad"]}`},
		{"exact command needs every argument", `{"deniedMcpServers": [{"serverCommand": ["npx", "-y", "bad"]}]}`, stdio("a", "npx", "-y", "bad", "--flag"), ""},
		{"command glob, one argument", `{"deniedMcpServers": [{"serverCommand": ["npx", "*"]}]}`, stdio("github", "npx", "@x/server-github"),
			`server "github" is refused by the managed policy F: deniedMcpServers[0] {serverCommand: ["npx", "*"]}`},
		{"command glob counts arguments", `{"deniedMcpServers": [{"serverCommand": ["npx", "*"]}]}`, stdio("a", "npx", "-y", "x"), ""},
		{"command ** any arguments", `{"deniedMcpServers": [{"serverCommand": ["*/npx", "**"]}]}`, stdio("a", "/usr/bin/npx", "-y", "x"),
			`server "a" is refused by the managed policy F: deniedMcpServers[0] {serverCommand: ["*/npx", "**"]}`},
		{"command ** none", `{"deniedMcpServers": [{"serverCommand": ["npx", "**"]}]}`, stdio("a", "npx"), `deniedMcpServers[0]`},
		{"command ** needs the prefix", `{"deniedMcpServers": [{"serverCommand": ["npx", "-y", "**"]}]}`, stdio("a", "npx"), ""},
		{"command is not in PATH", `{"deniedMcpServers": [{"serverCommand": ["npx", "**"]}]}`, stdio("a", "/usr/bin/npx"), ""},
		{"command entries ignore http", `{"deniedMcpServers": [{"serverCommand": ["**"]}]}`, http("a", "https://x.example/"), ""},
		{"denied by URL", `{"deniedMcpServers": [{"serverUrl": "https://*.evil.example/*"}]}`, http("a", "https://mcp.evil.example/mcp?k=v"),
			`server "a" is refused by the managed policy F: deniedMcpServers[0] {serverUrl: "https://*.evil.example/*"}`},
		{"URL case and user info", `{"deniedMcpServers": [{"serverUrl": "https://mcp.evil.example/*"}]}`, http("a", "HTTPS://user:pw@MCP.Evil.Example/mcp#x"), `deniedMcpServers[0]`},
		{"URL path keeps its case", `{"deniedMcpServers": [{"serverUrl": "https://x.example/mcp"}]}`, http("a", "https://x.example/MCP"), ""},
		{"URL entries ignore stdio", `{"deniedMcpServers": [{"serverUrl": "*"}]}`, stdio("a", "x"), ""},
		{"sse by URL", `{"deniedMcpServers": [{"serverUrl": "http://127.0.0.1:*/sse"}]}`, Server{Name: "a", Transport: TransportSSE, URL: "http://127.0.0.1:8808/sse"}, `deniedMcpServers[0]`},
		{"acp by name only", `{"deniedMcpServers": [{"serverCommand": ["**"]}, {"serverUrl": "*"}]}`, Server{Name: "a", Transport: TransportACP}, ""},
		{"acp by name", `{"deniedMcpServers": [{"serverName": "a"}]}`, Server{Name: "a", Transport: TransportACP}, `deniedMcpServers[0]`},
		{"deny wins over allow", `{"allowedMcpServers": [{"serverName": "a"}], "deniedMcpServers": [{"serverName": "a"}]}`, stdio("a", "x"), `deniedMcpServers[0]`},
		{"empty allowlist allows nothing", `{"allowedMcpServers": []}`, stdio("a", "x"),
			`server "a" is not in allowedMcpServers of the managed policy F: the list is empty, so no server is allowed`},
		{"allowed by name", `{"allowedMcpServers": [{"serverName": "a"}]}`, stdio("a", "x"), ""},
		{"not allowed by name", `{"allowedMcpServers": [{"serverName": "a"}]}`, http("b", "https://x.example/"),
			`server "b" is not in allowedMcpServers of the managed policy F: no serverName entry names it`},
		{"allowed by command", `{"allowedMcpServers": [{"serverCommand": ["node", "*.js"]}]}`, stdio("a", "node", "/srv/mcp.js"), ""},
		{"a stdio name is not enough with command entries", `{"allowedMcpServers": [{"serverName": "a"}, {"serverCommand": ["node", "*.js"]}]}`, stdio("a", "python", "x.py"),
			`server "a" is not in allowedMcpServers of the managed policy F: its command matches no serverCommand entry, and a stdio server must match one when the list has any`},
		{"command entries leave http to names", `{"allowedMcpServers": [{"serverName": "h"}, {"serverCommand": ["node"]}]}`, http("h", "https://x.example/"), ""},
		{"allowed by URL", `{"allowedMcpServers": [{"serverUrl": "https://*.corp.example/*"}]}`, http("h", "https://mcp.corp.example/mcp"), ""},
		{"an http name is not enough with URL entries", `{"allowedMcpServers": [{"serverName": "h"}, {"serverUrl": "https://*.corp.example/*"}]}`, http("h", "https://mcp.other.example/mcp"),
			`server "h" is not in allowedMcpServers of the managed policy F: its URL matches no serverUrl entry, and an http or sse server must match one when the list has any`},
		{"URL entries leave stdio to names", `{"allowedMcpServers": [{"serverName": "s"}, {"serverUrl": "*"}]}`, stdio("s", "x"), ""},
		{"acp allowed by name", `{"allowedMcpServers": [{"serverName": "e"}, {"serverCommand": ["**"]}, {"serverUrl": "*"}]}`, Server{Name: "e", Transport: TransportACP}, ""},
		{"acp not by command", `{"allowedMcpServers": [{"serverCommand": ["**"]}]}`, Server{Name: "e", Transport: TransportACP},
			`server "e" is not in allowedMcpServers of the managed policy F: no serverName entry names it`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("F", []byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			err = p.Check(tt.server)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want allowed", err)
				}
				return
			}
			var re *RefusedError
			if !errors.As(err, &re) || !errors.Is(err, ErrRefused) || re.Server != tt.server.Name || re.Source != "F" {
				t.Fatalf("Check = %#v, want a *RefusedError", err)
			}
			// A want that starts "server " is the whole text, else a part of it.
			got := err.Error()
			if strings.HasPrefix(tt.want, "server ") && got != tt.want || !strings.Contains(got, tt.want) {
				t.Errorf("Check = %q\nwant %q", got, tt.want)
			}
		})
	}
}

// A rule built in code (no Where) is shown by itself.
func TestRefusedError_RuleWithoutPlace(t *testing.T) {
	p := &Policy{Source: "F", Lists: Lists{Denied: []Rule{{URL: "https://x/*"}}}}
	err := p.Check(Server{Name: "a", Transport: TransportHTTP, URL: "https://x/y"})
	if want := `server "a" is refused by the managed policy F: {serverUrl: "https://x/*"}`; err == nil || err.Error() != want {
		t.Errorf("Check = %v, want %s", err, want)
	}
}
