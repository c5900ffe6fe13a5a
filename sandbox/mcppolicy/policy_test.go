package mcppolicy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const file = "/etc/acp-agent/managed.json"

// A malformed file is an *InvalidError naming the file, where in it, and
// the rule broken; nothing of it is half-taken.
func TestParse_Strict(t *testing.T) {
	for _, tt := range []struct {
		name, data, want string
	}{
		{"broken JSON", "{\n  \"deniedMcpServers\": [,]\n}", file + `: line 2, column 24: invalid character ','`},
		{"empty file", ``, file + `: line 1, column 1: unexpected end of JSON input`},
		{"not an object", `[]`, file + `: the file must be a JSON object`},
		{"null file", `null`, file + `: the file must be a JSON object`},
		{"unknown top key", `{"allowedMcpServer": []}`, file + `: allowedMcpServer: unknown key (valid keys: allowedMcpServers, deniedMcpServers, tenants)`},
		{"list not an array", `{"deniedMcpServers": {"serverName": "x"}}`, file + `: deniedMcpServers: must be an array of entries`},
		{"null list", `{"allowedMcpServers": null}`, file + `: allowedMcpServers: must be an array`},
		{"entry not an object", `{"deniedMcpServers": [{"serverName": "a"}, "b"]}`, file + `: deniedMcpServers[1]: an entry is an object with one of serverName, serverCommand, serverUrl`},
		{"entry with none", `{"deniedMcpServers": [{}]}`, file + `: deniedMcpServers[0]: an entry has exactly one of serverName, serverCommand, serverUrl; this one has none`},
		{"entry with two", `{"deniedMcpServers": [{"serverName": "a"}, {"serverUrl": "https://x/*", "serverName": "b"}]}`,
			file + `: deniedMcpServers[1]: an entry has exactly one of serverName, serverCommand, serverUrl; this one has serverName and serverUrl`},
		{"unknown entry key", `{"allowedMcpServers": [{"serverType": "stdio"}]}`, file + `: allowedMcpServers[0]: unknown key "serverType"`},
		{"empty name", `{"allowedMcpServers": [{"serverName": ""}]}`, file + `: allowedMcpServers[0]: serverName must be a non-empty string`},
		{"name not a string", `{"allowedMcpServers": [{"serverName": 7}]}`, file + `: allowedMcpServers[0]: serverName must be a non-empty string`},
		{"command a string", `{"deniedMcpServers": [{"serverCommand": "npx -y x"}]}`, file + `: deniedMcpServers[0]: serverCommand must be a non-empty array of strings`},
		{"command empty", `{"deniedMcpServers": [{"serverCommand": []}]}`, file + `: deniedMcpServers[0]: serverCommand must be a non-empty array of strings`},
		{"command element empty", `{"deniedMcpServers": [{"serverCommand": ["npx", ""]}]}`, file + `: deniedMcpServers[0]: serverCommand[1] must be a non-empty string`},
		{"command element null", `{"deniedMcpServers": [{"serverCommand": ["npx", null]}]}`, file + `: deniedMcpServers[0]: serverCommand[1] must be a non-empty string`},
		{"command element a number", `{"deniedMcpServers": [{"serverCommand": ["npx", 1]}]}`, file + `: deniedMcpServers[0]: serverCommand must be a non-empty array of strings`},
		{"** not last", `{"deniedMcpServers": [{"serverCommand": ["npx", "**", "x"]}]}`, file + `: deniedMcpServers[0]: serverCommand[1]: "**" (any further arguments) may only be the last element`},
		{"url empty", `{"deniedMcpServers": [{"serverUrl": ""}]}`, file + `: deniedMcpServers[0]: serverUrl must be a non-empty string`},
		{"tenants not an object", `{"tenants": []}`, file + `: tenants: must be an object`},
		{"tenant not an object", `{"tenants": {"alice": []}}`, file + `: tenants.alice: must be an object`},
		{"tenant unknown key", `{"tenants": {"alice": {"tenants": {}}}}`, file + `: tenants.alice.tenants: unknown key (a tenant has allowedMcpServers and deniedMcpServers)`},
		{"tenant empty name", `{"tenants": {"": {}}}`, file + `: tenants: a tenant's name is empty`},
		{"tenant entry", `{"tenants": {"alice": {"deniedMcpServers": [{"serverName": "a"}, {}]}}}`, file + `: tenants.alice.deniedMcpServers[1]: an entry has exactly one`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(file, []byte(tt.data))
			var ie *InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) || p != nil {
				t.Fatalf("Parse = %v, %v; want an *InvalidError", p, err)
			}
			if got := "managed policy " + tt.want; !strings.HasPrefix(err.Error(), got) {
				t.Errorf("error = %q\nwant it to start %q", err, got)
			}
		})
	}
}

