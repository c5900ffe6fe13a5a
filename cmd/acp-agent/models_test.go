package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func ids(t *testing.T, primary *ModelConfig, vars map[string]string) string {
	t.Helper()
	ms, err := models(primary, env(vars), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return strings.Join(out, ",")
}

func TestModels_Selection(t *testing.T) {
	if got := ids(t, nil, nil); got != "" {
		t.Errorf("nothing configured: %q, want none (the runner adds direct)", got)
	}
	if got := ids(t, nil, map[string]string{"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}); got != "anthropic:claude-sonnet-4-5,openai:gpt-4.1" {
		t.Errorf("from the environment: %q", got)
	}
	if got := ids(t, &ModelConfig{Provider: "openai", Name: "llama3.1", BaseURL: "http://127.0.0.1:11434/v1"}, map[string]string{"ANTHROPIC_API_KEY": "a"}); got != "openai:llama3.1,anthropic:claude-sonnet-4-5" {
		t.Errorf("configured first: %q", got)
	}
	if got := ids(t, &ModelConfig{Provider: "direct"}, map[string]string{"OPENAI_API_KEY": "o"}); got != "direct,openai:gpt-4.1" {
		t.Errorf("--model direct: %q", got)
	}
	if _, err := models(&ModelConfig{Provider: "mistral", Name: "x"}, env(nil), nil, nil); err == nil || !strings.Contains(err.Error(), `provider "mistral"`) {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestParseModelFlag(t *testing.T) {
	if mc, err := parseModelFlag("anthropic:claude-opus-4-1"); err != nil || mc.Provider != "anthropic" || mc.Name != "claude-opus-4-1" {
		t.Errorf("%+v %v", mc, err)
	}
	if mc, err := parseModelFlag("openai:qwen2.5:7b"); err != nil || mc.Name != "qwen2.5:7b" {
		t.Errorf("a name with a colon (Ollama tags): %+v %v", mc, err)
	}
	if _, err := parseModelFlag("gpt-4.1"); err == nil || !strings.Contains(err.Error(), "provider:name") {
		t.Errorf("no provider: %v", err)
	}
}

func TestParseConfig_ModelAndPermissions(t *testing.T) {
	cfg := &Config{}
	if err := parseConfig([]byte(`{"model": {"provider": "openai", "name": "llama3.1", "baseURL": "http://127.0.0.1:11434/v1", "apiKeyEnv": "OLLAMA_KEY", "maxTokens": 2048},
		"permissions": {"mode": "ask", "allow": ["mcp__fs__*"], "deny": ["mcp__github__delete_*"]}}`), cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Model.MaxTokens != 2048 || cfg.Permissions.gateway().Deny[0] != "mcp__github__delete_*" {
		t.Errorf("cfg = %+v", cfg)
	}
	for json, want := range map[string]string{
		`{"model": {"provider": "mistral", "name": "x"}}`: `key "model.provider"`,
		`{"model": {"provider": "openai"}}`:               `key "model.name"`,
		`{"permissions": {"mode": "maybe"}}`:              `permissions.mode "maybe"`,
		`{"permissions": {"allow": ["[bad"]}}`:            `glob "[bad"`,
	} {
		if err := parseConfig([]byte(json), &Config{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", json, err, want)
		}
	}
}

// A provider added to the table is known to config validation, --model and
// discovery from the environment, with no other change.
func TestProviders_OneTableDrivesEveryUse(t *testing.T) {
	saved := providers
	t.Cleanup(func() { providers = saved })
	var got provider.Options
	providers = append(slices.Clone(saved), modelProvider{id: "acme", label: "Acme", keyEnv: "ACME_API_KEY", defaultModel: "rocket-1",
		new: func(o provider.Options) gateway.Provider { got = o; return runner.NewDirect() }})

	ms, err := models(nil, env(map[string]string{"ACME_API_KEY": "k"}), nil, nil)
	if err != nil || len(ms) != 1 || ms[0].ID != "acme:rocket-1" || ms[0].Label != "rocket-1 (Acme)" {
		t.Fatalf("discovery = %+v, %v; want acme:rocket-1 labelled %q", ms, err, "rocket-1 (Acme)")
	}
	if got.APIKey != "k" || got.APIKeyEnv != "ACME_API_KEY" || got.Model != "rocket-1" {
		t.Errorf("options = %+v; want the key from ACME_API_KEY", got)
	}
	mc, err := parseModelFlag("acme:rocket-2")
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := models(&mc, env(nil), nil, nil); err != nil || len(ms) != 1 || ms[0].ID != "acme:rocket-2" {
		t.Errorf("--model acme:rocket-2 = %+v, %v", ms, err)
	}
	if _, err := parseModelFlag("rocket"); err == nil || !strings.Contains(err.Error(), "gemini:gemini-2.5-flash or acme:rocket-1") {
		t.Errorf("--model error = %v; want the table's examples", err)
	}
	var cfg Config
	if err := parseConfig([]byte(`{"model": {"provider": "acme", "name": "rocket-3"}}`), &cfg); err != nil {
		t.Errorf("config with provider acme: %v", err)
	}
	if err := parseConfig([]byte(`{"model": {"provider": "mistral", "name": "x"}}`), &cfg); err == nil || !strings.Contains(err.Error(), "anthropic, openai, gemini or acme") {
		t.Errorf("config with provider mistral: %v; want the table's providers", err)
	}
}

// The known models come with their window and prices; the config's
// contextWindow and pricing win; an unknown model has neither.
func TestModels_WindowAndPricing(t *testing.T) {
	ms, err := models(&ModelConfig{Provider: "openai", Name: "qwen2.5", BaseURL: "http://127.0.0.1:8000/v1", ContextWindow: 32768,
		Pricing: &gateway.Pricing{Input: 0.1, Output: 0.2}}, env(map[string]string{"ANTHROPIC_API_KEY": "a"}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := ms[0]; m.ContextWindow != 32768 || m.Pricing == nil || m.Pricing.Output != 0.2 {
		t.Errorf("configured: window %d, pricing %+v", m.ContextWindow, m.Pricing)
	}
	if m := ms[1]; m.ID != "anthropic:claude-sonnet-4-5" || m.ContextWindow != 200_000 || m.Pricing == nil || m.Pricing.Input != 3 || m.Pricing.CacheRead != 0.3 {
		t.Errorf("known: %s window %d, pricing %+v", m.ID, m.ContextWindow, m.Pricing)
	}
	ms, _ = models(&ModelConfig{Provider: "openai", Name: "llama3.1", BaseURL: "http://127.0.0.1:11434/v1"}, env(nil), nil, nil)
	if m := ms[0]; m.ContextWindow != 0 || m.Pricing != nil {
		t.Errorf("unknown: window %d, pricing %+v", m.ContextWindow, m.Pricing)
	}
	if spec, ok := provider.KnownModel("claude-sonnet-4-5-20250929"); !ok || spec.ContextWindow != 200_000 {
		t.Error("a dated model name is not matched to its model")
	}
	if _, ok := provider.KnownModel("gpt-4.10"); ok {
		t.Error("a prefix that is not a word boundary matched")
	}
}

// Tool search sets the default tool limit: 1,000 with it, 100 without.
func TestConfig_ToolsPerSessionFollowsToolSearch(t *testing.T) {
	for _, tt := range []struct {
		json string
		want int
	}{{`{}`, 1000}, {`{"context": {"toolSearch": "off"}}`, 100}, {`{"context": {"toolSearch": "off"}, "limits": {"toolsPerSession": 30}}`, 30}} {
		var c Config
		if err := parseConfig([]byte(tt.json), &c); err != nil {
			t.Fatal(err)
		}
		if got := c.toolsPerSession(); got != tt.want {
			t.Errorf("%s: %d tools per session, want %d", tt.json, got, tt.want)
		}
		if o := c.runnerOptions(nil, nil, nil); o.ToolSearch != runner.ToolSearch(c.Context.ToolSearch) {
			t.Errorf("%s: runner tool search %q", tt.json, o.ToolSearch)
		}
	}
}

// Gemini's key is GEMINI_API_KEY, else GOOGLE_API_KEY; its models come
// with their windows, and prices where known.
func TestModels_Gemini(t *testing.T) {
	for _, vars := range []map[string]string{{"GEMINI_API_KEY": "g"}, {"GOOGLE_API_KEY": "g"}} {
		if got := ids(t, nil, vars); got != "gemini:gemini-2.5-flash" {
			t.Errorf("%v: %q", vars, got)
		}
	}
	ms, err := models(&ModelConfig{Provider: "gemini", Name: "gemini-2.5-pro"}, env(map[string]string{"GOOGLE_API_KEY": "g"}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := ms[0]; m.ID != "gemini:gemini-2.5-pro" || m.Label != "gemini-2.5-pro (Gemini)" || m.ContextWindow != 1_048_576 || m.Pricing == nil || m.Pricing.Input != 1.25 {
		t.Errorf("gemini-2.5-pro: %s %q window %d pricing %+v", m.ID, m.Label, m.ContextWindow, m.Pricing)
	}
	if spec, ok := provider.KnownModel("gemini-2.5-flash-lite-preview-09-2025"); !ok || spec.Pricing == nil || spec.Pricing.Input != 0.1 {
		t.Errorf("flash-lite: %+v %v", spec, ok)
	}
	if spec, ok := provider.KnownModel("gemini-3-flash-preview"); !ok || spec.ContextWindow != 1_048_576 || spec.Pricing != nil {
		t.Errorf("a known window without a known price: %+v %v", spec, ok)
	}
	mc := &ModelConfig{Provider: "gemini", Name: "gemini-2.5-flash"}
	if got := missingKey(mc, env(nil), nil); !strings.Contains(got, "set GEMINI_API_KEY") {
		t.Errorf("no key: %q", got)
	}
	if got := missingKey(mc, env(map[string]string{"GOOGLE_API_KEY": "g"}), nil); got != "" {
		t.Errorf("GOOGLE_API_KEY set: %q", got)
	}
}
