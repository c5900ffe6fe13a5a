package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/session"
)

func TestParseConfig(t *testing.T) {
	cfg := &Config{}
	err := parseConfig([]byte(`{
		"mcpServers": {
			"fs": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"B": "2", "A": "1"}},
			"web": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
			"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
		},
		"timeouts": {"connect": "10s", "toolsList": 5, "toolCall": "3m", "grace": "2s"},
		"limits": {"serversPerSession": 4, "toolsPerSession": 50, "callsPerMinute": 30, "maxResultBytes": 1000, "maxMediaBytes": 2000},
		"servers": {"web": {"callsPerMinute": -1, "timeouts": {"toolCall": "10m"}}},
		"sandbox": {"allowPrivateNetworks": true, "allowHosts": ["*.corp.example"], "denyHosts": ["evil.example"], "allowEnv": ["NODE_OPTIONS"]}
	}`), cfg)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := cfg.DefaultServers()
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 3 || specs[0].Name != "fs" || specs[1].Name != "old" || specs[2].Name != "web" {
		t.Fatalf("specs = %+v, want fs, old, web (sorted)", specs)
	}
	if fs := specs[0]; fs.Transport != bridge.TransportStdio || fs.Command != "npx" || len(fs.Args) != 3 || fs.Env[0].Name != "A" || fs.Env[1].Name != "B" {
		t.Errorf("fs = %+v", fs)
	}
	if web := specs[2]; web.Transport != bridge.TransportHTTP || web.URL != "https://mcp.example.com/mcp" || web.Headers[0] != (bridge.Header{Name: "Authorization", Value: "Bearer t"}) {
		t.Errorf("web = %+v", web)
	}
	opts, err := cfg.coreOptions()
	if err != nil {
		t.Fatal(err)
	}
	b := opts.Bridge
	if b.Timeouts.Connect != 10*time.Second || b.Timeouts.ToolsList != 5*time.Second || b.Timeouts.ToolCall != 3*time.Minute || b.Grace != 2*time.Second {
		t.Errorf("timeouts = %+v grace %v", b.Timeouts, b.Grace)
	}
	if b.Limits.ServersPerSession != 4 || b.Limits.ToolsPerSession != 50 || b.Limits.MaxResultText != 1000 || b.Limits.MaxMedia != 2000 || b.CallsPerMinute != 30 {
		t.Errorf("limits = %+v, calls %d", b.Limits, b.CallsPerMinute)
	}
	if !b.URLs.AllowPrivateNetworks || b.URLs.AllowHosts[0] != "*.corp.example" || b.URLs.DenyHosts[0] != "evil.example" || b.Env.Allow[0] != "NODE_OPTIONS" {
		t.Errorf("sandbox = %+v %+v", b.URLs, b.Env)
	}
	if s := opts.ServerSettings["web"]; s.CallsPerMinute != -1 || s.Timeouts.ToolCall != 10*time.Minute {
		t.Errorf("servers.web = %+v", s)
	}
}

// sandbox.allowHosts may list loopback hosts, by address or name: a
// gateway, whose URL policy refuses loopback (urlpolicy.Policy
// RefuseLoopback), reaches exactly those.
func TestParseConfig_AllowHostsLoopback(t *testing.T) {
	cfg := &Config{}
	if err := parseConfig([]byte(`{"sandbox": {"allowHosts": ["127.0.0.1", "[::1]", "localhost"]}}`), cfg); err != nil {
		t.Fatal(err)
	}
	opts, err := cfg.coreOptions()
	if err != nil {
		t.Fatal(err)
	}
	p := *opts.Bridge.URLs
	p.RefuseLoopback = true // as the gateway sets it
	for _, u := range []string{"http://127.0.0.1:8808/mcp", "http://[::1]:8808/mcp", "http://localhost:8808/mcp"} {
		if _, err := p.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q) = %v, want allowed by sandbox.allowHosts", u, err)
		}
	}
	if _, err := p.CheckURL("http://127.0.0.2:8808/mcp"); err == nil {
		t.Error("a loopback address not in sandbox.allowHosts was allowed")
	}
}

