package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
)

// Capabilities are what Chat Completions accepts: text-only tool
// results, and "required" only as an array. An image a tool returns goes in
// a user message right after the tool messages (see [Provider]).
var Capabilities = provider.Capabilities{RequiredAsList: true}

// ResponsesCapabilities are what the Responses API accepts: PNG, JPEG,
// GIF and WebP images inside a tool result (function_call_output), and
// "required" only as an array.
var ResponsesCapabilities = provider.Capabilities{RequiredAsList: true, ToolResultImages: imageTypes}

// imageTypes are the image types OpenAI's APIs take
// (https://platform.openai.com/docs/guides/images-vision).
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// The wire APIs of [provider.Options].API.
const (
	// APIResponses is the Responses API (POST /responses), the default on
	// OpenAI's own endpoint.
	APIResponses = "responses"
	// APIChat is Chat Completions (POST /chat/completions), the default
	// on any other base URL.
	APIChat = "chat"
)

// Provider is the OpenAI model provider, streaming through the official Go
// SDK over one of two APIs ([provider.Options].API). On OpenAI's own
// endpoint it speaks the Responses API
// (https://platform.openai.com/docs/api-reference/responses): tools as
// function tools, tool results as function_call_output with images beside
// the text, reasoning items kept with the assistant message
// ([gateway.Message].Replay) and sent back, prompt_cache_key per session.
// On any other base URL (Ollama, vLLM, llama.cpp server, OpenRouter) it
// speaks Chat Completions
// (https://platform.openai.com/docs/api-reference/chat): tool messages are
// text only, so the images of consecutive tool results follow them in one
// user message; reasoning deltas that compatible servers send as
// delta.reasoning_content or delta.reasoning become thoughts. With
// NoImages every image is a note. Safe for concurrent use.
type Provider struct {
	client openai.Client
	opts   provider.Options
	api    string // APIResponses or APIChat
}

var _ gateway.Provider = (*Provider)(nil)

// New returns an OpenAI-compatible provider. o may be nil (every default); it is
// copied.
func New(o *provider.Options) *Provider {
	opts := provider.WithDefaults(o, "OPENAI_API_KEY")
	ro := []oaioption.RequestOption{oaioption.WithAPIKey(opts.APIKey)}
	if opts.BaseURL != "" {
		ro = append(ro, oaioption.WithBaseURL(opts.BaseURL))
	}
	switch {
	case opts.MaxRetries < 0:
		ro = append(ro, oaioption.WithMaxRetries(0))
	case opts.MaxRetries > 0:
		ro = append(ro, oaioption.WithMaxRetries(opts.MaxRetries))
	}
	if opts.HTTPClient != nil {
		ro = append(ro, oaioption.WithHTTPClient(opts.HTTPClient))
	}
	p := &Provider{client: openai.NewClient(ro...), opts: opts, api: opts.API}
	if p.api != APIResponses && p.api != APIChat {
		p.api = APIChat
		if p.isOpenAI() {
			p.api = APIResponses
		}
	}
	return p
}

// API returns the wire API the provider speaks: [APIResponses] or
// [APIChat].
func (o *Provider) API() string { return o.api }

// Name implements [gateway.Provider].
func (o *Provider) Name() string { return "openai" }

// Complete implements [gateway.Provider]: one streamed response (Responses
// API) or chat completion.
func (o *Provider) Complete(ctx context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
	if o.api == APIResponses {
		return o.completeResponse(ctx, req, emit)
	}
	params := openai.ChatCompletionNewParams{
		Model:     shared.ChatModel(o.opts.Model),
		Messages:  o.messages(req.System, req.Messages),
		MaxTokens: openai.Int(o.opts.MaxTokens),
	}
	if req.MaxTokens > 0 && req.MaxTokens < o.opts.MaxTokens {
		params.MaxTokens = openai.Int(req.MaxTokens)
	}
	if len(req.Tools) > 0 {
		params.Tools = o.tools(req.Tools)
	}
	// The usage comes in a last chunk of its own
	// (https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options).
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	if req.CacheKey != "" && o.isOpenAI() {
		// Routes the session's requests to the same prompt cache
		// (https://platform.openai.com/docs/guides/prompt-caching); other
		// OpenAI-compatible servers may refuse an unknown field.
		params.PromptCacheKey = openai.String(req.CacheKey)
	}
	opts, err := o.requestOptions(req)
	if err != nil {
		return nil, err
	}
	stream := o.client.Chat.Completions.NewStreaming(ctx, params, opts...)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	var thinking string
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		if len(chunk.Choices) == 0 {
			continue
		}
		d := chunk.Choices[0].Delta
		if t := reasoningDelta(d); t != "" {
			thinking += t
			emit(gateway.Event{Kind: gateway.EventThoughtDelta, Text: t})
		}
		if d.Content != "" {
			emit(gateway.Event{Kind: gateway.EventTextDelta, Text: d.Content})
		}
	}
	resp := o.response(&acc, thinking)
	if u := acc.Usage; u.PromptTokens > 0 || u.CompletionTokens > 0 {
		cached := min(u.PromptTokensDetails.CachedTokens, u.PromptTokens)
		resp.Usage = gateway.Usage{
			InputTokens:     u.PromptTokens - cached,
			CacheReadTokens: cached,
			OutputTokens:    u.CompletionTokens,
			ThoughtTokens:   u.CompletionTokensDetails.ReasoningTokens,
			Requests:        1,
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		return nil, o.describe(err)
	}
	return resp, nil
}

