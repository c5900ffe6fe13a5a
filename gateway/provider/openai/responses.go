package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
)

// replayProvider names the Responses API's items in [gateway.Replay].
const replayProvider = "openai-responses"

// completeResponse is Complete over the Responses API: one streamed
// response (https://platform.openai.com/docs/api-reference/responses-streaming).
func (o *Provider) completeResponse(ctx context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
	params := responses.ResponseNewParams{
		Model:           shared.ResponsesModel(o.opts.Model),
		Input:           responses.ResponseNewParamsInputUnion{OfInputItemList: o.inputItems(req.Messages)},
		MaxOutputTokens: openai.Int(o.opts.MaxTokens),
	}
	if req.MaxTokens > 0 && req.MaxTokens < o.opts.MaxTokens {
		params.MaxOutputTokens = openai.Int(req.MaxTokens)
	}
	if req.System != "" {
		params.Instructions = openai.String(req.System)
	}
	for _, t := range req.Tools {
		// strict is false: the API's default (true) demands schemas
		// that close every object and require every property.
		fn := responses.ToolParamOfFunction(t.Name, provider.NormalizeSchema(ResponsesCapabilities, t.Name, t.InputSchema, o.opts.Logger), false)
		if t.Description != "" {
			fn.OfFunction.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, fn)
	}
	if req.CacheKey != "" {
		// Routes the session's requests to the same prompt cache
		// (https://platform.openai.com/docs/guides/prompt-caching).
		params.PromptCacheKey = openai.String(req.CacheKey)
	}
	opts, err := o.requestOptions(req)
	if err != nil {
		return nil, err
	}
	stream := o.client.Responses.NewStreaming(ctx, params, opts...)
	defer stream.Close()
	var text, thinking strings.Builder // what streamed, for a cut stream
	var final *responses.Response
	var failure error
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
			emit(gateway.Event{Kind: gateway.EventTextDelta, Text: ev.Delta})
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			thinking.WriteString(ev.Delta)
			emit(gateway.Event{Kind: gateway.EventThoughtDelta, Text: ev.Delta})
		case "response.completed", "response.incomplete":
			r := ev.Response
			final = &r
		case "response.failed":
			failure = o.streamError(string(ev.Response.Error.Code), ev.Response.Error.Message)
		case "error":
			failure = o.streamError(ev.Code, ev.Message)
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return partial(text.String(), thinking.String()), ctx.Err()
		}
		return nil, o.describe(err)
	}
	if failure != nil {
		return nil, failure
	}
	if final == nil {
		if ctx.Err() != nil {
			return partial(text.String(), thinking.String()), ctx.Err()
		}
		return nil, o.streamError("", "the response stream ended before the response was complete")
	}
	return o.responseOf(final), nil
}

// partial is the message of a stream cut short: the text and thoughts that
// streamed, no tool calls.
func partial(text, thinking string) *gateway.Response {
	out := &gateway.Response{}
	out.Message.Thinking = thinking
	if text != "" {
		out.Message.Content = []gateway.Content{gateway.TextContent(text)}
	}
	return out
}

// streamError is a failure the API reports inside a stream (an error event,
// or a response that failed).
func (o *Provider) streamError(code, msg string) error {
	if msg == "" {
		msg = "the response failed"
	}
	if code != "" {
		msg = fmt.Sprintf("%s (%s)", msg, code)
	}
	pe := provider.NewError("openai", 0, msg, o.opts.APIKeyEnv, nil)
	pe.TooLong = pe.TooLong || code == "context_length_exceeded"
	return pe
}

// responseOf maps a finished response: its output items to the assistant
// message (reasoning items kept verbatim in Message.Replay), its status to
// the stop reason, its usage to gateway.Usage.
func (o *Provider) responseOf(r *responses.Response) *gateway.Response {
	out := &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant}}
	var text, thinking strings.Builder
	refused := false
	for _, item := range r.Output {
		switch item.Type {
		case "reasoning":
			rs := item.AsReasoning()
			for _, s := range rs.Summary {
				thinking.WriteString(s.Text)
			}
			if out.Message.Replay == nil {
				out.Message.Replay = &gateway.Replay{Provider: replayProvider, Model: o.opts.Model}
			}
			out.Message.Replay.Items = append(out.Message.Replay.Items, json.RawMessage(rs.RawJSON()))
		case "message":
			for _, c := range item.AsMessage().Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refused = true
					text.WriteString(c.Refusal)
				}
			}
		case "function_call":
			fc := item.AsFunctionCall()
			args := map[string]any{}
			if fc.Arguments != "" {
				if err := json.Unmarshal([]byte(fc.Arguments), &args); err != nil || args == nil {
					args = map[string]any{}
				}
			}
			out.Message.ToolCalls = append(out.Message.ToolCalls, gateway.ToolCall{ID: fc.CallID, Name: fc.Name, Args: args})
		}
	}
	out.Message.Thinking = thinking.String()
	if text.Len() > 0 {
		out.Message.Content = []gateway.Content{gateway.TextContent(text.String())}
	}
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails.Reason == "content_filter":
		out.StopReason = gateway.StopRefusal
	case r.Status == "incomplete":
		out.StopReason = gateway.StopMaxTokens
	case refused && len(out.Message.ToolCalls) == 0:
		out.StopReason = gateway.StopRefusal
	}
	if u := r.Usage; u.InputTokens > 0 || u.OutputTokens > 0 {
		cached := min(u.InputTokensDetails.CachedTokens, u.InputTokens)
		out.Usage = gateway.Usage{
			InputTokens:     u.InputTokens - cached,
			CacheReadTokens: cached,
			OutputTokens:    u.OutputTokens,
			ThoughtTokens:   u.OutputTokensDetails.ReasoningTokens,
			Requests:        1,
		}
	}
	return out
}