// A well-formed file: the lists, whether the allowlist is defined, each
// entry's place, a URL pattern's origin lowercased.
func TestParse_Lists(t *testing.T) {
	p, err := Parse(file, []byte(`{
		"allowedMcpServers": [{"serverName": "github"}, {"serverCommand": ["npx", "**"]}, {"serverUrl": "HTTPS://*.Corp.Example/MCP/*"}],
		"deniedMcpServers": [{"serverUrl": "https://evil.example"}],
		"tenants": {"alice": {"allowedMcpServers": []}, "bob": {"deniedMcpServers": [{"serverName": "x"}]}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if !p.AllowedDefined || len(p.Allowed) != 3 || len(p.Denied) != 1 || p.Source != file {
		t.Fatalf("policy = %+v", p)
	}
	if got := p.Allowed[2]; got.URL != "https://*.corp.example/MCP/*" || got.Where != "allowedMcpServers[2]" {
		t.Errorf("allowed[2] = %+v", got)
	}
	if got := p.Allowed[1].Describe(); got != `allowedMcpServers[1] {serverCommand: ["npx", "**"]}` {
		t.Errorf("Describe = %s", got)
	}
	if p.Denied[0].URL != "https://evil.example" {
		t.Errorf("denied[0] = %+v", p.Denied[0])
	}
	if a := p.Tenants["alice"]; !a.AllowedDefined || len(a.Allowed) != 0 || a.Allowed == nil {
		t.Errorf("alice = %+v, want a defined, empty allowlist", a)
	}
	if b := p.Tenants["bob"]; b.AllowedDefined || b.Denied[0].Where != "tenants.bob.deniedMcpServers[0]" {
		t.Errorf("bob = %+v", b)
	}

	empty, err := Parse(file, []byte(" {} "))
	if err != nil || empty.AllowedDefined || empty.Allowed != nil || empty.Denied != nil {
		t.Errorf("{} = %+v, %v; want no restriction", empty, err)
	}
}

// Load names the file it cannot read, and parses the one it can.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "managed.json")
	if _, err := Load(missing); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(missing) = %v", err)
	}
	if err := os.WriteFile(missing, []byte(`{"deniedMcpServers": [{"serverName": "x"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(missing)
	if err != nil || p.Source != missing || p.Denied[0].Name != "x" {
		t.Errorf("Load = %+v, %v", p, err)
	}
}

// ForTenant: denied is the base's and the tenant's; allowed the tenant's
// when it defines one, else the base's; other tenants get the base.
func TestPolicy_ForTenant(t *testing.T) {
	p, err := Parse(file, []byte(`{
		"allowedMcpServers": [{"serverName": "github"}, {"serverName": "x"}],
		"deniedMcpServers": [{"serverName": "evil"}],
		"tenants": {
			"alice": {"allowedMcpServers": [{"serverName": "linear"}, {"serverName": "x"}], "deniedMcpServers": [{"serverName": "x"}]},
			"bob": {"deniedMcpServers": [{"serverName": "github"}]},
			"carol": {"allowedMcpServers": []}
		}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	names := func(rules []Rule) []string {
		var out []string
		for _, r := range rules {
			out = append(out, r.Name)
		}
		return out
	}
	for _, tt := range []struct {
		tenant          string
		allowed, denied []string
		allowedDefined  bool
	}{
		{"", []string{"github", "x"}, []string{"evil"}, true},
		{"dave", []string{"github", "x"}, []string{"evil"}, true},
		{"alice", []string{"linear", "x"}, []string{"evil", "x"}, true},
		{"bob", []string{"github", "x"}, []string{"evil", "github"}, true},
		{"carol", nil, []string{"evil"}, true},
	} {
		e := p.ForTenant(tt.tenant)
		if got := names(e.Allowed); !slices.Equal(got, tt.allowed) || e.AllowedDefined != tt.allowedDefined {
			t.Errorf("%q: allowed = %v (defined %v), want %v", tt.tenant, got, e.AllowedDefined, tt.allowed)
		}
		if got := names(e.Denied); !slices.Equal(got, tt.denied) {
			t.Errorf("%q: denied = %v, want %v", tt.tenant, got, tt.denied)
		}
		if e.Tenants != nil || e.Source != file {
			t.Errorf("%q: effective policy = %+v", tt.tenant, e)
		}
	}
	// Deny wins within a tenant too, and refusals name the tenant's lists.
	alice := p.ForTenant("alice")
	err = alice.Check(Server{Name: "x", Transport: TransportStdio, Command: []string{"x"}})
	if want := `server "x" is refused by the managed policy ` + file + `: tenants.alice.deniedMcpServers[0] {serverName: "x"}`; err == nil || err.Error() != want {
		t.Errorf("alice x: %v\nwant %s", err, want)
	}
	err = alice.Check(Server{Name: "github", Transport: TransportHTTP, URL: "https://api.github.com/mcp"})
	if want := `server "github" is not in tenants.alice.allowedMcpServers of the managed policy ` + file + `: no serverName entry names it`; err == nil || err.Error() != want {
		t.Errorf("alice github: %v\nwant %s", err, want)
	}
	if err := p.ForTenant("bob").Check(Server{Name: "github"}); err == nil || !strings.Contains(err.Error(), "tenants.bob.deniedMcpServers[0]") {
		t.Errorf("bob github: %v", err)
	}
	// The base's lists are not changed by a tenant's merge.
	if len(p.Denied) != 1 || len(p.ForTenant("bob").Denied) != 2 || len(p.ForTenant("alice").Denied) != 2 {
		t.Errorf("merges share the base's array: base %v", names(p.Denied))
	}
	var none *Policy
	if none.ForTenant("alice") != nil || none.Check(Server{Name: "x"}) != nil {
		t.Error("a nil policy refuses")
	}
}

// Parse never panics, and what it accepts survives Check.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"allowedMcpServers": [{"serverName": "a"}, {"serverCommand": ["*", "**"]}, {"serverUrl": "https://*"}], "tenants": {"t": {"deniedMcpServers": []}}}`))
	f.Add([]byte(`{"deniedMcpServers": [{"serverCommand": ["npx", "**", "x"]}]}`))
	f.Add([]byte("{\n\"x\": [}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("f", data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, s := range []Server{
			{Name: "a", Transport: TransportStdio, Command: []string{"npx", "-y", "x"}},
			{Name: "b", Transport: TransportHTTP, URL: "https://u:p@X.example/mcp#f"},
			{Name: "c", Transport: TransportACP},
		} {
			for tenant := range p.Tenants {
				_ = p.ForTenant(tenant).Check(s)
			}
			_ = p.Check(s)
		}
	})
}
