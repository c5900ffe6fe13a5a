package main

import (
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func ids(t *testing.T, primary *ModelConfig, vars map[string]string) string {
	t.Helper()
	ms, err := models(primary, env(vars), nil)
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
	if _, err := models(&ModelConfig{Provider: "gemini", Name: "x"}, env(nil), nil); err == nil || !strings.Contains(err.Error(), `provider "gemini"`) {
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
		`{"model": {"provider": "gemini", "name": "x"}}`: `key "model.provider"`,
		`{"model": {"provider": "openai"}}`:              `key "model.name"`,
		`{"permissions": {"mode": "maybe"}}`:             `permissions.mode "maybe"`,
		`{"permissions": {"allow": ["[bad"]}}`:           `glob "[bad"`,
	} {
		if err := parseConfig([]byte(json), &Config{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", json, err, want)
		}
	}
}
