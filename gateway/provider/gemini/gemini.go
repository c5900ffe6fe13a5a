package gemini

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
)

// Capabilities are what the Gemini API accepts: images of the types it
// reads (https://ai.google.dev/gemini-api/docs/image-understanding) in a
// tool result's turn, and "required" only as a list.
var Capabilities = provider.Capabilities{
	ToolResultImages: map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true, "image/heic": true, "image/heif": true},
	RequiredAsList:   true,
}

// DefaultKeyEnv is the environment variable of the API key unless
// Options.APIKeyEnv names another; GOOGLE_API_KEY is the other name the
// Gemini documentation gives (cmd/acp-agent reads either).
const DefaultKeyEnv = "GEMINI_API_KEY"

// DefaultHost is the host of the Gemini API, named when it cannot be
// reached.
const DefaultHost = "generativelanguage.googleapis.com"

// Provider is the Gemini API provider
// (https://ai.google.dev/api/generate-content), streaming
// streamGenerateContent (Server-Sent Events) through the official Go SDK.
// Thought summaries stream as EventThoughtDelta; a response's thought
// signature is kept on the message (ThinkingSignature, prefixed
// "gemini:") and sent back on its first function call, as Gemini 3
// requires. Safe for concurrent use.
type Provider struct {
	opts provider.Options
}

var _ gateway.Thinker = (*Provider)(nil)

// New returns a Gemini provider. o may be nil (every default); it is
// copied. Nothing is sent until Complete.
func New(o *provider.Options) *Provider {
	return &Provider{opts: provider.WithDefaults(o, DefaultKeyEnv)}
}

// Name implements [gateway.Provider].
func (g *Provider) Name() string { return "gemini" }

// ThinksByDefault implements [gateway.Thinker]: Gemini 2.5 and later
// models think unless told not to.
func (g *Provider) ThinksByDefault() bool { return true }

// client returns an SDK client for one request with key. The SDK takes
// the key when the client is made, and a client is cheap (no I/O), so a
// key stored by "acp-agent login" meanwhile is used at once.
func (g *Provider) client(ctx context.Context, key string, purpose string) (*genai.Client, error) {
	cc := &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI, HTTPClient: g.opts.HTTPClient}
	cc.HTTPOptions.BaseURL = g.opts.BaseURL
	if purpose != "" {
		cc.HTTPOptions.Headers = http.Header{gateway.PurposeHeader: {purpose}}
	}
	attempts := int32(3) // the SDK's own default is no retry
	switch {
	case g.opts.MaxRetries < 0:
		attempts = 1
	case g.opts.MaxRetries > 0:
		attempts = int32(g.opts.MaxRetries) + 1
	}
	cc.HTTPOptions.RetryOptions = &genai.HTTPRetryOptions{Attempts: &attempts}
	return genai.NewClient(ctx, cc)
}

// thinking is the thinking configuration of req: thought summaries
// included unless req turns thinking off, with Options.ThinkingBudget when
// set. Off asks for no thinking budget where a model allows it (the
// Gemini 2.5 Flash models); others think anyway, unseen.
func (g *Provider) thinking(req *gateway.Request) *genai.ThinkingConfig {
	if req.Thinking != nil && !*req.Thinking {
		tc := &genai.ThinkingConfig{}
		if strings.HasPrefix(g.opts.Model, "gemini-2.5-flash") {
			tc.ThinkingBudget = genai.Ptr[int32](0)
		}
		return tc
	}
	tc := &genai.ThinkingConfig{IncludeThoughts: true}
	if g.opts.ThinkingBudget > 0 {
		tc.ThinkingBudget = genai.Ptr(int32(g.opts.ThinkingBudget))
	}
	return tc
}

// Complete implements [gateway.Provider]: one streamed generateContent
// request.
func (g *Provider) Complete(ctx context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
	key := g.opts.Key()
	if key == "" {
		return nil, provider.MissingKeyError("gemini", g.opts.APIKeyEnv)
	}
	client, err := g.client(ctx, key, req.Purpose)
	if err != nil {
		return nil, &provider.Error{Provider: "gemini", Err: err}
	}
	maxTokens := g.opts.MaxTokens
	if req.MaxTokens > 0 && req.MaxTokens < maxTokens {
		maxTokens = req.MaxTokens
	}
	cfg := &genai.GenerateContentConfig{
		MaxOutputTokens: int32(min(maxTokens, 1<<31-1)),
		ThinkingConfig:  g.thinking(req),
		Tools:           g.tools(req.Tools),
		// A cut stream is the runner's to report, not to resume silently.
		AutomaticContinuation: genai.Ptr(false),
	}
	if req.System != "" {
		cfg.SystemInstruction = genai.NewContentFromText(req.System, genai.RoleUser)
	}
	var acc accumulator
	for chunk, err := range client.Models.GenerateContentStream(ctx, g.opts.Model, contents(req.Messages), cfg) {
		if err != nil {
			resp := acc.response()
			if ctx.Err() != nil {
				return resp, ctx.Err()
			}
			return nil, g.describe(err)
		}
		acc.add(chunk, emit)
	}
	if ctx.Err() != nil {
		return acc.response(), ctx.Err()
	}
	return acc.response(), nil
}

// accumulator gathers a stream's chunks into one response.
type accumulator struct {
	text, thinking string
	signature      []byte // the first thought signature of a function call, else the last seen
	callSigned     bool   // signature is a function call's
	calls          []gateway.ToolCall
	finish         genai.FinishReason
	blocked        bool
	usage          *genai.GenerateContentResponseUsageMetadata
}