// inputItems converts the history to input items: user messages (text and
// images), assistant messages (this model's reasoning items first, then
// the text, then the function calls) and tool results as
// function_call_output with their images beside the text.
func (o *Provider) inputItems(history []gateway.Message) responses.ResponseInputParam {
	var out responses.ResponseInputParam
	for _, m := range history {
		switch m.Role {
		case gateway.RoleUser:
			var content responses.ResponseInputMessageContentListParam
			for _, p := range o.promptParts(m.Content) {
				if p.Image != nil {
					content = append(content, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
						ImageURL: openai.String(dataURL(p)), Detail: responses.ResponseInputImageDetailAuto,
					}})
				} else if p.Text != "" {
					content = append(content, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: p.Text}})
				}
			}
			if len(content) == 0 {
				content = append(content, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: "(empty message)"}})
			}
			out = append(out, responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRoleUser))
		case gateway.RoleAssistant:
			t := gateway.PromptText(m.Content)
			if t == "" && len(m.ToolCalls) == 0 {
				continue // a reasoning item must have an item after it
			}
			out = append(out, o.reasoningItems(m.Replay)...)
			if t != "" {
				out = append(out, responses.ResponseInputItemParamOfMessage(t, responses.EasyInputMessageRoleAssistant))
			}
			for _, c := range m.ToolCalls {
				args, _ := json.Marshal(c.Args)
				out = append(out, responses.ResponseInputItemParamOfFunctionCall(string(args), c.ID, c.Name))
			}
		case gateway.RoleTool:
			out = append(out, o.functionCallOutput(m))
		}
	}
	return out
}

// reasoningItems are the reasoning items of r to send back, if this
// provider and model made them.
func (o *Provider) reasoningItems(r *gateway.Replay) []responses.ResponseInputItemUnionParam {
	if r == nil || r.Provider != replayProvider || r.Model != o.opts.Model {
		return nil
	}
	var out []responses.ResponseInputItemUnionParam
	for _, raw := range r.Items {
		var item responses.ResponseReasoningItem
		if json.Unmarshal(raw, &item) != nil || item.ID == "" {
			continue
		}
		p := item.ToParam()
		out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: &p})
	}
	return out
}

// functionCallOutput is a tool result as a function_call_output: a string
// when it is text only, else input_text and input_image parts in order.
func (o *Provider) functionCallOutput(m gateway.Message) responses.ResponseInputItemUnionParam {
	res := m.Result
	if res == nil {
		res = &gateway.Result{}
	}
	caps := ResponsesCapabilities
	if o.opts.NoImages {
		caps = Capabilities
	}
	parts := provider.DegradeResult(caps, res)
	if res.IsError && parts[0].Image == nil {
		parts[0].Text = "Error: " + parts[0].Text
	} else if res.IsError {
		parts = append([]provider.ResultPart{{Text: "Error:"}}, parts...)
	}
	var list responses.ResponseFunctionCallOutputItemListParam
	var texts []string
	images := false
	for _, p := range parts {
		if p.Image != nil {
			images = true
			list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
				ImageURL: openai.String(dataURL(p)), Detail: responses.ResponseInputImageContentDetailAuto,
			}})
			continue
		}
		texts = append(texts, p.Text)
		list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: p.Text}})
	}
	var item responses.ResponseInputItemUnionParam
	if images {
		item = responses.ResponseInputItemParamOfFunctionCallOutput(list)
	} else {
		item = responses.ResponseInputItemParamOfFunctionCallOutput(strings.Join(texts, "\n"))
	}
	item.OfFunctionCallOutput.CallID = openai.String(m.ToolCallID)
	return item
}
