package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
)

// requestOptions maps o to the SDK's request options.
func requestOptions(o *provider.Options) []option.RequestOption {
	opts := []option.RequestOption{option.WithAPIKey(o.APIKey)}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	switch {
	case o.MaxRetries < 0:
		opts = append(opts, option.WithMaxRetries(0))
	case o.MaxRetries > 0:
		opts = append(opts, option.WithMaxRetries(o.MaxRetries))
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	return opts
}

// Capabilities are what the Messages API accepts: images of four
// types in tool results, any JSON Schema keyword.
var Capabilities = provider.Capabilities{
	ToolResultImages: map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true},
}

// Provider is the Anthropic Messages API provider
// (https://docs.anthropic.com/en/api/messages), streaming through the
// official Go SDK. Safe for concurrent use.
type Provider struct {
	client anthropic.Client
	opts   provider.Options
}

var (
	_ gateway.Thinker        = (*Provider)(nil)
	_ gateway.ContextManager = (*Provider)(nil)
)

// New returns an Anthropic provider. o may be nil (every default); it is
// copied.
func New(o *provider.Options) *Provider {
	opts := provider.WithDefaults(o, "ANTHROPIC_API_KEY")
	if opts.ThinkingBudget > 0 && opts.MaxTokens <= opts.ThinkingBudget {
		opts.MaxTokens = opts.ThinkingBudget + provider.DefaultMaxTokens
	}
	return &Provider{client: anthropic.NewClient(requestOptions(&opts)...), opts: opts}
}

// Name implements [gateway.Provider].
func (a *Provider) Name() string { return "anthropic" }

// ThinksByDefault implements [gateway.Thinker]: requests think when
// Options.ThinkingBudget is set.
func (a *Provider) ThinksByDefault() bool { return a.opts.ThinkingBudget > 0 }

// thinkingBudget is the thinking budget of req: Options.ThinkingBudget,
// unless req turns thinking off (0) or on (DefaultThinkingBudget when
// none is configured).
func (a *Provider) thinkingBudget(req *gateway.Request) int64 {
	switch {
	case req.Thinking == nil:
		return a.opts.ThinkingBudget
	case !*req.Thinking:
		return 0
	case a.opts.ThinkingBudget > 0:
		return a.opts.ThinkingBudget
	}
	return provider.DefaultThinkingBudget
}

// Complete implements [gateway.Provider]: one streamed Messages request.
func (a *Provider) Complete(ctx context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(a.opts.Model),
		MaxTokens: a.opts.MaxTokens,
		Messages:  a.messages(req.Messages),
		Tools:     a.tools(req.Tools),
	}
	if req.MaxTokens > 0 && req.MaxTokens < params.MaxTokens {
		params.MaxTokens = req.MaxTokens
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	setBreakpoints(&params)
	if budget := a.thinkingBudget(req); budget > 0 {
		if req.MaxTokens == 0 && params.MaxTokens <= budget {
			params.MaxTokens = budget + provider.DefaultMaxTokens
		}
		// The budget must be below max_tokens: a request capped lower (a
		// compaction summary) does not think.
		if params.MaxTokens > budget {
			params.Thinking = anthropic.ThinkingConfigParamOfEnabled(budget)
		}
	}
	key := a.opts.Key()
	if key == "" && a.opts.BaseURL == "" {
		return nil, provider.MissingKeyError("anthropic", a.opts.APIKeyEnv)
	}
	opts := []option.RequestOption{option.WithAPIKey(key)}
	if req.Purpose != "" {
		opts = append(opts, option.WithHeader(gateway.PurposeHeader, req.Purpose))
	}
	opts = append(opts, contextOptions(req.Context)...)
	stream := a.client.Messages.NewStreaming(ctx, params, opts...)
	defer stream.Close()
	var msg anthropic.Message
	var extras streamExtras
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, err
		}
		extras.observe(&ev)
		if ev.Type == "content_block_delta" {
			switch ev.Delta.Type {
			case "text_delta":
				emit(gateway.Event{Kind: gateway.EventTextDelta, Text: ev.Delta.Text})
			case "thinking_delta":
				emit(gateway.Event{Kind: gateway.EventThoughtDelta, Text: ev.Delta.Thinking})
			}
		}
	}
	resp := a.response(&msg)
	resp.Usage = extras.usage(msg.Usage)
	resp.Message.ServerCompaction = extras.serverCompaction()
	if len(extras.edits) > 0 || resp.Message.ServerCompaction != nil {
		a.opts.Logger.Debug("context managed by the API", "applied_edits", len(extras.edits), "compacted", resp.Message.ServerCompaction != nil)
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		return nil, a.describe(err)
	}
	return resp, nil
}

// response converts the accumulated message.
func (a *Provider) response(msg *anthropic.Message) *gateway.Response {
	var out gateway.Response
	var text string
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text += b.Text
		case "thinking":
			out.Message.Thinking += b.Thinking
			out.Message.ThinkingSignature = b.Signature
		case "tool_use":
			args := map[string]any{}
			if len(b.Input) > 0 {
				if err := json.Unmarshal(b.Input, &args); err != nil || args == nil {
					args = map[string]any{}
				}
			}
			out.Message.ToolCalls = append(out.Message.ToolCalls, gateway.ToolCall{ID: b.ID, Name: b.Name, Args: args})
		}
	}
	if text != "" {
		out.Message.Content = []gateway.Content{gateway.TextContent(text)}
	}
	switch msg.StopReason {
	case anthropic.StopReasonMaxTokens:
		out.StopReason = gateway.StopMaxTokens
	case anthropic.StopReasonRefusal:
		out.StopReason = gateway.StopRefusal
	}
	return &out
}

