package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/bridge/builtin"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/audit"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
	"github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// Config is the config file (--config, default
// $XDG_CONFIG_HOME/acp-agent/config.json). Every key is optional; an empty
// file is no settings. An unknown key or a wrong value, at any depth, is a
// startup error giving FILE:LINE:COL, the full key path and what a valid
// value looks like (*ConfigError).
type Config struct {
	// MCPServers are default servers connected in every session, in
	// either shape: the Claude Desktop object keyed by server name, or the
	// ACP array of session/new ({name, command, args, env: [{name, value}]}
	// or {type, name, url, headers: [{name, value}]}). See DefaultServers.
	MCPServers json.RawMessage `json:"mcpServers"`
	Timeouts   Timeouts        `json:"timeouts"`
	Limits     Limits          `json:"limits"`
	// Servers holds per-server settings by server name; they apply to a
	// default server or a session's server of that name.
	Servers map[string]ServerConfig `json:"servers"`
	Sandbox SandboxConfig           `json:"sandbox"`
	// Model is the default model; --model overrides it.
	Model *ModelConfig `json:"model"`
	// Permissions is the tool permissions policy.
	Permissions PermissionsConfig `json:"permissions"`
	// Store is where sessions are kept.
	Store StoreConfig `json:"store"`
	// Tools configures the agent's own tools.
	Tools ToolsConfig `json:"tools"`
	// OAuth configures signing in to remote MCP servers.
	OAuth OAuthConfig `json:"oauth"`
	// Context configures how the model's context window is spent:
	// compaction, the budget of a tool result, tool search.
	Context ContextConfig `json:"context"`
	// Telemetry and Audit configure traces and the audit log (telemetry.go).
	Telemetry TelemetryConfig `json:"telemetry"`
	Audit     AuditConfig     `json:"audit"`
	// Gateway configures "acp-agent gateway" (gateway.go).
	Gateway GatewayConfig `json:"gateway"`
	// Agents are the subagents the model may hand a task to (the task
	// tool's subagent_type), by name.
	Agents map[string]AgentConfig `json:"agents"`
	// Subagents configures the task tool.
	Subagents SubagentsConfig `json:"subagents"`

	// auditor is the audit log startObservability opened, or nil; not a key.
	auditor audit.Auditor
	// managed is the managed policy of MCP servers (--managed-config,
	// managed.go), or nil for none; not a key. coreOptions makes it the
	// bridge's Admit, a gateway each tenant's (ForTenant).
	managed *mcppolicy.Policy
}

// ContextConfig is config "context". Zero fields mean the defaults.
type ContextConfig struct {
	// CompactAt is the share of the model's context window (0 to 1) a
	// request may reach before older turns are compacted into a summary;
	// default 0.8.
	CompactAt float64 `json:"compactAt"`
	// KeepRecent is the share of the window kept verbatim at a compaction
	// (the newest messages), under CompactAt; default 0.2.
	KeepRecent float64 `json:"keepRecent"`
	// ResultTokens is the budget of one tool result that reaches the model,
	// in tokens; the rest stays pageable (read_tool_result). Default 25000.
	ResultTokens int `json:"resultTokens"`
	// ToolSearch is "auto" (the default: tools are deferred behind
	// search_tools past DeferTools tools or DeferShare of the window), "on"
	// or "off".
	ToolSearch string `json:"toolSearch"`
	// DeferTools and DeferShare are the thresholds of "auto"; default 50
	// tools and 0.1 of the window.
	DeferTools int     `json:"deferTools"`
	DeferShare float64 `json:"deferShare"`
	// Strategy says who keeps a long conversation within the window:
	// "agent" (the default: the agent's compaction), "clear_tool_uses"
	// (the API clears old tool results) or "server_compaction" (the API
	// compacts), the agent's compaction as the backstop of both. A model
	// whose API offers neither (OpenAI-compatible) falls back to "agent",
	// with a warning in the log.
	Strategy string `json:"strategy"`
}

// AgentConfig is one entry of config "agents": a subagent, as Claude
// Code's agents.
type AgentConfig struct {
	// Description says when to use it; the task tool lists it (keep it to
	// a sentence: it is in every request).
	Description string `json:"description"`
	// Prompt is its system prompt; empty means runner.DefaultSubagentPrompt.
	Prompt string `json:"prompt"`
	// Tools, if set, are the tools it may use: names or globs of the
	// session's tools, such as "mcp__acp__read_file" or "mcp__github__*".
	Tools []string `json:"tools"`
	// Model is the model it runs on, "provider:name" as the session's
	// model picker lists it; empty means the session's.
	Model string `json:"model"`
}

