package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/anthropic"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/gemini"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// ModelConfig is config "model": the model sessions use by default.
type ModelConfig struct {
	// Provider is "anthropic", "openai" (any OpenAI-compatible endpoint) or
	// "gemini".
	Provider string `json:"provider"`
	// Name is the model name, such as "claude-sonnet-4-5" or "llama3.1".
	Name string `json:"name"`
	// BaseURL overrides the provider's API URL (Ollama:
	// "http://127.0.0.1:11434/v1"). For openai, OPENAI_BASE_URL is the
	// fallback.
	BaseURL string `json:"baseURL"`
	// APIKeyEnv names the environment variable holding the API key; default
	// ANTHROPIC_API_KEY, OPENAI_API_KEY, or GEMINI_API_KEY (else
	// GOOGLE_API_KEY).
	APIKeyEnv string `json:"apiKeyEnv"`
	// MaxTokens caps one response; default 8192.
	MaxTokens int64 `json:"maxTokens"`
	// ThinkingBudget turns on Anthropic extended thinking with this many
	// tokens (at least 1024); 0 leaves it off.
	ThinkingBudget int64 `json:"thinkingBudget"`
	// API is OpenAI's wire API: "responses" or "chat"; "" means responses
	// on OpenAI's own endpoint and chat on any other base URL.
	API string `json:"api"`
	// Images false says the model sees no images: they reach it as notes
	// (OpenAI). Nil or true: images are sent.
	Images *bool `json:"images"`
	// ContextWindow is the model's context window in tokens; 0 means the
	// known window of the model name (provider.KnownModel), or unknown.
	ContextWindow int64 `json:"contextWindow"`
	// Pricing is the model's price in USD per million tokens; nil means
	// the known price of the model name, or none (no cost is reported).
	Pricing *gateway.Pricing `json:"pricing"`
}

// modelProvider is one model provider acp-agent can use. providers lists
// them; config validation, --model and discovery from the environment all
// read that table, so adding a provider is one entry there (and its package
// under gateway/provider).
type modelProvider struct {
	// id names the provider in --model "id:name", config model.provider and
	// the model ID.
	id string
	// label follows the model name in the model's label: "gpt-4.1 (OpenAI)".
	label string
	// keyEnv is the environment variable of the API key, unless config
	// model.apiKeyEnv names another. When it is set, discovery offers
	// defaultModel.
	keyEnv string
	// altKeyEnv, if set, is read when keyEnv is empty (Gemini's
	// GOOGLE_API_KEY beside GEMINI_API_KEY); messages name keyEnv.
	altKeyEnv string
	// baseURLEnv, if set, is the variable the base URL comes from when config
	// model.baseURL is empty; the provider then serves many endpoints, so a
	// set base URL replaces label.
	baseURLEnv string
	// defaultModel is the model discovery offers, such as "gpt-4.1".
	defaultModel string
	// new returns the provider for opts.
	new func(opts provider.Options) gateway.Provider
	// checkKey checks opts.APIKey with one cheap request ("acp-agent
	// login"); a *provider.Error tells why it failed.
	checkKey func(ctx context.Context, opts provider.Options) error
}

// providers are the model providers, in the order discovery offers them.
var providers = []modelProvider{
	{id: "anthropic", label: "Anthropic", keyEnv: "ANTHROPIC_API_KEY", defaultModel: "claude-sonnet-4-5",
		new: func(o provider.Options) gateway.Provider { return anthropic.New(&o) }, checkKey: anthropic.CheckKey},
	{id: "openai", label: "OpenAI", keyEnv: "OPENAI_API_KEY", baseURLEnv: "OPENAI_BASE_URL", defaultModel: "gpt-4.1",
		new: func(o provider.Options) gateway.Provider { return openai.New(&o) }, checkKey: openai.CheckKey},
	{id: "gemini", label: "Gemini", keyEnv: "GEMINI_API_KEY", altKeyEnv: "GOOGLE_API_KEY", defaultModel: "gemini-2.5-flash",
		new: func(o provider.Options) gateway.Provider { return gemini.New(&o) }, checkKey: gemini.CheckKey},
}

// envKey returns the provider's API key in the environment and the
// variable it is in: keyEnv, else altKeyEnv; ("", keyEnv) when neither is
// set.
func (p modelProvider) envKey(getenv func(string) string) (key, name string) {
	for _, name := range []string{p.keyEnv, p.altKeyEnv} {
		if name != "" {
			if key := getenv(name); key != "" {
				return key, name
			}
		}
	}
	return "", p.keyEnv
}

// lookupProvider returns the provider with id.
func lookupProvider(id string) (modelProvider, bool) {
	for _, p := range providers {
		if p.id == id {
			return p, true
		}
	}
	return modelProvider{}, false
}

// providerIDs lists the provider IDs for messages: "anthropic, openai or
// gemini".
func providerIDs() string {
	return orList(eachProvider(func(p modelProvider) string { return p.id }))
}