// messages converts the history; consecutive tool results become one user
// message of tool_result blocks, as the API wants.
func (a *Provider) messages(history []gateway.Message) []anthropic.MessageParam {
	var out []anthropic.MessageParam
	for _, m := range history {
		switch m.Role {
		case gateway.RoleUser:
			var blocks []anthropic.ContentBlockParamUnion
			for _, p := range provider.PromptParts(m.Content) {
				if p.Image != nil {
					blocks = append(blocks, anthropic.NewImageBlockBase64(p.MIMEType, base64.StdEncoding.EncodeToString(p.Image)))
				} else if p.Text != "" {
					blocks = append(blocks, anthropic.NewTextBlock(p.Text))
				}
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock("(empty message)"))
			}
			out = append(out, anthropic.NewUserMessage(blocks...))
		case gateway.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.ServerCompaction != nil {
				blocks = append(blocks, compactionParam(m.ServerCompaction))
			}
			// Only Claude's own thinking goes back: another provider's
			// signature (Gemini's is "gemini:…") would be refused.
			if m.Thinking != "" && m.ThinkingSignature != "" && !strings.Contains(m.ThinkingSignature, ":") {
				blocks = append(blocks, anthropic.NewThinkingBlock(m.ThinkingSignature, m.Thinking))
			}
			if t := gateway.PromptText(m.Content); t != "" {
				blocks = append(blocks, anthropic.NewTextBlock(t))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, c.Args, c.Name))
			}
			if len(blocks) > 0 {
				out = append(out, anthropic.NewAssistantMessage(blocks...))
			}
		case gateway.RoleTool:
			block := anthropic.ContentBlockParamUnion{OfToolResult: a.toolResult(m)}
			if n := len(out); n > 0 && out[n-1].Role == anthropic.MessageParamRoleUser && isToolResults(out[n-1]) {
				out[n-1].Content = append(out[n-1].Content, block)
			} else {
				out = append(out, anthropic.NewUserMessage(block))
			}
		}
	}
	return out
}

func isToolResults(m anthropic.MessageParam) bool {
	return len(m.Content) > 0 && m.Content[0].OfToolResult != nil
}

// toolResult degrades a result for Anthropic: text blocks and image blocks.
func (a *Provider) toolResult(m gateway.Message) *anthropic.ToolResultBlockParam {
	res := m.Result
	if res == nil {
		res = &gateway.Result{}
	}
	tr := &anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	if res.IsError {
		tr.IsError = anthropic.Bool(true)
	}
	for _, p := range provider.DegradeResult(Capabilities, res) {
		if p.Image != nil {
			tr.Content = append(tr.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: &anthropic.ImageBlockParam{
				Source: anthropic.ImageBlockParamSourceUnion{OfBase64: &anthropic.Base64ImageSourceParam{
					Data: base64.StdEncoding.EncodeToString(p.Image), MediaType: anthropic.Base64ImageSourceMediaType(p.MIMEType),
				}},
			}})
			continue
		}
		tr.Content = append(tr.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: p.Text}})
	}
	return tr
}

// tools converts the tool definitions with normalized schemas.
func (a *Provider) tools(tools []*gateway.Tool) []anthropic.ToolUnionParam {
	out := make([]anthropic.ToolUnionParam, 0, len(tools))
	for _, t := range tools {
		s := provider.NormalizeSchema(Capabilities, t.Name, t.InputSchema, a.opts.Logger)
		schema := anthropic.ToolInputSchemaParam{Properties: s["properties"], ExtraFields: map[string]any{}}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok {
					schema.Required = append(schema.Required, name)
				}
			}
		}
		for k, v := range s {
			if k != "type" && k != "properties" && k != "required" {
				schema.ExtraFields[k] = v
			}
		}
		tp := &anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: tp})
	}
	return out
}

// ReportedWindow implements [gateway.WindowReporter]: the model's
// max_input_tokens from the Models API, or 0.
func (a *Provider) ReportedWindow(ctx context.Context) (int64, error) {
	info, err := a.client.Beta.Models.Get(ctx, a.opts.Model, anthropic.BetaModelGetParams{}, option.WithAPIKey(a.opts.Key()), option.WithMaxRetries(0))
	if err != nil {
		return 0, a.describe(err)
	}
	return info.MaxInputTokens, nil
}

// describe turns an SDK error into a [provider.Error].
func (a *Provider) describe(err error) error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		return provider.NewError("anthropic", apiErr.StatusCode, provider.APIErrorMessage(apiErr.RawJSON()), a.opts.APIKeyEnv, err)
	}
	return provider.NewRequestError("anthropic", a.opts.BaseURL, DefaultHost, a.opts.APIKeyEnv, err)
}

// DefaultHost is the host of the Anthropic API, named when it cannot be
// reached.
const DefaultHost = "api.anthropic.com"

// CheckKey checks opts.APIKey with one cheap request (list one model): nil
// if the API accepts it, a *provider.Error otherwise (HTTP 401 for a
// refused key, Status 0 when the API cannot be reached).
func CheckKey(ctx context.Context, opts provider.Options) error {
	if opts.APIKeyEnv == "" {
		opts.APIKeyEnv = "ANTHROPIC_API_KEY"
	}
	opts.MaxRetries = -1
	a := &Provider{client: anthropic.NewClient(requestOptions(&opts)...), opts: opts}
	if _, err := a.client.Models.List(ctx, anthropic.ModelListParams{Limit: anthropic.Int(1)}); err != nil {
		return a.describe(err)
	}
	return nil
}