// SubagentsConfig is config "subagents". Zero fields mean the defaults.
type SubagentsConfig struct {
	// Enabled false offers no task tool; default true.
	Enabled *bool `json:"enabled"`
	// MaxTurnRequests bounds the model requests of one subagent; default
	// runner.DefaultSubagentTurnRequests (25).
	MaxTurnRequests int `json:"maxTurnRequests"`
	// MaxTokens is one subagent's token budget (prompt and output tokens
	// of all its requests, cached or not); default
	// runner.DefaultSubagentTokens (500,000).
	MaxTokens int64 `json:"maxTokens"`
}

// subagents are the runner's Subagents from the config, or nil when
// subagents.enabled is false.
func (c *Config) subagents() *runner.Subagents {
	if e := c.Subagents.Enabled; e != nil && !*e {
		return nil
	}
	s := &runner.Subagents{MaxTurnRequests: c.Subagents.MaxTurnRequests, MaxTokens: c.Subagents.MaxTokens}
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		a := c.Agents[name]
		s.Agents = append(s.Agents, runner.Agent{Name: name, Description: a.Description, Prompt: a.Prompt, Tools: a.Tools, Model: a.Model})
	}
	return s
}

// checkAgents checks config "agents" and "subagents".
func (c *configChecker) checkAgents(cfg *Config) error {
	for _, name := range slices.Sorted(maps.Keys(cfg.Agents)) {
		a := cfg.Agents[name]
		key := "agents." + name
		switch {
		case !validAgentName(name):
			return c.errAt(key, "%q must be 1 to 64 letters, digits, '_' and '-', such as \"code-reviewer\"", name)
		case name == "general-purpose":
			return c.errAt(key, "the name general-purpose is the default subagent's")
		case strings.TrimSpace(a.Description) == "":
			return c.errAt(key+".description", "must say in a sentence when to use the subagent, such as \"Reviews a diff for bugs; read-only.\"")
		}
		for _, g := range a.Tools {
			if _, err := path.Match(g, ""); err != nil {
				return c.errAt(key+".tools", "%q is not a tool name or glob: %v", g, err)
			}
		}
	}
	switch {
	case cfg.Subagents.MaxTurnRequests < 0:
		return c.errAt("subagents.maxTurnRequests", "%d must be a number of model requests, more than 0, such as 25", cfg.Subagents.MaxTurnRequests)
	case cfg.Subagents.MaxTokens < 0:
		return c.errAt("subagents.maxTokens", "%d must be a number of tokens, more than 0, such as 500000", cfg.Subagents.MaxTokens)
	}
	return nil
}

// validAgentName reports whether name may name a subagent: what the model
// passes as subagent_type.
func validAgentName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// runnerOptions are the options of the agent loop from the config: models,
// permissions, and how the context is managed. history may be nil.
func (c *Config) runnerOptions(models []gateway.Model, history gateway.History, log *slog.Logger) *runner.Options {
	return &runner.Options{
		Models: models, Permissions: c.Permissions.gateway(), History: history, Logger: log,
		ResultBudget: c.Context.ResultTokens, CompactAt: c.Context.CompactAt, KeepRecent: c.Context.KeepRecent,
		ToolSearch: runner.ToolSearch(c.Context.ToolSearch), DeferTools: c.Context.DeferTools, DeferShare: c.Context.DeferShare,
		Context: gateway.ContextStrategy(c.Context.Strategy), Audit: c.auditor, Subagents: c.subagents(),
	}
}

// toolsPerSession is the bridged tools' limit: limits.toolsPerSession, or
// by default quota.DefaultToolsPerSession (1,000, as tools beyond the
// tool search thresholds are deferred) and 100 with context.toolSearch
// "off", when every tool's definition is sent with every request.
func (c *Config) toolsPerSession() int {
	if n := c.Limits.ToolsPerSession; n > 0 {
		return n
	}
	if runner.ToolSearch(c.Context.ToolSearch) == runner.ToolSearchOff {
		return quota.DefaultToolsPerSessionNoSearch
	}
	return quota.DefaultToolsPerSession
}

