package provider

import (
	"log/slog"
	"net/http"
)

// DefaultMaxTokens is the default output token limit of a model request.
const DefaultMaxTokens = 8192

// DefaultThinkingBudget is the extended thinking budget, in tokens, of a
// request that turns thinking on (gateway.Request.Thinking) when
// Options.ThinkingBudget is zero.
const DefaultThinkingBudget = 4096

// Options configure a model provider (Anthropic or OpenAI-compatible).
type Options struct {
	// Model is the model name, such as "claude-sonnet-4-5" or "gpt-4.1".
	Model string
	// APIKey authenticates the requests; APIKeyEnv names the environment
	// variable it came from, for error messages.
	APIKey, APIKeyEnv string
	// APIKeyFunc, if set, is called before each request; a non-empty result
	// replaces APIKey for that request (a key stored by "acp-agent login"
	// after the provider was built). It must be safe for concurrent use.
	APIKeyFunc func() string
	// BaseURL overrides the API's base URL ("" means the provider's own).
	BaseURL string
	// API selects the wire API of a provider that speaks several. OpenAI:
	// "responses" (the Responses API) or "chat" (Chat Completions); ""
	// means responses on OpenAI's own API (no BaseURL, or one on
	// api.openai.com) and chat on any other base URL. Others ignore it.
	API string
	// NoImages says the model sees no images (a text-only model behind an
	// OpenAI-compatible server): an image in a prompt or a tool result
	// reaches it as a note with its type and size. Only the OpenAI
	// provider reads it.
	NoImages bool
	// MaxTokens caps the output of one request; zero means DefaultMaxTokens.
	MaxTokens int64
	// ThinkingBudget, if positive, turns on Anthropic extended thinking with
	// this many tokens (at least 1024, less than MaxTokens); thoughts stream
	// as EventThoughtDelta. Ignored by OpenAI-compatible providers, whose
	// reasoning deltas stream whenever the server sends them.
	ThinkingBudget int64
	// MaxRetries is the SDK's retry count for 408, 409, 429 and 5xx, with
	// its own backoff; zero means 2, negative means none.
	MaxRetries int
	// HTTPClient, if set, carries the requests (tests).
	HTTPClient *http.Client
	// Logger receives the provider's warnings. Nil discards them.
	Logger *slog.Logger
}

// Key returns the API key of the next request: APIKeyFunc's result if it is
// not empty, else APIKey.
func (o *Options) Key() string {
	if o.APIKeyFunc != nil {
		if k := o.APIKeyFunc(); k != "" {
			return k
		}
	}
	return o.APIKey
}

// WithDefaults returns a copy of o (nil: the zero Options) with the
// defaults every provider's New applies: MaxTokens DefaultMaxTokens when
// zero or negative, APIKeyEnv keyEnv (the provider's own variable, such as
// "ANTHROPIC_API_KEY") when empty, and a Logger that discards when nil. A
// provider's own defaults (Anthropic's room for ThinkingBudget, OpenAI's
// API) come after it. o is not changed.
func WithDefaults(o *Options, keyEnv string) Options {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	if opts.APIKeyEnv == "" {
		opts.APIKeyEnv = keyEnv
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return opts
}