// reasoningDelta reads the non-standard reasoning fields of a delta.
func reasoningDelta(d openai.ChatCompletionChunkChoiceDelta) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		if f, ok := d.JSON.ExtraFields[key]; ok {
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
				return s
			}
		}
	}
	return ""
}

func (o *Provider) response(acc *openai.ChatCompletionAccumulator, thinking string) *gateway.Response {
	out := &gateway.Response{}
	out.Message.Thinking = thinking
	if len(acc.Choices) == 0 {
		return out
	}
	ch := acc.Choices[0]
	if ch.Message.Content != "" {
		out.Message.Content = []gateway.Content{gateway.TextContent(ch.Message.Content)}
	}
	for _, tc := range ch.Message.ToolCalls {
		args := map[string]any{}
		if tc.Function.Arguments != "" {
			if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil || args == nil {
				args = map[string]any{}
			}
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, gateway.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: args})
	}
	switch ch.FinishReason {
	case "length":
		out.StopReason = gateway.StopMaxTokens
	case "content_filter":
		out.StopReason = gateway.StopRefusal
	}
	if ch.Message.Refusal != "" && len(out.Message.ToolCalls) == 0 {
		out.StopReason = gateway.StopRefusal
	}
	return out
}

// messages converts the system prompt and the history.
func (o *Provider) messages(system string, history []gateway.Message) []openai.ChatCompletionMessageParamUnion {
	var out []openai.ChatCompletionMessageParamUnion
	if system != "" {
		out = append(out, openai.SystemMessage(system))
	}
	// pending are the images of the tool results since the last non-tool
	// message: they follow the last tool message in one user message, since
	// a tool message takes only text and nothing may come between the
	// answers to one assistant message's calls.
	var pending []openai.ChatCompletionContentPartUnionParam
	for i, m := range history {
		switch m.Role {
		case gateway.RoleUser:
			var parts []openai.ChatCompletionContentPartUnionParam
			for _, p := range o.promptParts(m.Content) {
				if p.Image != nil {
					parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL(p)}))
				} else if p.Text != "" {
					parts = append(parts, openai.TextContentPart(p.Text))
				}
			}
			if len(parts) == 1 && parts[0].OfText != nil {
				out = append(out, openai.UserMessage(parts[0].OfText.Text)) // plain string: the widest compatibility
			} else if len(parts) > 0 {
				out = append(out, openai.UserMessage(parts))
			} else {
				out = append(out, openai.UserMessage("(empty message)"))
			}
		case gateway.RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if t := gateway.PromptText(m.Content); t != "" {
				a.Content.OfString = openai.String(t)
			}
			for _, c := range m.ToolCalls {
				args, _ := json.Marshal(c.Args)
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(args)},
				}})
			}
			if a.Content.OfString.Valid() || len(a.ToolCalls) > 0 {
				out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
			}
		case gateway.RoleTool:
			text, images := o.chatToolResult(m)
			out = append(out, openai.ToolMessage(text, m.ToolCallID))
			pending = append(pending, images...)
			if len(pending) > 0 && (i+1 == len(history) || history[i+1].Role != gateway.RoleTool) {
				out = append(out, openai.UserMessage(pending))
				pending = nil
			}
		}
	}
	return out
}

// chatToolResult is a tool message's text and the parts of the user
// message that carries its images: a line naming the call, then the images.
// The text says where each image went. With NoImages, or for an image
// type the API does not take, the image is a note in the text.
func (o *Provider) chatToolResult(m gateway.Message) (string, []openai.ChatCompletionContentPartUnionParam) {
	res := m.Result
	if res == nil {
		res = &gateway.Result{}
	}
	caps := provider.Capabilities{ToolResultImages: imageTypes}
	if o.opts.NoImages {
		caps = Capabilities
	}
	var b strings.Builder
	if res.IsError {
		b.WriteString("Error: ")
	}
	var images []openai.ChatCompletionContentPartUnionParam
	for i, p := range provider.DegradeResult(caps, res) {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Image == nil {
			b.WriteString(p.Text)
			continue
		}
		if len(images) == 0 {
			images = append(images, openai.TextContentPart(fmt.Sprintf("The images of the result of tool call %s (%s):", m.ToolCallID, m.ToolName)))
		}
		images = append(images, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL(p)}))
		fmt.Fprintf(&b, "[image: %s, %d bytes; in the user message after the tool results]", p.MIMEType, len(p.Image))
	}
	return b.String(), images
}