// add reads one chunk, emitting its text and thought deltas.
func (a *accumulator) add(chunk *genai.GenerateContentResponse, emit func(gateway.Event)) {
	if chunk.UsageMetadata != nil {
		a.usage = chunk.UsageMetadata // cumulative: the last one is the request's
	}
	if chunk.PromptFeedback != nil && chunk.PromptFeedback.BlockReason != "" {
		a.blocked = true
	}
	if len(chunk.Candidates) == 0 {
		return
	}
	c := chunk.Candidates[0]
	if c.FinishReason != "" {
		a.finish = c.FinishReason
	}
	if c.Content == nil {
		return
	}
	for _, p := range c.Content.Parts {
		if p == nil {
			continue
		}
		if len(p.ThoughtSignature) > 0 && !a.callSigned {
			a.signature = p.ThoughtSignature
			a.callSigned = p.FunctionCall != nil
		}
		switch {
		case p.FunctionCall != nil:
			args := p.FunctionCall.Args
			if args == nil {
				args = map[string]any{}
			}
			a.calls = append(a.calls, gateway.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: args})
		case p.Thought && p.Text != "":
			a.thinking += p.Text
			emit(gateway.Event{Kind: gateway.EventThoughtDelta, Text: p.Text})
		case p.Text != "":
			a.text += p.Text
			emit(gateway.Event{Kind: gateway.EventTextDelta, Text: p.Text})
		}
	}
}

// signaturePrefix marks a Gemini thought signature in
// Message.ThinkingSignature, so that no other provider's is sent back.
const signaturePrefix = "gemini:"

// response is the accumulated response.
func (a *accumulator) response() *gateway.Response {
	out := &gateway.Response{}
	out.Message.Role = gateway.RoleAssistant
	out.Message.Thinking = a.thinking
	if len(a.signature) > 0 {
		out.Message.ThinkingSignature = signaturePrefix + base64.StdEncoding.EncodeToString(a.signature)
	}
	if a.text != "" {
		out.Message.Content = []gateway.Content{gateway.TextContent(a.text)}
	}
	out.Message.ToolCalls = a.calls
	switch a.finish {
	case genai.FinishReasonMaxTokens:
		out.StopReason = gateway.StopMaxTokens
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety:
		out.StopReason = gateway.StopRefusal
	}
	if a.blocked {
		out.StopReason = gateway.StopRefusal
	}
	if u := a.usage; u != nil {
		prompt := int64(u.PromptTokenCount) + int64(u.ToolUsePromptTokenCount)
		cached := min(int64(u.CachedContentTokenCount), prompt)
		out.Usage = gateway.Usage{
			InputTokens:     prompt - cached,
			CacheReadTokens: cached,
			// Thoughts are billed as output; candidates exclude them.
			OutputTokens:  int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
			ThoughtTokens: int64(u.ThoughtsTokenCount),
			Requests:      1,
		}
	}
	return out
}

// tooLong matches Gemini's refusal of a prompt over the window: "The input
// token count (N) exceeds the maximum number of tokens allowed (M)."
var tooLong = regexp.MustCompile(`exceeds the maximum number of tokens allowed \((\d+)\)`)

// describe turns an SDK error into a [provider.Error].
func (g *Provider) describe(err error) error {
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) {
		return provider.NewRequestError("gemini", g.opts.BaseURL, DefaultHost, g.opts.APIKeyEnv, err)
	}
	pe := provider.NewError("gemini", apiErr.Code, apiErr.Message, g.opts.APIKeyEnv, err)
	if m := tooLong.FindStringSubmatch(apiErr.Message); m != nil && apiErr.Code == http.StatusBadRequest {
		pe.TooLong = true
		pe.Limit, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if keyInvalid(apiErr) {
		// Gemini refuses a bad key with 400 INVALID_ARGUMENT, reason
		// API_KEY_INVALID, not 401.
		pe.Hint = provider.NewError("gemini", http.StatusUnauthorized, "", g.opts.APIKeyEnv, nil).Hint
	}
	return pe
}

// keyInvalid reports whether e refuses the API key.
func keyInvalid(e genai.APIError) bool {
	for _, d := range e.Details {
		if r, _ := d["reason"].(string); r == "API_KEY_INVALID" {
			return true
		}
	}
	return strings.Contains(e.Message, "API key not valid")
}

// CheckKey checks opts.APIKey with one cheap request (list one model): nil
// if the API accepts it, a *provider.Error otherwise: Status 401 for a
// refused key (Gemini answers 400 API_KEY_INVALID; the Status says what
// "acp-agent login" tests for), Status 0 when the API cannot be reached.
func CheckKey(ctx context.Context, opts provider.Options) error {
	opts.MaxRetries = -1
	g := New(&opts)
	if opts.APIKey == "" {
		return provider.MissingKeyError("gemini", g.opts.APIKeyEnv)
	}
	client, err := g.client(ctx, opts.APIKey, "")
	if err != nil {
		return &provider.Error{Provider: "gemini", Err: err}
	}
	if _, err := client.Models.List(ctx, &genai.ListModelsConfig{PageSize: 1}); err != nil {
		err = g.describe(err)
		var apiErr genai.APIError
		if pe := (*provider.Error)(nil); errors.As(err, &pe) && errors.As(err, &apiErr) && keyInvalid(apiErr) {
			pe.Status = http.StatusUnauthorized
		}
		return err
	}
	return nil
}