// checkContextConfig checks config "context" and the model's numbers.
func (c *configChecker) checkContextConfig(cfg *Config) error {
	x := cfg.Context
	switch {
	case x.CompactAt < 0 || x.CompactAt >= 1:
		return c.errAt("context.compactAt", "%g must be a share of the context window, more than 0 and less than 1, such as 0.8", x.CompactAt)
	case x.KeepRecent < 0 || x.KeepRecent >= max(x.CompactAt, runner.DefaultCompactAt):
		return c.errAt("context.keepRecent", "%g must be a share of the context window below context.compactAt, such as 0.2", x.KeepRecent)
	case x.ResultTokens < 0:
		return c.errAt("context.resultTokens", "%d must be a number of tokens, more than 0, such as 25000", x.ResultTokens)
	case x.DeferTools < 0:
		return c.errAt("context.deferTools", "%d must be a number of tools, more than 0, such as 50", x.DeferTools)
	case x.DeferShare < 0 || x.DeferShare >= 1:
		return c.errAt("context.deferShare", "%g must be a share of the context window, more than 0 and less than 1, such as 0.1", x.DeferShare)
	}
	if s := gateway.ContextStrategy(x.Strategy); s != "" && !s.Valid() {
		return c.errAt("context.strategy", "%q must be \"agent\", \"clear_tool_uses\" or \"server_compaction\"", x.Strategy)
	}
	switch runner.ToolSearch(x.ToolSearch) {
	case "", runner.ToolSearchAuto, runner.ToolSearchOn, runner.ToolSearchOff:
	default:
		return c.errAt("context.toolSearch", "%q must be \"auto\", \"on\" or \"off\"", x.ToolSearch)
	}
	if m := cfg.Model; m != nil {
		if m.ContextWindow < 0 {
			return c.errAt("model.contextWindow", "%d must be the model's context window in tokens, such as 200000", m.ContextWindow)
		}
		if p := m.Pricing; p != nil && (p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0) {
			return c.errAt("model.pricing", "prices must be USD per million tokens, 0 or more, such as {\"input\": 3, \"output\": 15, \"cacheRead\": 0.3, \"cacheWrite\": 3.75}")
		}
	}
	return nil
}

// OAuthConfig is config "oauth": signing in to http and sse MCP servers
// that answer 401 (MCP authorization). Tokens are kept in
// oauth-tokens.json next to the session store (memory with --store memory).
type OAuthConfig struct {
	// ClientIDMetadataDocument is the https URL (with a path) of a Client
	// ID Metadata Document describing acp-agent, used where the
	// authorization server supports it; empty means dynamic registration
	// (or a servers.<name>.oauth client).
	ClientIDMetadataDocument string `json:"clientIdMetadataDocument"`
	// Timeout bounds the wait for the user to sign in (default 10m).
	Timeout Duration `json:"timeout"`
}

// ServerOAuth is config "servers.<name>.oauth": a client registered with
// the server's authorization server beforehand.
type ServerOAuth struct {
	// ClientID is the registered client_id.
	ClientID string `json:"clientId"`
	// ClientSecretEnv names the environment variable holding the client
	// secret; empty for a public client. The secret is never stored.
	ClientSecretEnv string `json:"clientSecretEnv"`
	// Scopes are requested instead of those the server advertises.
	Scopes []string `json:"scopes"`
	// Issuer pins the authorization server (its issuer identifier) the
	// client belongs to; the client is never sent to another one. Set it
	// whenever there is a secret.
	Issuer string `json:"issuer"`
}

// ToolsConfig is config "tools".
type ToolsConfig struct {
	// Builtin turns the built-in tools (server "acp", tools
	// "mcp__acp__read_file" etc., package bridge/builtin) on or off; absent
	// means on. Permission globs such as "mcp__acp__*" narrow them.
	Builtin *bool `json:"builtin"`
}

// inProcess returns the in-process servers of every session; editorOnly
// (a gateway's) gives built-in tools that work through the editor alone.
func (t ToolsConfig) inProcess(editorOnly bool) []session.InProcessServer {
	if t.Builtin != nil && !*t.Builtin {
		return nil
	}
	return []session.InProcessServer{{Name: builtin.Name, New: func(env session.InProcessEnv) *mcp.Server {
		return builtin.New(&builtin.Options{Root: env.Cwd, Dirs: env.AdditionalDirectories, Editor: env.Editor, EditorOnly: editorOnly, Confine: env.Confine})
	}, Timeouts: bridge.Timeouts{ToolCall: builtin.CallTimeout}, Lazy: true}}
}