// modelExamples lists each provider's default model as --model takes it,
// such as "openai:gpt-4.1".
func modelExamples() []string {
	return eachProvider(func(p modelProvider) string { return p.id + ":" + p.defaultModel })
}

func eachProvider(f func(modelProvider) string) []string {
	s := make([]string, len(providers))
	for i, p := range providers {
		s[i] = f(p)
	}
	return s
}

// orList joins s as "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// parseModelFlag reads --model "provider:name", or "direct".
func parseModelFlag(s string) (ModelConfig, error) {
	if s == runner.DirectModelID {
		return ModelConfig{Provider: runner.DirectModelID}, nil
	}
	id, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return ModelConfig{}, fmt.Errorf("--model %q: want provider:name, such as %s", s, orList(modelExamples()))
	}
	return ModelConfig{Provider: id, Name: name}, nil
}

// models builds the models sessions can choose from: the configured one
// (--model, else config "model"; "--model direct" makes the offline direct
// mode the default) first, then one per provider whose API key is in the
// environment (providers: ANTHROPIC_API_KEY, OPENAI_API_KEY with
// OPENAI_BASE_URL, GEMINI_API_KEY or GOOGLE_API_KEY) or in creds (the file of "acp-agent login"; nil means
// none), with its default model. A key in the environment wins; a stored
// key is read at each request, so a login while the agent runs takes
// effect at once. The
// runner adds the direct provider last; with nothing configured it is the
// default.
func models(primary *ModelConfig, getenv func(string) string, creds *credentials, log *slog.Logger) ([]gateway.Model, error) {
	var out []gateway.Model
	seen := map[string]bool{}
	add := func(mc ModelConfig) error {
		m, err := buildModel(mc, getenv, creds, log)
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
	for _, p := range providers {
		if key, _ := p.envKey(getenv); key != "" || creds.key(p.id) != "" {
			_ = add(ModelConfig{Provider: p.id, Name: p.defaultModel})
		}
	}
	return out, nil
}

func buildModel(mc ModelConfig, getenv func(string) string, creds *credentials, log *slog.Logger) (gateway.Model, error) {
	if mc.Name == "" {
		return gateway.Model{}, fmt.Errorf("model: name is empty")
	}
	p, ok := lookupProvider(mc.Provider)
	if !ok {
		return gateway.Model{}, fmt.Errorf("model: provider %q: want %s", mc.Provider, providerIDs())
	}
	opts := provider.Options{Model: mc.Name, APIKeyEnv: mc.APIKeyEnv, BaseURL: mc.BaseURL, MaxTokens: mc.MaxTokens, ThinkingBudget: mc.ThinkingBudget, Logger: log,
		API: mc.API, NoImages: mc.Images != nil && !*mc.Images}
	if opts.APIKeyEnv == "" {
		opts.APIKey, opts.APIKeyEnv = p.envKey(getenv)
	} else {
		opts.APIKey = getenv(opts.APIKeyEnv)
	}
	if opts.APIKey == "" && creds != nil {
		opts.APIKeyFunc = func() string { return creds.key(p.id) }
	}
	label := mc.Name + " (" + p.label + ")"
	if p.baseURLEnv != "" {
		if opts.BaseURL == "" {
			opts.BaseURL = getenv(p.baseURLEnv)
		}
		if opts.BaseURL != "" {
			label = mc.Name + " (" + opts.BaseURL + ")"
		}
	}
	m := gateway.Model{ID: mc.Provider + ":" + mc.Name, Label: label, Provider: p.new(opts), ContextWindow: mc.ContextWindow, Pricing: mc.Pricing}
	if spec, ok := provider.KnownModel(mc.Name); ok {
		if m.ContextWindow == 0 {
			m.ContextWindow = spec.ContextWindow
		}
		if m.Pricing == nil {
			m.Pricing = spec.Pricing
		}
	}
	return m, nil
}

// missingKey returns what to do when mc, the configured model, has no API
// key, neither in the environment nor stored by "acp-agent login": a
// sentence naming the variable and the command. It is "" when a key is
// there, for an OpenAI-compatible base URL (Ollama and the like need none),
// for direct mode and for no model.
func missingKey(mc *ModelConfig, getenv func(string) string, creds *credentials) string {
	if mc == nil {
		return ""
	}
	p, ok := lookupProvider(mc.Provider)
	if !ok || p.baseURLEnv != "" && (mc.BaseURL != "" || getenv(p.baseURLEnv) != "") {
		return ""
	}
	key, keyEnv := p.envKey(getenv)
	if mc.APIKeyEnv != "" {
		key, keyEnv = getenv(mc.APIKeyEnv), mc.APIKeyEnv
	}
	if key != "" || creds.key(p.id) != "" {
		return ""
	}
	return fmt.Sprintf("The model %s:%s has no API key: set %s in the environment acp-agent starts with, or run %q to store one.",
		p.id, mc.Name, keyEnv, provider.LoginCommand)
}
