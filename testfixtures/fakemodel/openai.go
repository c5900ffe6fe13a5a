package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// NewOpenAI starts a fake OpenAI Chat Completions API serving POST
// /v1/chat/completions with turns, and closes it with t.Cleanup. It is
// NewOpenAIWith(t, nil, turns...).
//
// A request with "stream": true gets data-only Server-Sent Events of
// https://platform.openai.com/docs/api-reference/chat-streaming: chunks
// {"id":"chatcmpl-fake-<turn>","object":"chat.completion.chunk","created":...,
// "model":<the request's>,"choices":[{"index":0,"delta":{...},"logprobs":null,
// "finish_reason":null}]} whose deltas are, in order: role "assistant" (with
// content ""), reasoning_content fragments, content fragments, tool_calls
// fragments (the first of each call with index, id, type "function",
// function.name and empty arguments; the next ones with index and
// function.arguments only), then an empty delta with the finish_reason. With
// stream_options.include_usage every chunk has "usage":null and a last chunk
// has "choices":[] and the usage (prompt_tokens, completion_tokens,
// total_tokens, prompt_tokens_details.cached_tokens,
// completion_tokens_details.reasoning_tokens); without it, the stream
// carries no usage, as the real API's. The stream ends with "data: [DONE]".
// Any other request gets the same turn as one chat.completion object, always
// with the usage. Errors use the body
// {"error":{"message":...,"type":...,"param":...,"code":...}}.
//
// Use it with option.WithBaseURL(s.URL + "/v1").
func NewOpenAI(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	return NewOpenAIWith(t, nil, turns...)
}

// NewOpenAIWith is [NewOpenAI] with options; a nil opts gives the defaults.
// The server enforces opts.ContextWindow and caches prompts by OpenAI's rules
// (see the package doc). opts is copied.
func NewOpenAIWith(t testing.TB, opts *Options, turns ...Turn) *Server {
	t.Helper()
	o := opts.withDefaults()
	return newServer(t, &openaiAPI{cache: newPrefixCache(o)}, o, turns)
}

// openaiAPI is the OpenAI Chat Completions API.
type openaiAPI struct {
	cache *prefixCache
}

func (*openaiAPI) path() string { return "/v1/chat/completions" }

// openaiPrompt is the prompt of an OpenAI request as one text.
type openaiPrompt struct {
	model string
	key   string // prompt_cache_key, or ""
	text  string // the JSON of tools, then of each message, compacted
	total int    // input tokens: the text's, or the body's if it is not JSON
}

func (p *openaiPrompt) tokens() int { return p.total }

func (*openaiAPI) parse(model string, body []byte, _ http.Header) (prompt, *apiError) {
	var req struct {
		Tools          json.RawMessage   `json:"tools"`
		Messages       []json.RawMessage `json:"messages"`
		PromptCacheKey string            `json:"prompt_cache_key"`
	}
	p := &openaiPrompt{model: model}
	if err := json.Unmarshal(body, &req); err != nil {
		p.total = tokens(string(body))
		return p, nil
	}
	p.key = req.PromptCacheKey
	var b bytes.Buffer
	if t := bytes.TrimSpace(req.Tools); len(t) > 0 && string(t) != "null" {
		_ = json.Compact(&b, t)
	}
	for _, m := range req.Messages {
		_ = json.Compact(&b, m)
	}
	p.text = b.String()
	p.total = tokens(p.text)
	return p, nil
}

func (*openaiAPI) tooLong(n, limit int) *apiError {
	return &apiError{
		status: http.StatusBadRequest,
		message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. "+
			"Please reduce the length of the messages.", limit, n),
		param: "messages",
		code:  "context_length_exceeded",
	}
}

func (a *openaiAPI) account(p prompt, now time.Time) Usage {
	return a.cache.account(p.(*openaiPrompt), now)
}

// finishReason maps an Anthropic stop_reason to an OpenAI finish_reason.
func finishReason(stopReason string) string {
	switch stopReason {
	case "end_turn", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	case "refusal":
		return "content_filter"
	}
	return stopReason
}

