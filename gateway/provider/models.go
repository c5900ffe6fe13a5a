package provider

import (
	"strings"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// ModelSpec is what is known of a model: its context window in tokens and
// its price (nil when unknown).
type ModelSpec struct {
	ContextWindow int64
	Pricing       *gateway.Pricing
}

// knownModels are the context windows and list prices (USD per million
// tokens) of the default and common models, by model name prefix, from the
// providers' model and pricing pages
// (https://docs.anthropic.com/en/docs/about-claude/models/overview,
// https://docs.anthropic.com/en/docs/about-claude/pricing,
// https://platform.openai.com/docs/models, https://openai.com/api/pricing,
// https://ai.google.dev/gemini-api/docs/models,
// https://ai.google.dev/gemini-api/docs/pricing). Anthropic's cache writes
// are 1.25× input (5-minute cache) and reads 0.1×; OpenAI's cached input has
// its own price and no write charge; Gemini's implicitly cached input has
// its own price, and its Pro prices are those of prompts up to 200,000
// tokens (longer ones cost more). A nil Pricing is a model whose price is
// not known here. The config file's model.contextWindow and model.pricing
// override them.
var knownModels = []struct {
	prefix string
	spec   ModelSpec
}{
	{"claude-opus-4-5", ModelSpec{200_000, &gateway.Pricing{Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25}}},
	{"claude-opus-4", ModelSpec{200_000, &gateway.Pricing{Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75}}},
	{"claude-sonnet-4", ModelSpec{200_000, &gateway.Pricing{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}}},
	{"claude-3-7-sonnet", ModelSpec{200_000, &gateway.Pricing{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}}},
	{"claude-haiku-4-5", ModelSpec{200_000, &gateway.Pricing{Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25}}},
	{"claude-3-5-haiku", ModelSpec{200_000, &gateway.Pricing{Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1}}},
	{"gpt-4.1-nano", ModelSpec{1_047_576, &gateway.Pricing{Input: 0.1, Output: 0.4, CacheRead: 0.025}}},
	{"gpt-4.1-mini", ModelSpec{1_047_576, &gateway.Pricing{Input: 0.4, Output: 1.6, CacheRead: 0.1}}},
	{"gpt-4.1", ModelSpec{1_047_576, &gateway.Pricing{Input: 2, Output: 8, CacheRead: 0.5}}},
	{"gpt-4o-mini", ModelSpec{128_000, &gateway.Pricing{Input: 0.15, Output: 0.6, CacheRead: 0.075}}},
	{"gpt-4o", ModelSpec{128_000, &gateway.Pricing{Input: 2.5, Output: 10, CacheRead: 1.25}}},
	{"gpt-5-nano", ModelSpec{400_000, &gateway.Pricing{Input: 0.05, Output: 0.4, CacheRead: 0.005}}},
	{"gpt-5-mini", ModelSpec{400_000, &gateway.Pricing{Input: 0.25, Output: 2, CacheRead: 0.025}}},
	{"gpt-5", ModelSpec{400_000, &gateway.Pricing{Input: 1.25, Output: 10, CacheRead: 0.125}}},
	{"o4-mini", ModelSpec{200_000, &gateway.Pricing{Input: 1.1, Output: 4.4, CacheRead: 0.275}}},
	{"o3", ModelSpec{200_000, &gateway.Pricing{Input: 2, Output: 8, CacheRead: 0.5}}},
	{"gemini-3-pro", ModelSpec{1_048_576, &gateway.Pricing{Input: 2, Output: 12, CacheRead: 0.2}}},
	{"gemini-3-flash", ModelSpec{1_048_576, nil}},
	{"gemini-2.5-pro", ModelSpec{1_048_576, &gateway.Pricing{Input: 1.25, Output: 10, CacheRead: 0.125}}},
	{"gemini-2.5-flash", ModelSpec{1_048_576, &gateway.Pricing{Input: 0.3, Output: 2.5, CacheRead: 0.03}}},
	{"gemini-2.5-flash-lite", ModelSpec{1_048_576, &gateway.Pricing{Input: 0.1, Output: 0.4, CacheRead: 0.01}}},
	{"gemini-2.0-flash", ModelSpec{1_048_576, &gateway.Pricing{Input: 0.1, Output: 0.4, CacheRead: 0.025}}},
	{"gemini-2.0-flash-lite", ModelSpec{1_048_576, &gateway.Pricing{Input: 0.075, Output: 0.3}}},
}

// KnownModel returns what is known of the model named name (a name such as
// "claude-sonnet-4-5" or "claude-sonnet-4-5-20250929": the longest known
// prefix that ends at a word boundary wins), and whether it is known. The
// returned Pricing is a copy, or nil when the price is not known.
func KnownModel(name string) (ModelSpec, bool) {
	best := -1
	for i, k := range knownModels {
		rest, ok := strings.CutPrefix(name, k.prefix)
		if !ok || (rest != "" && rest[0] != '-') {
			continue
		}
		if best < 0 || len(k.prefix) > len(knownModels[best].prefix) {
			best = i
		}
	}
	if best < 0 {
		return ModelSpec{}, false
	}
	spec := knownModels[best].spec
	if spec.Pricing != nil {
		p := *spec.Pricing
		spec.Pricing = &p
	}
	return spec, true
}
