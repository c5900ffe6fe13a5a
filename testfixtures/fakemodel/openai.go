package fakemodel

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// NewOpenAI starts a fake OpenAI Chat Completions API serving POST
// /v1/chat/completions with turns, and closes it with t.Cleanup.
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
// has "choices":[] and the usage. The stream ends with "data: [DONE]". Any
// other request gets the same turn as one chat.completion object. Errors use
// the body {"error":{"message":...,"type":...,"param":null,"code":...}}.
//
// Use it with option.WithBaseURL(s.URL + "/v1").
func NewOpenAI(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	return newServer(t, openaiAPI{}, turns)
}

type openaiAPI struct{}

func (openaiAPI) path() string { return "/v1/chat/completions" }

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

func (openaiAPI) stream(turn Turn, req *request) []event {
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
		if req.usage {
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
	if req.usage {
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

func (openaiAPI) message(turn Turn, req *request) any {
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

func openaiUsage(turn Turn, req *request) map[string]any {
	out := outputTokens(turn)
	return map[string]any{
		"prompt_tokens":             req.inputTokens,
		"completion_tokens":         out,
		"total_tokens":              req.inputTokens + out,
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

func (openaiAPI) errorBody(status int, message, _ string) any {
	typ, code := openaiError(status)
	return map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": code,
	}}
}