// StoreConfig is config "store".
type StoreConfig struct {
	// Path is the SQLite database file; default
	// $XDG_STATE_HOME/acp-agent/sessions.db (~/.local/state/...). "memory"
	// keeps sessions in memory only.
	Path string `json:"path"`
	// URL is a PostgreSQL database (postgres:// or postgresql://), the
	// store a gateway fleet shares, instead of Path. It must not carry a
	// password: the driver reads PGPASSWORD or ~/.pgpass.
	URL string `json:"url"`
}

// PermissionsConfig is config "permissions": mode ask (default), allow or
// deny, and tool-name globs such as "mcp__github__*"; deny wins.
type PermissionsConfig struct {
	Mode  string   `json:"mode"`
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

func (p PermissionsConfig) gateway() runner.Permissions {
	return runner.Permissions{Mode: runner.PermissionMode(p.Mode), Allow: p.Allow, Deny: p.Deny}
}

// Timeouts are durations in Go syntax ("30s", "2m"). Zero means the default.
type Timeouts struct {
	// Connect bounds starting an MCP server and initialize (default 30s).
	Connect Duration `json:"connect"`
	// ToolsList bounds tools/list with all its pages (default 30s).
	ToolsList Duration `json:"toolsList"`
	// ToolCall bounds one tools/call (default 120s).
	ToolCall Duration `json:"toolCall"`
	// Grace is how long a stdio server gets to exit after its stdin closes,
	// before SIGTERM and then SIGKILL of its process group (default 5s).
	Grace Duration `json:"grace"`
}

func (t Timeouts) bridge() bridge.Timeouts {
	return bridge.Timeouts{Connect: time.Duration(t.Connect), ToolsList: time.Duration(t.ToolsList), ToolCall: time.Duration(t.ToolCall)}
}

// Limits are the per-session quotas; zero means the default.
type Limits struct {
	ServersPerSession int `json:"serversPerSession"` // default 10, default servers included
	ToolsPerSession   int `json:"toolsPerSession"`   // default 1000 (100 with context.toolSearch "off")
	CallsPerMinute    int `json:"callsPerMinute"`    // per server, default 100; negative: no limit
	MaxResultBytes    int `json:"maxResultBytes"`    // text of one tool result kept for the session, default 4194304
	MaxMediaBytes     int `json:"maxMediaBytes"`     // one image/audio/blob block, default 5242880
}

// ServerConfig is config "servers.<name>".
type ServerConfig struct {
	Timeouts       Timeouts `json:"timeouts"`
	CallsPerMinute int      `json:"callsPerMinute"`
	// OAuth is the server's pre-registered OAuth client, if any.
	OAuth *ServerOAuth `json:"oauth"`
	// Sandbox is a stdio server's own confinement, within the session's
	// mode: {"network": false} refuses it TCP, "read" narrows what it may
	// read, "write" adds paths it may write in workspace-write mode.
	Sandbox confine.Server `json:"sandbox"`
}

// client returns the signin.Client of o, reading the secret from its
// environment variable; an error names the key of server name.
func (o *ServerOAuth) client(name string) (signin.Client, error) {
	if o == nil {
		return signin.Client{}, nil
	}
	key := "servers." + name + ".oauth"
	if o.ClientID == "" {
		return signin.Client{}, fmt.Errorf("config %s.clientId: required (the client_id registered with the server's authorization server)", key)
	}
	c := signin.Client{ID: o.ClientID, Scopes: o.Scopes, Issuer: o.Issuer}
	if o.ClientSecretEnv != "" {
		c.Secret = os.Getenv(o.ClientSecretEnv)
		if c.Secret == "" {
			return signin.Client{}, fmt.Errorf("config %s.clientSecretEnv: environment variable %s is not set", key, o.ClientSecretEnv)
		}
	}
	return c, nil
}

// SandboxConfig is config "sandbox".
type SandboxConfig struct {
	// AllowPrivateNetworks lets http/sse servers be reached on private
	// addresses (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7).
	AllowPrivateNetworks bool `json:"allowPrivateNetworks"`
	// AllowHosts and DenyHosts are exact hosts or "*.suffix" patterns;
	// deny wins.
	AllowHosts []string `json:"allowHosts"`
	DenyHosts  []string `json:"denyHosts"`
	// AllowEnv re-allows environment variables that are dropped by default
	// because they can inject code into a child (LD_PRELOAD, NODE_OPTIONS, …).
	AllowEnv []string `json:"allowEnv"`
	// Mode is the mode of a session that has not chosen one: read-only,
	// workspace-write (default) or full-access.
	Mode string `json:"mode"`
	// Require refuses to start a stdio server or command the kernel cannot
	// confine in full (no Landlock, or too old an ABI for a rule) instead
	// of starting it with what the kernel enforces.
	Require bool `json:"require"`
}

// mode returns the default session mode of s, checked.
func (s SandboxConfig) mode() (confine.Mode, error) {
	if s.Mode == "" {
		return confine.WorkspaceWrite, nil
	}
	m, err := confine.ParseMode(s.Mode)
	if err != nil {
		return "", fmt.Errorf("config sandbox.mode: %w", err)
	}
	return m, nil
}

// Duration is a time.Duration written as a Go duration string.
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	v, err := acp.ParseDuration(b)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// defaultConfigPath returns $XDG_CONFIG_HOME/acp-agent/config.json, falling
// back to ~/.config.
func defaultConfigPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "acp-agent", "config.json")
}