func TestParseConfig_ErrorsNameTheKey(t *testing.T) {
	tests := []struct{ json, want string }{
		{`{"timeout": {}}`, `key "timeout": unknown key (valid keys here: mcpServers, timeouts,`},
		{`{"limits": {"toolsPerSession": "many"}}`, `key "limits.toolsPerSession": must be an integer, such as 10`},
		{`{"timeouts": {"connect": "soon"}}`, `"soon" is not a positive duration`},
		{`{"mcpServers": {"f\u001bs": {"command": "x"}}}`, `key "mcpServers.f\x1bs": server name: name "f\x1bs" has the control or invisible formatting character U+001B`},
		{`{"mcpServers": {"": {"command": "x"}}}`, `key "mcpServers.": server name: must be a non-empty string`},
		{`{"mcpServers": {"fs": {"args": []}}}`, `key "mcpServers.fs.command": must be a non-empty string`},
		{`{"mcpServers": {"fs": {"command": "x", "cwd": "/"}}}`, `key "mcpServers.fs.cwd": unknown key (valid keys here: type, command, args, env, url, headers)`},
		{`{"mcpServers": {"w": {"type": "http"}}}`, `key "mcpServers.w.url": must be a non-empty string`},
		{`{"mcpServers": {"w": {"type": "websocket", "url": "x"}}}`, `key "mcpServers.w.type": "websocket" is not a transport`},
		{`{"mcpServers": {"w": {"type": "http", "url": "https://x", "headers": {"Host": "y"}}}}`, `key "mcpServers.w.headers": header "Host"`},
		{`{"mcpServers": {"fs": {"command": "x", "env": {"A=B": "1"}}}}`, `key "mcpServers.fs.env": variable name "A=B"`},
		{`{"sandbox": {"allowHosts": ["https://x.example/"]}}`, `host pattern "https://x.example/"`},
		{`{"tools": {"builtin": "no"}}`, `key "tools.builtin": must be true or false`},
		{`{"tools": {"builtins": false}}`, `key "tools.builtins": unknown key (valid keys here: builtin)`},
		{`{"mcpServers": {"acp": {"command": "x"}}}`, `key "mcpServers.acp.name": "acp" is reserved for the agent's built-in tools`},
		{`{"store": {"url": "postgres://app:s3cret@db/acp"}}`, `key "store.url": a PostgreSQL URL must not carry a password: set PGPASSWORD in the environment or put it in ~/.pgpass`},
		{`{"store": {"url": "postgresql://db/acp?user=app&password=s3cret"}}`, `key "store.url": a PostgreSQL URL must not carry a password`},
		{`{"store": {"url": "/var/lib/acp/sessions.db"}}`, `key "store.url": must be a postgres:// or postgresql:// URL`},
		{`{"store": {"url": "postgres://db/acp", "path": "/x.db"}}`, `key "store.url": set store.url (PostgreSQL) or store.path (SQLite), not both`},
		{`{"store": {"path": "postgres://db/acp"}}`, `key "store.path": is a SQLite file; put a PostgreSQL URL in store.url`},
		{`{"context": {"compactAt": 1.5}}`, `key "context.compactAt": 1.5 must be a share of the context window`},
		{`{"context": {"keepRecent": 0.9}}`, `key "context.keepRecent": 0.9 must be a share of the context window below context.compactAt`},
		{`{"context": {"toolSearch": "sometimes"}}`, `key "context.toolSearch": "sometimes" must be "auto", "on" or "off"`},
		{`{"context": {"resultTokens": -1}}`, `key "context.resultTokens": -1 must be a number of tokens`},
		{`{"context": {"deferShare": 2}}`, `key "context.deferShare": 2 must be a share`},
		{`{"context": {"window": 1}}`, `key "context.window": unknown key (valid keys here: compactAt, keepRecent, resultTokens, toolSearch, deferTools, deferShare, strategy)`},
		{`{"context": {"strategy": "summarize"}}`, `key "context.strategy": "summarize" must be "agent", "clear_tool_uses" or "server_compaction"`},
		{`{"model": {"provider": "anthropic", "name": "x", "contextWindow": -5}}`, `key "model.contextWindow": -5 must be the model's context window in tokens`},
		{`{"model": {"provider": "anthropic", "name": "x", "pricing": {"input": -3, "output": 1}}}`, `key "model.pricing": prices must be USD per million tokens`},
		{`{"model": {"provider": "openai", "name": "x", "api": "completions"}}`, `key "model.api": "completions": want "responses" or "chat", for provider openai only`},
		{`{"model": {"provider": "anthropic", "name": "x", "api": "chat"}}`, `key "model.api": "chat": want "responses" or "chat", for provider openai only`},
		{`{"model": {"provider": "openai", "name": "x", "images": "no"}}`, `key "model.images": must be true or false`},
		{`{"agents": {"code reviewer": {"description": "x"}}}`, `key "agents.code reviewer": "code reviewer" must be 1 to 64 letters`},
		{`{"agents": {"reviewer": {"prompt": "x"}}}`, `key "agents.reviewer.description": must say in a sentence when to use the subagent`},
		{`{"agents": {"reviewer": {"description": "d", "tools": ["mcp__[x"]}}}`, `key "agents.reviewer.tools": "mcp__[x" is not a tool name or glob`},
		{`{"agents": {"reviewer": {"description": "d", "color": "red"}}}`, `key "agents.reviewer.color": unknown key (valid keys here: description, prompt, tools, model)`},
		{`{"subagents": {"maxTokens": -1}}`, `key "subagents.maxTokens": -1 must be a number of tokens`},
		{`[1]`, `must be a JSON object`},
		{`{"limits": `, `it ends too early`},
	}
	for _, tt := range tests {
		err := parseConfig([]byte(tt.json), &Config{})
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("parseConfig(%s) = %v, want %q", tt.json, err, tt.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	if _, err := loadConfig(filepath.Join(dir, "missing.json"), false); err != nil {
		t.Errorf("a missing default config is fine: %v", err)
	}
	if _, err := loadConfig(filepath.Join(dir, "missing.json"), true); err == nil {
		t.Error("a missing --config file must be an error")
	}
	path := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(path, []byte(`{"limits": {"nope": 1}}`), 0o600)
	if _, err := loadConfig(path, true); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"limits.nope"`) {
		t.Errorf("err = %v, want the path and the key", err)
	}
}

// The config file's entries obey the same rules as ACP mcpServers entries
// (bridge.ServerSpec.Validate): a NUL in an env value, once accepted here and
// refused there, is refused in both.
func TestParseConfig_SharesTheSpecRules(t *testing.T) {
	tests := []struct{ json, want string }{
		{`{"mcpServers": {"fs": {"command": "x", "env": {"A": "a\u0000b"}}}}`, `key "mcpServers.fs.env": value of A contains NUL`},
		{`{"mcpServers": {"fs": {"command": " ", "env": {"A=B": "1"}}}}`, `key "mcpServers.fs.command": must be a non-empty string`},
		{`{"mcpServers": {"w": {"type": "sse", "url": "https://x", "headers": {"X-A": "a\r\nB: c"}}}}`, `key "mcpServers.w.headers": header "X-A": name and value must not contain CR or LF`},
	}
	for _, tt := range tests {
		err := parseConfig([]byte(tt.json), &Config{})
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("parseConfig(%s) = %v, want %q", tt.json, err, tt.want)
		}
	}
}

// The built-in tools (server "acp") are on unless tools.builtin is false.
func TestConfig_ToolsBuiltin(t *testing.T) {
	for _, tt := range []struct {
		json string
		want []string
	}{
		{`{}`, []string{"acp"}},
		{`{"tools": {"builtin": true}}`, []string{"acp"}},
		{`{"tools": {"builtin": false}}`, nil},
	} {
		var cfg Config
		if err := parseConfig([]byte(tt.json), &cfg); err != nil {
			t.Fatal(err)
		}
		opts, err := cfg.coreOptions()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range opts.InProcess {
			names = append(names, p.Name)
			if p.New(session.InProcessEnv{Cwd: t.TempDir()}) == nil {
				t.Errorf("%s: in-process server %q builds nil", tt.json, p.Name)
			}
		}
		if !slices.Equal(names, tt.want) {
			t.Errorf("%s: in-process servers %v, want %v", tt.json, names, tt.want)
		}
	}
}

// Every config mistake is reported as FILE:LINE:COL, the full key path at
// any depth, and what a valid value looks like.
func TestLoadConfig_ErrorsGivePositionKeyPathAndExample(t *testing.T) {
	tests := []struct{ json, want string }{
		{"{\n  \"timeouts\": {\n    \"conect\": \"30s\"\n  }\n}", `:3:5: key "timeouts.conect": unknown key (valid keys here: connect, toolsList, toolCall, grace)`},
		{"{\"servers\": {\"github\": {\n\t\"timeouts\": {\"toolCall\": \"soon\"}}}}", `:2:27: key "servers.github.timeouts.toolCall": "soon" is not a positive duration such as "30s"`},
		{"{\"servers\": {\"github\": {\"oauth\": {\"scope\": []}}}}", `:1:35: key "servers.github.oauth.scope": unknown key (valid keys here: clientId, clientSecretEnv, scopes, issuer)`},
		{"{\n\"limits\": {\"toolsPerSession\": \"many\"}}", `:2:31: key "limits.toolsPerSession": must be an integer, such as 10`},
		{"{\"sandbox\": {\"allowHosts\": \"x.example\"}}", `:1:28: key "sandbox.allowHosts": must be an array of a string, such as ["text"]`},
		{"{\"timeouts\": 30}", `:1:14: key "timeouts": must be an object with the keys connect, toolsList, toolCall, grace`},
		{"{\n\"sandbox\": {\"denyHosts\": [\"ok.example\", \"https://x/\"]}}", `:2:41: key "sandbox.denyHosts[1]": host pattern "https://x/"`},
		{"{\"model\": {\"provider\": \"nope\", \"name\": \"m\"}}", `:1:24: key "model.provider": "nope" is not a provider`},
		{"{\"mcpServers\": {\"fs\": {\"args\": []}}}", `:1:23: key "mcpServers.fs.command": must be a non-empty string`},
		{"{\"mcpServers\": [\n  {\"name\": \"fs\", \"command\": \"\"}\n]}", `:2:29: key "mcpServers[0].command": must be a non-empty string`},
		{"{\"mcpServers\": [{\"name\": \"x\", \"type\": \"acp\", \"id\": \"1\"}]}", `:1:39: key "mcpServers[0].type": "acp" is not a transport a config server can have`},
		{"{\"mcpServers\": \"fs\"}", `:1:16: key "mcpServers": must be an object of servers by name, {"fs": {"command": "npx"`},
		{"{\n  \"limits\": {,}\n}", `:2:14: invalid JSON: invalid character ','`},
		{"{\"limits\": {", `:1:13: invalid JSON: it ends too early`},
		{"[1]", `:1:1: must be a JSON object, such as {"timeouts": {"connect": "30s"}}`},
		{"{} {}", `:1:4: invalid JSON: more than one value`},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		path := filepath.Join(dir, fmt.Sprintf("c%d.json", i))
		if err := os.WriteFile(path, []byte(tt.json), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadConfig(path, true)
		if err == nil || !strings.Contains(err.Error(), "config "+path+tt.want) {
			t.Errorf("%q: err = %v\nwant %q", tt.json, err, "config "+path+tt.want)
		}
	}
}

// An empty config file (nothing but white space) is no settings, like a
// missing one.
func TestLoadConfig_EmptyFileIsNoSettings(t *testing.T) {
	for _, data := range []string{"", " \n\t\n"} {
		path := filepath.Join(t.TempDir(), "config.json")
		_ = os.WriteFile(path, []byte(data), 0o600)
		cfg, err := loadConfig(path, true)
		if err != nil {
			t.Errorf("%q: %v", data, err)
			continue
		}
		if specs, err := cfg.DefaultServers(); err != nil || len(specs) != 0 {
			t.Errorf("%q: servers %v %v", data, specs, err)
		}
	}
}

// config mcpServers takes the Claude Desktop object and the ACP array (as
// acpx's --mcp-config and session/new have it); both give the same specs.
func TestParseConfig_MCPServersBothShapes(t *testing.T) {
	object := `{"mcpServers": {
		"web": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
		"fs": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"A": "1", "B": "2"}},
		"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
	}}`
	array := `{"mcpServers": [
		{"name": "fs", "command": "npx", "args": ["-y", "server-filesystem", "."], "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
		{"type": "http", "name": "web", "url": "https://mcp.example.com/mcp", "headers": [{"name": "Authorization", "value": "Bearer t"}]},
		{"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}
	]}`
	var got [2][]bridge.ServerSpec
	for i, data := range []string{object, array} {
		var cfg Config
		if err := parseConfig([]byte(data), &cfg); err != nil {
			t.Fatalf("shape %d: %v", i, err)
		}
		specs, err := cfg.DefaultServers()
		if err != nil {
			t.Fatalf("shape %d: %v", i, err)
		}
		got[i] = specs
	}
	if len(got[0]) != 3 || got[0][0].Name != "fs" || got[0][1].Name != "old" || got[0][2].Name != "web" {
		t.Fatalf("object shape: %+v, want fs, old, web", got[0])
	}
	if !reflect.DeepEqual(got[0], got[1]) {
		t.Errorf("the shapes differ:\nobject %+v\narray  %+v", got[0], got[1])
	}
}

// null leaves a key unset, as encoding/json does, at any depth.
func TestParseConfig_NullIsUnset(t *testing.T) {
	var cfg Config
	err := parseConfig([]byte(`{"mcpServers": null, "timeouts": null, "model": null, "sandbox": {"allowHosts": null}, "servers": {"x": {"oauth": null}}}`), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != nil || cfg.Sandbox.AllowHosts != nil || cfg.Servers["x"].OAuth != nil {
		t.Errorf("cfg = %+v", cfg)
	}
}

func TestConfig_Subagents(t *testing.T) {
	var c Config
	if err := parseConfig([]byte(`{"agents": {"reviewer": {"description": "Reviews a diff.", "prompt": "You review.", "tools": ["mcp__acp__read_file"], "model": "anthropic:claude-x"}, "explorer": {"description": "Explores."}}, "subagents": {"maxTurnRequests": 5}}`), &c); err != nil {
		t.Fatal(err)
	}
	s := c.runnerOptions(nil, nil, nil).Subagents
	if s == nil || s.MaxTurnRequests != 5 || len(s.Agents) != 2 || s.Agents[0].Name != "explorer" || s.Agents[1].Prompt != "You review." || s.Agents[1].Model != "anthropic:claude-x" {
		t.Fatalf("subagents = %+v", s)
	}
	if err := parseConfig([]byte(`{"subagents": {"enabled": false}}`), &c); err != nil {
		t.Fatal(err)
	}
	if s := c.runnerOptions(nil, nil, nil).Subagents; s != nil {
		t.Errorf("subagents.enabled false: %+v", s)
	}
}

// A server's ${VAR} never reads the agent's own secrets: the providers'
// API keys, the key variable the config names, the gateway's and the
// operator's tokens; other variables it reads.
func TestConfig_LookupEnvHidesTheAgentsSecrets(t *testing.T) {
	cfg := &Config{Model: &ModelConfig{APIKeyEnv: "MY_MODEL_KEY"}}
	for _, name := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MY_MODEL_KEY", tokenEnv, metricsTokenEnv} {
		t.Setenv(name, "secret")
		if v, ok := cfg.lookupEnv(name); ok || v != "" {
			t.Errorf("lookupEnv(%s) = %q, %v; want unset", name, v, ok)
		}
	}
	t.Setenv("GITHUB_TOKEN", "gh")
	if v, ok := cfg.lookupEnv("GITHUB_TOKEN"); !ok || v != "gh" {
		t.Errorf("lookupEnv(GITHUB_TOKEN) = %q, %v", v, ok)
	}
	if opts, err := cfg.coreOptions(); err != nil || opts.LookupEnv == nil {
		t.Errorf("coreOptions: LookupEnv not set (%v)", err)
	}
}
