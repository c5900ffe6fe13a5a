package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakeregistry"
)

// runMCPAt runs "acp-agent mcp args..." against the fake registry at url
// with config path, returning stdout, stderr and the error.
func runMCPAt(t *testing.T, url, config string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(append([]string{"mcp"}, append(args, "--registry", url, "--config", config)...), strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// squash is s with every run of white space made one space.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func fakeRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(fakeregistry.Default())
	t.Cleanup(srv.Close)
	return srv.URL
}

// servers reads config path's mcpServers as the agent does.
func servers(t *testing.T, path string) []bridge.ServerSpec {
	t.Helper()
	cfg, err := loadConfig(path, true)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := cfg.DefaultServers()
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

func TestMCP_SearchPrintsOneLineEach(t *testing.T) {
	url := fakeRegistry(t)
	out, _, err := runMCPAt(t, url, filepath.Join(t.TempDir(), "c.json"), "search", "example")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(squash(lines[0]), "io.github.example/weather 1.2.0 Forecasts") {
		t.Errorf("search printed:\n%s", out)
	}
	out, _, _ = runMCPAt(t, url, "c.json", "search", "--limit", "1", "example")
	if strings.Count(out, "\n") != 1 {
		t.Errorf("--limit 1 printed:\n%s", out)
	}
	out, _, _ = runMCPAt(t, url, "c.json", "search", "zebra")
	if !strings.Contains(out, `No server in `+url+` matches "zebra"`) {
		t.Errorf("no match printed:\n%s", out)
	}
}

func TestMCP_AddCreatesTheConfig(t *testing.T) {
	url := fakeRegistry(t)
	path := filepath.Join(t.TempDir(), "new", "config.json")
	out, stderr, err := runMCPAt(t, url, path, "add", "io.github.example/weather", "--var", "cache_dir=/tmp/w")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config %v, mode %v: want a 0600 file", err, fi)
	}
	specs := servers(t, path)
	if len(specs) != 1 || specs[0].Name != "weather" || specs[0].Command != "npx" ||
		strings.Join(specs[0].Args, " ") != "-y @example/weather-mcp@1.2.0 --units metric /tmp/w" {
		t.Errorf("servers %+v", specs)
	}
	for _, want := range []string{`Added "weather" to ` + path, "npx -y @example/weather-mcp@1.2.0 --units metric /tmp/w",
		"env OPENWEATHER_API_KEY required, secret MISSING", `env WEATHER_LANG optional default "en"`, "argument cache_dir required set by you", "sanitized environment"} {
		if !strings.Contains(squash(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The missing key is a warning with the command that sets it.
	wantCmd := "acp-agent mcp add io.github.example/weather --var cache_dir=/tmp/w --registry " + url + " --config " + path + " --force --env OPENWEATHER_API_KEY=VALUE"
	if !strings.Contains(stderr, "warning: env OPENWEATHER_API_KEY is required and not set") || !strings.Contains(stderr, wantCmd) {
		t.Errorf("stderr:\n%s\nwant the command %s", stderr, wantCmd)
	}
	// The name is taken: refused without --force, replaced with it.
	_, _, err = runMCPAt(t, url, path, "add", "io.github.example/weather@1.0.0")
	if err == nil || !strings.Contains(err.Error(), `a server named "weather" is already in`) {
		t.Fatalf("second add: %v", err)
	}
	if _, _, err := runMCPAt(t, url, path, "add", "io.github.example/weather@1.0.0", "--force", "--env", "OPENWEATHER_API_KEY=k"); err != nil {
		t.Fatal(err)
	}
	specs = servers(t, path)
	if len(specs) != 1 || strings.Join(specs[0].Args, " ") != "-y @example/weather-mcp@1.0.0" || len(specs[0].Env) != 1 || specs[0].Env[0].Value != "k" {
		t.Errorf("after --force: %+v", specs)
	}
}

func TestMCP_AddKeepsTheRestOfTheFile(t *testing.T) {
	url := fakeRegistry(t)
	for _, tt := range []struct{ name, before, want string }{
		{"object", `{
  // no comments in JSON: this one is not here
}`, ""},
		{"empty", "", `{
  "mcpServers": {
    "time": {
      "command": "uvx",
      "args": [
        "mcp-server-time==0.6.2"
      ]
    }
  }
}
`},
		{"no mcpServers", `{"timeouts": {"connect": "10s"},
    "limits": {"serversPerSession": 5}}`, `{"timeouts": {"connect": "10s"},
    "limits": {"serversPerSession": 5},
  "mcpServers": {
    "time": {
      "command": "uvx",
      "args": [
        "mcp-server-time==0.6.2"
      ]
    }
  }}`},
		{"claude shape", `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "fs"]}}, "limits": {}}`, `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "fs"]},
    "time": {
      "command": "uvx",
      "args": [
        "mcp-server-time==0.6.2"
      ]
    }}, "limits": {}}`},
		{"acp shape", `{"mcpServers": [{"name": "fs", "command": "npx", "args": [], "env": []}]}`, `{"mcpServers": [{"name": "fs", "command": "npx", "args": [], "env": []},
    {
      "name": "time",
      "command": "uvx",
      "args": [
        "mcp-server-time==0.6.2"
      ],
      "env": []
    }]}`},
		{"empty acp shape", `{"mcpServers": []}`, `{"mcpServers": [
    {
      "name": "time",
      "command": "uvx",
      "args": [
        "mcp-server-time==0.6.2"
      ],
      "env": []
    }
  ]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tt.before), 0o640); err != nil {
				t.Fatal(err)
			}
			_, _, err := runMCPAt(t, url, path, "add", "io.github.example/time")
			if tt.want == "" {
				// A file the agent would refuse is not edited.
				if err == nil || !strings.Contains(err.Error(), "fix it before adding servers") {
					t.Errorf("add to an invalid file: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tt.want {
				t.Errorf("file:\n%s\nwant:\n%s", got, tt.want)
			}
			if fi, _ := os.Stat(path); tt.before != "" && fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
			}
			if specs := servers(t, path); specs[len(specs)-1].Name != "time" {
				t.Errorf("servers %+v", specs)
			}
		})
	}
}

func TestMCP_AddRemote(t *testing.T) {
	url := fakeRegistry(t)
	path := filepath.Join(t.TempDir(), "config.json")
	_, _, err := runMCPAt(t, url, path, "add", "com.example/tickets")
	if err == nil || !strings.Contains(err.Error(), "remotes[0].url") || !strings.Contains(err.Error(), "--var tenant=VALUE") {
		t.Fatalf("without the tenant: %v", err)
	}
	out, stderr, err := runMCPAt(t, url, path, "add", "com.example/tickets", "--var", "tenant=acme", "--var", "token=t0k", "--name", "acme-tickets")
	if err != nil {
		t.Fatal(err)
	}
	specs := servers(t, path)
	if len(specs) != 1 || specs[0].Name != "acme-tickets" || specs[0].Transport != bridge.TransportHTTP ||
		specs[0].URL != "https://acme.tickets.example.com/mcp" || len(specs[0].Headers) != 1 || specs[0].Headers[0].Value != "Bearer t0k" {
		t.Errorf("servers %+v", specs)
	}
	if strings.Contains(out, "t0k") || stderr != "" || strings.Contains(out, "sanitized") {
		t.Errorf("output shows the secret, warns or speaks of env:\n%s\n%s", out, stderr)
	}
	// --remote with a server that has only packages.
	if _, _, err := runMCPAt(t, url, path, "add", "io.github.example/time", "--remote"); err == nil || !strings.Contains(err.Error(), "no remotes") {
		t.Errorf("--remote without remotes: %v", err)
	}
}

func TestMCP_ListAndRemove(t *testing.T) {
	url := fakeRegistry(t)
	for _, shape := range []string{`{"mcpServers": {}}`, `{"mcpServers": []}`} {
		path := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(path, []byte(shape), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"add", "io.github.example/time"}, {"add", "io.github.example/postgres", "--var", "url=postgres://db"}, {"add", "io.github.example/weather", "--name", "w"}} {
			if _, _, err := runMCPAt(t, url, path, args...); err != nil {
				t.Fatal(err)
			}
		}
		out, _, err := runMCPAt(t, url, path, "list")
		if err != nil || !strings.Contains(squash(out), "time stdio uvx mcp-server-time==0.6.2") || !strings.Contains(squash(out), "postgres stdio docker run -i --rm --network host -e PGSSLMODE example/postgres-mcp:2.0.1 postgres://db") {
			t.Errorf("%s list: %v\n%s", shape, err, out)
		}
		for _, name := range []string{"postgres", "w", "time"} { // the middle, the last, the only one
			if _, _, err := runMCPAt(t, url, path, "remove", name); err != nil {
				t.Fatalf("%s remove %s: %v", shape, name, err)
			}
			for _, s := range servers(t, path) {
				if s.Name == name {
					t.Errorf("%s: %s still there", shape, name)
				}
			}
		}
		got, _ := os.ReadFile(path)
		var v map[string]json.RawMessage
		if err := json.Unmarshal(got, &v); err != nil || (string(v["mcpServers"]) != "{}" && string(v["mcpServers"]) != "[]") {
			t.Errorf("%s after removing all: %s", shape, got)
		}
		if _, _, err := runMCPAt(t, url, path, "remove", "time"); err == nil || !strings.Contains(err.Error(), `no server named "time"`) {
			t.Errorf("removing a missing server: %v", err)
		}
	}
}

func TestMCP_Errors(t *testing.T) {
	url := fakeRegistry(t)
	path := filepath.Join(t.TempDir(), "config.json")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "io.github.example/nothing"}, `server "io.github.example/nothing": not found in the registry`},
		{[]string{"add", "io.github.example/weather@9.9.9"}, `version "9.9.9": not found`},
		{[]string{"add"}, "want one server"},
		{[]string{"serach"}, `did you mean "search"?`},
		{[]string{"add", "io.github.example/time", "--env", "novalue"}, "want NAME=VALUE"},
		{[]string{"add", "io.github.example/time", "--package", "nuget"}, `package type "nuget" is not supported`},
	} {
		_, _, err := runMCPAt(t, url, path, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		}
	}
	var stdout, stderr bytes.Buffer
	err := run([]string{"mcp", "search", "x", "--registry", "http://registry.example.com"}, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "only on loopback") {
		t.Errorf("plain http registry: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed add wrote the config: %v", err)
	}
}

func TestLocalServerName(t *testing.T) {
	for in, want := range map[string]string{
		"io.github.owner/weather-mcp": "weather-mcp",
		"com.example/my.server":       "my-server",
		"a/___":                       "___",
		"a/..":                        "server",
	} {
		if got := localServerName(in); got != want {
			t.Errorf("localServerName(%q) = %q, want %q", in, got, want)
		}
	}
}