// projectsPath is the file of the projects whose .mcp.json servers the user
// approved: projects.json in the directory of the config file (config,
// else the default one); "" when there is no config directory.
func projectsPath(config string) string {
	if config == "" {
		config = defaultConfigPath()
	}
	if config == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(config), "projects.json")
}

// lookupEnv is session.CoreOptions.LookupEnv: the agent's environment for
// the ${VAR} references of a project's and an added server, except the
// agent's own secrets (the model providers' API keys, the key variable the
// config names, the gateway's and the operator's tokens), which no server
// may read.
func (c *Config) lookupEnv(name string) (string, bool) {
	secret := name == tokenEnv || name == metricsTokenEnv || c.Model != nil && name == c.Model.APIKeyEnv
	for _, p := range providers {
		secret = secret || name == p.keyEnv || name == p.altKeyEnv
	}
	if secret {
		return "", false
	}
	return os.LookupEnv(name)
}

// loadConfig reads the config file at path. A missing file is an error only
// when required (the user named it with --config); an empty one (nothing
// but white space) is no settings. A mistake is reported as
// "config FILE:LINE:COL: key "a.b": rule".
func loadConfig(path string, required bool) (*Config, error) {
	cfg := &Config{}
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return cfg, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := parseConfig(data, cfg); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) && ce.Offset >= 0 {
			line, col := lineCol(data, ce.Offset)
			return nil, fmt.Errorf("config %s:%d:%d: %w", path, line, col, err)
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// parseConfig decodes and checks data into cfg. Mistakes are
// *ConfigError, positioned where the file has them.
func parseConfig(data []byte, cfg *Config) error {
	c, err := checkConfigJSON(data)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil { // checkConfigJSON found these first
		return describeJSONError(err)
	}
	if _, err := cfg.DefaultServers(); err != nil {
		return c.locate(err)
	}
	if err := cfg.Permissions.gateway().Validate(); err != nil {
		return c.errAt("permissions", "%v", err)
	}
	if m := cfg.Model; m != nil {
		if _, ok := lookupProvider(m.Provider); !ok {
			return c.errAt("model.provider", "%q is not a provider (want %s)", m.Provider, providerIDs())
		}
		if strings.TrimSpace(m.Name) == "" {
			return c.errAt("model.name", "must be a non-empty model name, such as %q", modelExamples()[0])
		}
		if m.API != "" && (m.Provider != "openai" || m.API != openai.APIResponses && m.API != openai.APIChat) {
			return c.errAt("model.api", "%q: want %q or %q, for provider openai only", m.API, openai.APIResponses, openai.APIChat)
		}
	}
	if err := c.checkStoreConfig(cfg.Store); err != nil {
		return err
	}
	if err := c.checkContextConfig(cfg); err != nil {
		return err
	}
	if err := c.checkAgents(cfg); err != nil {
		return err
	}
	if m := cfg.Limits.MaxMediaBytes; m > acp.MaxPromptMediaBytes {
		return c.errAt("limits.maxMediaBytes", "%d bytes is over the bound of %d bytes: a prompt image or audio block that large, base64-encoded, would not fit in one ACP message (at most %d bytes)",
			m, acp.MaxPromptMediaBytes, acp.MaxFrameBytes)
	}
	for _, list := range []struct {
		key   string
		hosts []string
	}{{"sandbox.allowHosts", cfg.Sandbox.AllowHosts}, {"sandbox.denyHosts", cfg.Sandbox.DenyHosts}} {
		for i, h := range list.hosts {
			if strings.TrimSpace(h) == "" || strings.ContainsAny(h, "/: ") && !strings.HasPrefix(h, "[") {
				return c.errAt(fmt.Sprintf("%s[%d]", list.key, i), "host pattern %q must be a host name, an IP or *.suffix, such as \"*.example.com\"", h)
			}
		}
	}
	return nil
}

// locate positions a *ConfigError found after decoding at its key, or the
// nearest enclosing key the file has.
func (c *configChecker) locate(err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Offset >= 0 {
		return err
	}
	for key := ce.Key; key != ""; {
		if off, ok := c.at[key]; ok {
			ce.Offset = off
			break
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return ce
}

// describeJSONError turns a decoding error into a *ConfigError.
func describeJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return &ConfigError{Offset: te.Offset, Rule: "must be a JSON object"}
		}
		return &ConfigError{Key: te.Field, Offset: te.Offset, Rule: "must be " + te.Type.String()}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &ConfigError{Offset: -1, Rule: "invalid JSON: it ends too early"}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &ConfigError{Offset: se.Offset, Rule: fmt.Sprintf("invalid JSON: %v", se)}
	}
	return err // unknown keys: checkConfigJSON names them first
}