// promptParts is [provider.PromptParts], with images as notes under
// NoImages.
func (o *Provider) promptParts(content []gateway.Content) []provider.ResultPart {
	parts := provider.PromptParts(content)
	if o.opts.NoImages {
		for i, p := range parts {
			if p.Image != nil {
				parts[i] = provider.ResultPart{Text: fmt.Sprintf("[image: %s, %d bytes; not shown to the model]", p.MIMEType, len(p.Image))}
			}
		}
	}
	return parts
}

// dataURL is an image part as a data URL.
func dataURL(p provider.ResultPart) string {
	return "data:" + p.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(p.Image)
}

// tools converts the tool definitions with normalized schemas.
func (o *Provider) tools(tools []*gateway.Tool) []openai.ChatCompletionToolUnionParam {
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(tools))
	for _, t := range tools {
		fn := shared.FunctionDefinitionParam{
			Name:       t.Name,
			Parameters: shared.FunctionParameters(provider.NormalizeSchema(Capabilities, t.Name, t.InputSchema, o.opts.Logger)),
		}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		out = append(out, openai.ChatCompletionFunctionTool(fn))
	}
	return out
}

// windowFields are the fields in which OpenAI-compatible servers give a
// model's context window in their model list: vLLM's max_model_len,
// OpenRouter's context_length, Groq's context_window, LM Studio's
// max_context_length.
var windowFields = []string{"max_model_len", "context_length", "context_window", "max_context_length"}

// ReportedWindow implements [gateway.WindowReporter]: the context window
// the endpoint's model list gives for the model, or 0. OpenAI's own API
// gives none.
func (o *Provider) ReportedWindow(ctx context.Context) (int64, error) {
	if o.isOpenAI() {
		return 0, nil
	}
	key := o.opts.Key()
	page, err := o.client.Models.List(ctx, oaioption.WithAPIKey(key), oaioption.WithMaxRetries(0))
	if err != nil {
		return 0, o.describe(err)
	}
	for _, m := range page.Data {
		if m.ID != o.opts.Model {
			continue
		}
		for _, f := range windowFields {
			if v, ok := m.JSON.ExtraFields[f]; ok {
				var n int64
				if json.Unmarshal([]byte(v.Raw()), &n) == nil && n > 0 {
					return n, nil
				}
			}
		}
	}
	return 0, nil
}

// isOpenAI reports whether the provider talks to OpenAI's own API (no base
// URL, or one on api.openai.com), which takes OpenAI-only fields such as
// prompt_cache_key.
func (o *Provider) isOpenAI() bool {
	if o.opts.BaseURL == "" {
		return true
	}
	u, err := url.Parse(o.opts.BaseURL)
	return err == nil && u.Hostname() == DefaultHost
}

// describe turns an SDK error into a [provider.Error].
func (o *Provider) describe(err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = provider.APIErrorMessage(apiErr.RawJSON())
		}
		pe := provider.NewError("openai", apiErr.StatusCode, msg, o.opts.APIKeyEnv, err)
		pe.TooLong = pe.TooLong || apiErr.Code == "context_length_exceeded"
		return pe
	}
	return provider.NewRequestError("openai", o.opts.BaseURL, DefaultHost, o.opts.APIKeyEnv, err)
}

// DefaultHost is the host of the OpenAI API, named when it cannot be
// reached.
const DefaultHost = "api.openai.com"

// CheckKey checks opts.APIKey against opts.BaseURL (default OpenAI's API)
// with one cheap request (list the models): nil if the API accepts it, a
// *provider.Error otherwise (HTTP 401 for a refused key, Status 0 when the
// API cannot be reached).
func CheckKey(ctx context.Context, opts provider.Options) error {
	opts.MaxRetries = -1
	o := New(&opts)
	if _, err := o.client.Models.List(ctx); err != nil {
		return o.describe(err)
	}
	return nil
}

// requestOptions are the options of one request of req, on either API: the
// key read now (a key stored by acp-agent login meanwhile is used), and
// the request's purpose header. Without a key and on OpenAI's own endpoint
// it is a MissingKeyError.
func (o *Provider) requestOptions(req *gateway.Request) ([]oaioption.RequestOption, error) {
	key := o.opts.Key()
	if key == "" && o.opts.BaseURL == "" {
		return nil, provider.MissingKeyError("openai", o.opts.APIKeyEnv)
	}
	opts := []oaioption.RequestOption{oaioption.WithAPIKey(key)}
	if req.Purpose != "" {
		opts = append(opts, oaioption.WithHeader(gateway.PurposeHeader, req.Purpose))
	}
	return opts, nil
}