func (*openaiAPI) stream(turn Turn, req *request) []event {
	turn = resolve(turn, req.n, "call_fake_")
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) event {
		c := map[string]any{
			"id":                 fmt.Sprintf("chatcmpl-fake-%d", req.n),
			"object":             "chat.completion.chunk",
			"created":            created,
			"model":              req.model,
			"system_fingerprint": "fp_fake",
			"choices": []any{map[string]any{
				"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish,
			}},
		}
		if req.includeUsage {
			c["usage"] = nil
		}
		return event{data: c}
	}
	evs := []event{chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)}
	for _, c := range chunks(turn.Thinking, 8) {
		evs = append(evs, chunk(map[string]any{"reasoning_content": c}, nil))
	}
	for _, c := range chunks(turn.Text, 8) {
		evs = append(evs, chunk(map[string]any{"content": c}, nil))
	}
	for i, c := range turn.ToolCalls {
		evs = append(evs, chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil))
		for _, p := range pieces(c.Args, 3) {
			evs = append(evs, chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": p},
			}}}, nil))
		}
	}
	evs = append(evs, chunk(map[string]any{}, finishReason(turn.StopReason)))
	if req.includeUsage {
		evs = append(evs, event{data: map[string]any{
			"id":                 fmt.Sprintf("chatcmpl-fake-%d", req.n),
			"object":             "chat.completion.chunk",
			"created":            created,
			"model":              req.model,
			"system_fingerprint": "fp_fake",
			"choices":            []any{},
			"usage":              openaiUsage(turn, req),
		}})
	}
	return append(evs, event{data: "[DONE]"})
}

func (*openaiAPI) message(turn Turn, req *request) any {
	turn = resolve(turn, req.n, "call_fake_")
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if turn.Text != "" {
		msg["content"] = turn.Text
	}
	if turn.Thinking != "" {
		msg["reasoning_content"] = turn.Thinking
	}
	if len(turn.ToolCalls) > 0 {
		var calls []any
		for _, c := range turn.ToolCalls {
			calls = append(calls, map[string]any{
				"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args},
			})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id":                 fmt.Sprintf("chatcmpl-fake-%d", req.n),
		"object":             "chat.completion",
		"created":            time.Now().Unix(),
		"model":              req.model,
		"system_fingerprint": "fp_fake",
		"choices": []any{map[string]any{
			"index": 0, "message": msg, "logprobs": nil, "finish_reason": finishReason(turn.StopReason),
		}},
		"usage": openaiUsage(turn, req),
	}
}

// openaiUsage is the usage object of a completion.
func openaiUsage(turn Turn, req *request) map[string]any {
	u := req.usage
	prompt := u.InputTokens + u.CacheReadTokens
	return map[string]any{
		"prompt_tokens":             prompt,
		"completion_tokens":         u.OutputTokens,
		"total_tokens":              prompt + u.OutputTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheReadTokens, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": tokens(turn.Thinking)},
	}
}

// openaiError is the error type and code OpenAI sends for an HTTP status.
func openaiError(status int) (typ string, code any) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusNotFound:
		return "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", nil
	}
	return "invalid_request_error", nil
}

func (*openaiAPI) errorBody(e *apiError, _ string) any {
	typ, code := openaiError(e.status)
	if e.code != "" {
		code = e.code
	}
	var param any
	if e.param != "" {
		param = e.param
	}
	return map[string]any{"error": map[string]any{
		"message": e.message, "type": typ, "param": param, "code": code,
	}}
}

// modelInfo is an empty model list, or for one model an object without a
// window: OpenAI's API gives none.
func (*openaiAPI) modelInfo(id string, _ int) any {
	if id == "/v1/models" {
		return map[string]any{"object": "list", "data": []any{}}
	}
	return map[string]any{"id": id, "object": "model", "created": 0, "owned_by": "fakemodel"}
}