// mcpServersShapes says what config mcpServers may look like.
const mcpServersShapes = `must be an object of servers by name, {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}, ` +
	`or the ACP array, [{"name": "fs", "command": "npx", "args": [...], "env": []}]`

// DefaultServers returns config mcpServers as specs, sorted by name.
// mcpServers is either the Claude Desktop object, whose entries are
// {command, args, env} for stdio or {type: "http"|"sse", url, headers} with
// env and headers as objects of strings, or the ACP array of session/new
// (acp.ParseMCPServers: {name, command, args, env: [{name, value}]} or
// {type, name, url, headers: [{name, value}]}); both give the same specs.
// The JSON shape is checked here, the rules by bridge.ServerSpec.Validate;
// errors are *ConfigError naming the key ("mcpServers.fs.command",
// "mcpServers[0].command").
func (c *Config) DefaultServers() ([]bridge.ServerSpec, error) {
	raw := bytes.TrimSpace(c.MCPServers)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '[':
		return arrayServers(raw)
	case '{':
	default:
		return nil, &ConfigError{Key: "mcpServers", Offset: -1, Rule: mcpServersShapes}
	}
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil {
		return nil, &ConfigError{Key: "mcpServers", Offset: -1, Rule: mcpServersShapes}
	}
	names := slices.Sorted(maps.Keys(byName))
	specs := make([]bridge.ServerSpec, 0, len(names))
	for _, name := range names {
		spec, err := parseDefaultServer(name, byName[name])
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// arrayServers reads the ACP array shape of config mcpServers. Only the
// transports a config server can have (stdio, http, sse) are accepted.
func arrayServers(raw []byte) ([]bridge.ServerSpec, error) {
	specs, err := acp.ParseMCPServers(raw)
	var me *acp.MCPServersError
	if errors.As(err, &me) {
		key, rule := "mcpServers", me.Rule
		if me.Index >= 0 {
			key = fmt.Sprintf("mcpServers[%d]", me.Index)
		} else {
			rule = mcpServersShapes
		}
		if me.Field != "" {
			key += "." + me.Field
		}
		return nil, &ConfigError{Key: key, Offset: -1, Rule: rule}
	}
	if err != nil {
		return nil, &ConfigError{Key: "mcpServers", Offset: -1, Rule: err.Error()}
	}
	for i, s := range specs {
		switch s.Transport {
		case bridge.TransportStdio, bridge.TransportHTTP, bridge.TransportSSE:
		default:
			return nil, &ConfigError{Key: fmt.Sprintf("mcpServers[%d].type", i), Offset: -1,
				Rule: fmt.Sprintf(`%q is not a transport a config server can have (want "stdio", "http" or "sse")`, s.Transport)}
		}
	}
	slices.SortStableFunc(specs, func(a, b bridge.ServerSpec) int { return strings.Compare(a.Name, b.Name) })
	return specs, nil
}

// parseDefaultServer reads the entry of server name in the object shape
// (bridge.ParseServerEntry), its errors a *ConfigError naming the key.
func parseDefaultServer(name string, raw json.RawMessage) (bridge.ServerSpec, error) {
	key := "mcpServers." + name
	if err := bridge.ValidateServerName(name); err != nil {
		// The key is the name, and the entry's other errors quote it.
		return bridge.ServerSpec{}, &ConfigError{Key: key, Offset: -1, Rule: "server name: " + err.Error()}
	}
	spec, err := bridge.ParseServerEntry(name, raw)
	var se *bridge.SpecError
	switch {
	case errors.As(err, &se):
		if se.Field != "" {
			key += "." + se.Field
		}
		return bridge.ServerSpec{}, &ConfigError{Key: key, Offset: -1, Rule: se.Rule}
	case err != nil:
		return bridge.ServerSpec{}, &ConfigError{Key: key, Offset: -1, Rule: err.Error()}
	}
	return spec, nil
}

// coreOptions turns the config into the session core's options, the part
// both front ends (ACP and mcp-server) share: default servers, per-server
// settings, in-process servers (built-in tools) and the bridge template,
// with the managed policy (Config.managed) as its Admit. The caller sets
// Name, Version, Gateway, Store, History and Logger.
func (c *Config) coreOptions() (session.CoreOptions, error) {
	defaults, err := c.DefaultServers()
	if err != nil {
		return session.CoreOptions{}, err
	}
	settings := make(map[string]session.ServerSettings, len(c.Servers))
	for name, s := range c.Servers {
		client, err := s.OAuth.client(name)
		if err != nil {
			return session.CoreOptions{}, err
		}
		if err := s.Sandbox.Validate(); err != nil {
			return session.CoreOptions{}, fmt.Errorf("config servers.%s.sandbox.%w", name, err)
		}
		settings[name] = session.ServerSettings{Timeouts: s.Timeouts.bridge(), CallsPerMinute: s.CallsPerMinute, OAuth: client, Sandbox: s.Sandbox}
	}
	if u := c.OAuth.ClientIDMetadataDocument; u != "" {
		if pu, err := url.Parse(u); err != nil || pu.Scheme != "https" || pu.Path == "" || pu.Path == "/" {
			return session.CoreOptions{}, fmt.Errorf("config oauth.clientIdMetadataDocument: %q is not an https URL with a path", u)
		}
	}
	mode, err := c.Sandbox.mode()
	if err != nil {
		return session.CoreOptions{}, err
	}
	return session.CoreOptions{
		InProcess:      c.Tools.inProcess(false),
		DefaultMode:    mode,
		DefaultServers: defaults,
		ServerSettings: settings,
		LookupEnv:      c.lookupEnv,
		Bridge: bridge.Options{
			Timeouts: c.Timeouts.bridge(),
			Grace:    time.Duration(c.Timeouts.Grace),
			Env:      &environ.Policy{Allow: c.Sandbox.AllowEnv},
			Confine:  &bridge.Confine{Require: c.Sandbox.Require},
			URLs: &urlpolicy.Policy{
				AllowPrivateNetworks: c.Sandbox.AllowPrivateNetworks,
				AllowHosts:           c.Sandbox.AllowHosts,
				DenyHosts:            c.Sandbox.DenyHosts,
			},
			Limits: quota.Limits{
				ServersPerSession: c.Limits.ServersPerSession,
				ToolsPerSession:   c.toolsPerSession(),
				MaxResultText:     c.Limits.MaxResultBytes,
				MaxMedia:          c.Limits.MaxMediaBytes,
			},
			CallsPerMinute: c.Limits.CallsPerMinute,
			Admit:          admit(c.managed),
			// The caller sets Store.
			OAuth: &bridge.OAuth{ClientIDMetadataURL: c.OAuth.ClientIDMetadataDocument, Timeout: time.Duration(c.OAuth.Timeout)},
		},
	}, nil
}
