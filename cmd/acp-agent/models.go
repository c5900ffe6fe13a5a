package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/anthropic"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// ModelConfig is config "model": the model sessions use by default.
type ModelConfig struct {
	// Provider is "anthropic" or "openai" (any OpenAI-compatible endpoint).
	Provider string `json:"provider"`
	// Name is the model name, such as "claude-sonnet-4-5" or "llama3.1".
	Name string `json:"name"`
	// BaseURL overrides the provider's API URL (Ollama:
	// "http://127.0.0.1:11434/v1"). For openai, OPENAI_BASE_URL is the
	// fallback.
	BaseURL string `json:"baseURL"`
	// APIKeyEnv names the environment variable holding the API key; default
	// ANTHROPIC_API_KEY or OPENAI_API_KEY.
	APIKeyEnv string `json:"apiKeyEnv"`
	// MaxTokens caps one response; default 8192.
	MaxTokens int64 `json:"maxTokens"`
	// ThinkingBudget turns on Anthropic extended thinking with this many
	// tokens (at least 1024); 0 leaves it off.
	ThinkingBudget int64 `json:"thinkingBudget"`
}

// Default model names when a provider is chosen by its API key alone.
const (
	defaultAnthropicModel = "claude-sonnet-4-5"
	defaultOpenAIModel    = "gpt-4.1"
)

// parseModelFlag reads --model "provider:name", or "direct".
func parseModelFlag(s string) (ModelConfig, error) {
	if s == runner.DirectModelID {
		return ModelConfig{Provider: runner.DirectModelID}, nil
	}
	provider, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return ModelConfig{}, fmt.Errorf("--model %q: want provider:name, such as anthropic:claude-sonnet-4-5 or openai:gpt-4.1", s)
	}
	return ModelConfig{Provider: provider, Name: name}, nil
}

// models builds the models sessions can choose from: the configured one
// (--model, else config "model"; "--model direct" makes the offline direct
// mode the default) first, then one per provider whose API key is in the
// environment (ANTHROPIC_API_KEY, OPENAI_API_KEY with OPENAI_BASE_URL). The
// runner adds the direct provider last; with nothing configured it is the
// default.
func models(primary *ModelConfig, getenv func(string) string, log *slog.Logger) ([]gateway.Model, error) {
	var out []gateway.Model
	seen := map[string]bool{}
	add := func(mc ModelConfig) error {
		m, err := buildModel(mc, getenv, log)
		if err != nil {
			return err
		}
		if !seen[m.ID] {
			seen[m.ID] = true
			out = append(out, m)
		}
		return nil
	}
	switch {
	case primary != nil && primary.Provider == runner.DirectModelID:
		seen[runner.DirectModelID] = true
		out = append(out, gateway.Model{ID: runner.DirectModelID, Label: "Direct (no model: slash commands)", Provider: runner.NewDirect()})
	case primary != nil && primary.Provider != "":
		if err := add(*primary); err != nil {
			return nil, err
		}
	}
	if getenv("ANTHROPIC_API_KEY") != "" {
		_ = add(ModelConfig{Provider: "anthropic", Name: defaultAnthropicModel})
	}
	if getenv("OPENAI_API_KEY") != "" {
		_ = add(ModelConfig{Provider: "openai", Name: defaultOpenAIModel})
	}
	return out, nil
}

func buildModel(mc ModelConfig, getenv func(string) string, log *slog.Logger) (gateway.Model, error) {
	if mc.Name == "" {
		return gateway.Model{}, fmt.Errorf("model: name is empty")
	}
	opts := provider.Options{Model: mc.Name, APIKeyEnv: mc.APIKeyEnv, BaseURL: mc.BaseURL, MaxTokens: mc.MaxTokens, ThinkingBudget: mc.ThinkingBudget, Logger: log}
	id := mc.Provider + ":" + mc.Name
	switch mc.Provider {
	case "anthropic":
		if opts.APIKeyEnv == "" {
			opts.APIKeyEnv = "ANTHROPIC_API_KEY"
		}
		opts.APIKey = getenv(opts.APIKeyEnv)
		return gateway.Model{ID: id, Label: mc.Name + " (Anthropic)", Provider: anthropic.New(opts)}, nil
	case "openai":
		if opts.APIKeyEnv == "" {
			opts.APIKeyEnv = "OPENAI_API_KEY"
		}
		opts.APIKey = getenv(opts.APIKeyEnv)
		if opts.BaseURL == "" {
			opts.BaseURL = getenv("OPENAI_BASE_URL")
		}
		label := mc.Name + " (OpenAI)"
		if opts.BaseURL != "" {
			label = mc.Name + " (" + opts.BaseURL + ")"
		}
		return gateway.Model{ID: id, Label: label, Provider: openai.New(opts)}, nil
	}
	return gateway.Model{}, fmt.Errorf("model: provider %q: want anthropic or openai", mc.Provider)
}
