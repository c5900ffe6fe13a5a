package mcpregistry_test

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/internal/mcpregistry"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakeregistry"
)

// fixture returns the latest version of the fakeregistry server called name.
func fixture(t *testing.T, name string) mcpregistry.Server {
	t.Helper()
	res, err := newClient(t, fakeregistry.Default()).Get(t.Context(), name, "")
	if err != nil {
		t.Fatal(err)
	}
	return res.Server
}

// states is the inputs of e as "kind name from" lines.
func states(e mcpregistry.Entry) []string {
	var out []string
	for _, s := range e.Inputs {
		line := s.Kind + " " + s.Name + " " + s.From
		if s.Missing() {
			line += " missing"
		}
		out = append(out, strings.Join(strings.Fields(line), " "))
	}
	return out
}

func TestResolve_NPM(t *testing.T) {
	s := fixture(t, "io.github.example/weather")
	e, err := mcpregistry.Resolve(s, mcpregistry.Choice{})
	if err != nil {
		t.Fatal(err)
	}
	// --units gets its default; cache_dir has none and is left out; the
	// required key is missing; WEATHER_LANG gets its default.
	if e.Transport != mcpregistry.EntryStdio || e.Command != "npx" ||
		!slices.Equal(e.Args, []string{"-y", "@example/weather-mcp@1.2.0", "--units", "metric"}) {
		t.Errorf("entry %s %q", e.Command, e.Args)
	}
	if !maps.Equal(e.Env, map[string]string{"WEATHER_LANG": "en"}) {
		t.Errorf("env %v", e.Env)
	}
	want := []string{"env OPENWEATHER_API_KEY missing", "env WEATHER_LANG default", "argument --units default", "argument cache_dir missing"}
	if got := states(e); !slices.Equal(got, want) {
		t.Errorf("inputs %q, want %q", got, want)
	}
	if len(e.Notes) != 1 || !strings.Contains(e.Notes[0], "--var cache_dir=VALUE") || !strings.Contains(e.Notes[0], "required") {
		t.Errorf("notes %q, want the left-out cache_dir and how to give it", e.Notes)
	}
	if e.Source != "npm package @example/weather-mcp@1.2.0" {
		t.Errorf("source %q", e.Source)
	}

	e, err = mcpregistry.Resolve(s, mcpregistry.Choice{
		Env:  map[string]string{"OPENWEATHER_API_KEY": "k", "EXTRA": "x"},
		Vars: map[string]string{"units": "imperial", "cache_dir": "/tmp/w"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Args, []string{"-y", "@example/weather-mcp@1.2.0", "--units", "imperial", "/tmp/w"}) ||
		!maps.Equal(e.Env, map[string]string{"OPENWEATHER_API_KEY": "k", "WEATHER_LANG": "en", "EXTRA": "x"}) {
		t.Errorf("entry %q env %v", e.Args, e.Env)
	}
	if len(e.Notes) != 1 || !strings.Contains(e.Notes[0], "EXTRA") {
		t.Errorf("notes %q, want EXTRA undeclared", e.Notes)
	}
}

func TestResolve_PyPI(t *testing.T) {
	s := fixture(t, "io.github.example/time")
	e, err := mcpregistry.Resolve(s, mcpregistry.Choice{Vars: map[string]string{"local-timezone": "Europe/Paris"}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Command != "uvx" || !slices.Equal(e.Args, []string{"mcp-server-time==0.6.2", "--local-timezone", "Europe/Paris"}) {
		t.Errorf("entry %s %q", e.Command, e.Args)
	}
	// A named argument is found by its valueHint too; optional, so only a note without it.
	e, err = mcpregistry.Resolve(s, mcpregistry.Choice{Vars: map[string]string{"timezone": "UTC"}})
	if err != nil || !slices.Equal(e.Args, []string{"mcp-server-time==0.6.2", "--local-timezone", "UTC"}) {
		t.Errorf("by valueHint: %q, %v", e.Args, err)
	}
	e, _ = mcpregistry.Resolve(s, mcpregistry.Choice{})
	if !slices.Equal(e.Args, []string{"mcp-server-time==0.6.2"}) || len(e.Notes) != 1 || !strings.Contains(e.Notes[0], "optional") {
		t.Errorf("without a value: %q, notes %q", e.Args, e.Notes)
	}
}

func TestResolve_OCI(t *testing.T) {
	s := fixture(t, "io.github.example/postgres")
	e, err := mcpregistry.Resolve(s, mcpregistry.Choice{Vars: map[string]string{"url": "postgres://db/x"}, Env: map[string]string{"PGPASSWORD": "pw"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "-i", "--rm", "--network", "host", "-e", "PGPASSWORD", "-e", "PGSSLMODE", "example/postgres-mcp:2.0.1", "postgres://db/x"}
	if e.Command != "docker" || !slices.Equal(e.Args, want) {
		t.Errorf("entry %s %q, want docker %q", e.Command, e.Args, want)
	}
	if !maps.Equal(e.Env, map[string]string{"PGSSLMODE": "require", "PGPASSWORD": "pw"}) {
		t.Errorf("env %v", e.Env)
	}
	// The positional's fixed value needs {url}: without it, left out.
	e, _ = mcpregistry.Resolve(s, mcpregistry.Choice{})
	if slices.Contains(e.Args, "{url}") || len(e.Notes) != 1 || !strings.Contains(e.Notes[0], "database_url") {
		t.Errorf("without url: %q, notes %q", e.Args, e.Notes)
	}
	// The weather server's second package: a tagged image, picked by type.
	e, err = mcpregistry.Resolve(fixture(t, "io.github.example/weather"), mcpregistry.Choice{Package: "oci", Env: map[string]string{"OPENWEATHER_API_KEY": "k"}})
	if err != nil || !slices.Equal(e.Args, []string{"run", "-i", "--rm", "-e", "OPENWEATHER_API_KEY", "ghcr.io/example/weather-mcp:1.2.0"}) {
		t.Errorf("--package oci: %q, %v", e.Args, err)
	}
}

func TestResolve_Remote(t *testing.T) {
	s := fixture(t, "com.example/tickets")
	_, err := mcpregistry.Resolve(s, mcpregistry.Choice{})
	var re *mcpregistry.ResolveError
	if !errors.As(err, &re) || re.Field != "remotes[0].url" || !strings.Contains(re.Rule, "--var tenant=VALUE") || re.Server != "com.example/tickets" {
		t.Fatalf("without the tenant: %v, want a ResolveError on remotes[0].url", err)
	}
	e, err := mcpregistry.Resolve(s, mcpregistry.Choice{Vars: map[string]string{"tenant": "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Transport != mcpregistry.EntryHTTP || e.URL != "https://acme.tickets.example.com/mcp" || len(e.Headers) != 0 {
		t.Errorf("entry %s %s %v", e.Transport, e.URL, e.Headers)
	}
	if got, want := states(e), []string{"variable tenant given", "header Authorization missing"}; !slices.Equal(got, want) {
		t.Errorf("inputs %q, want %q", got, want)
	}
	// The header's {token}, or the header itself.
	for _, c := range []mcpregistry.Choice{
		{Vars: map[string]string{"tenant": "acme", "token": "t0k"}},
		{Vars: map[string]string{"tenant": "acme"}, Headers: map[string]string{"Authorization": "Bearer t0k"}},
	} {
		e, err = mcpregistry.Resolve(s, c)
		if err != nil || e.Headers["Authorization"] != "Bearer t0k" {
			t.Errorf("%+v: headers %v, %v", c, e.Headers, err)
		}
	}
	// --env is not for remotes: said, not failed.
	e, _ = mcpregistry.Resolve(s, mcpregistry.Choice{Vars: map[string]string{"tenant": "acme"}, Env: map[string]string{"A": "b"}})
	if len(e.Notes) != 1 || !strings.Contains(e.Notes[0], "--env") {
		t.Errorf("notes %q", e.Notes)
	}
}

func TestResolve_Choices(t *testing.T) {
	var s mcpregistry.Server
	if err := json.Unmarshal([]byte(`{"name": "io.github.x/both", "description": "d", "version": "1.0.0",
		"packages": [
			{"registryType": "nuget", "identifier": "X.Server", "version": "1.0.0", "transport": {"type": "stdio"}},
			{"registryType": "npm", "identifier": "x-server", "version": "1.0.0", "transport": {"type": "streamable-http", "url": "http://localhost:{port}/mcp"}},
			{"registryType": "pypi", "identifier": "x-server", "version": "1.0.0", "runtimeHint": "python", "transport": {"type": "stdio"}}
		],
		"remotes": [{"type": "sse", "url": "https://x.example.com/sse", "headers": [{"name": "X-Key", "isRequired": true}]}]}`), &s); err != nil {
		t.Fatal(err)
	}
	// The first stdio package of a supported type: pypi (nuget is not
	// supported, the npm one is not stdio); its hint noted, not followed.
	e, err := mcpregistry.Resolve(s, mcpregistry.Choice{})
	if err != nil || e.Command != "uvx" || len(e.Notes) != 1 || !strings.Contains(e.Notes[0], `runtimeHint "python"`) {
		t.Errorf("default: %s %q %q %v", e.Command, e.Args, e.Notes, err)
	}
	e, err = mcpregistry.Resolve(s, mcpregistry.Choice{Remote: true, Headers: map[string]string{"X-Key": "k"}})
	if err != nil || e.Transport != mcpregistry.EntrySSE || e.URL != "https://x.example.com/sse" || e.Headers["X-Key"] != "k" {
		t.Errorf("--remote: %+v %v", e, err)
	}
	for _, tt := range []struct {
		choice      mcpregistry.Choice
		field, rule string
	}{
		{mcpregistry.Choice{Package: "npm"}, "packages[1].transport.type", "stdio packages only"},
		{mcpregistry.Choice{Package: "oci"}, "packages", "it has no oci package (it has: nuget, npm (streamable-http), pypi)"},
		{mcpregistry.Choice{Package: "nuget"}, "", `package type "nuget" is not supported`},
	} {
		_, err := mcpregistry.Resolve(s, tt.choice)
		var re *mcpregistry.ResolveError
		if !errors.As(err, &re) || re.Field != tt.field || !strings.Contains(re.Rule, tt.rule) {
			t.Errorf("%+v: %v, want field %q rule %q", tt.choice, err, tt.field, tt.rule)
		}
	}

	for _, tt := range []struct{ doc, field, rule string }{
		{`{"name": "a/none", "version": "1"}`, "", "neither packages nor remotes"},
		{`{"name": "a/remote", "version": "1", "packages": [{"registryType": "npm", "identifier": "x", "version": "1", "transport": {"type": "stdio"}}]}`, "remotes", "no remotes"},
		{`{"name": "a/mcpb", "version": "1", "packages": [{"registryType": "mcpb", "identifier": "https://github.com/a/b.mcpb", "transport": {"type": "stdio"}}], "remotes": [{"type": "sse", "url": "https://a/sse"}]}`, "packages", "use --remote"},
		{`{"name": "a/badremote", "version": "1", "remotes": [{"type": "websocket", "url": "wss://a"}]}`, "remotes[0].type", "not a remote transport"},
		{`{"name": "a/badurl", "version": "1", "remotes": [{"type": "sse", "url": "{base}/sse", "variables": {"base": {"default": "ftp://x"}}}]}`, "remotes[0].url", "not an http(s) URL"},
	} {
		var s mcpregistry.Server
		if err := json.Unmarshal([]byte(tt.doc), &s); err != nil {
			t.Fatal(err)
		}
		c := mcpregistry.Choice{}
		if tt.field == "remotes" {
			c.Remote = true
		}
		_, err := mcpregistry.Resolve(s, c)
		var re *mcpregistry.ResolveError
		if !errors.As(err, &re) || re.Field != tt.field || !strings.Contains(re.Rule, tt.rule) || !strings.HasPrefix(err.Error(), "server "+s.Name) {
			t.Errorf("%s: %v, want field %q rule %q", s.Name, err, tt.field, tt.rule)
		}
	}
}
