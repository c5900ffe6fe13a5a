package fakemodel

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// NewAnthropic starts a fake Anthropic Messages API serving POST
// /v1/messages with turns, and closes it with t.Cleanup.
//
// A request with "stream": true gets the event stream of
// https://docs.anthropic.com/en/api/messages-streaming: message_start (id
// "msg_fake_<turn>", the request's model, empty content, usage), ping, then
// per block content_block_start / content_block_delta... /
// content_block_stop, then message_delta (stop_reason, usage.output_tokens)
// and message_stop. Blocks come in the order thinking (thinking_delta events
// and one signature_delta), text (text_delta events), tool_use (id, name,
// input {}; then input_json_delta events, the first with an empty
// partial_json). Any other request gets the same turn as one JSON message.
// Errors use the body {"type":"error","error":{"type":...,"message":...},
// "request_id":...}.
//
// Use it with option.WithBaseURL(s.URL).
func NewAnthropic(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	return newServer(t, anthropicAPI{}, turns)
}

type anthropicAPI struct{}

func (anthropicAPI) path() string { return "/v1/messages" }

// signature is the opaque signature sent for the thinking block of turn n.
func signature(n int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "fakemodel signature for turn %d", n))
}

func (anthropicAPI) stream(turn Turn, req *request) []event {
	turn = resolve(turn, req.n, "toolu_fake_")
	evs := []event{
		{"message_start", map[string]any{
			"type": "message_start",
			"message": map[string]any{
				"id":            fmt.Sprintf("msg_fake_%d", req.n),
				"type":          "message",
				"role":          "assistant",
				"model":         req.model,
				"content":       []any{},
				"stop_reason":   nil,
				"stop_sequence": nil,
				"usage":         anthropicUsage(req.inputTokens, 1),
			},
		}},
		{"ping", map[string]any{"type": "ping"}},
	}
	index := 0
	block := func(start map[string]any, deltas []map[string]any) {
		evs = append(evs, event{"content_block_start", map[string]any{
			"type": "content_block_start", "index": index, "content_block": start,
		}})
		for _, d := range deltas {
			evs = append(evs, event{"content_block_delta", map[string]any{
				"type": "content_block_delta", "index": index, "delta": d,
			}})
		}
		evs = append(evs, event{"content_block_stop", map[string]any{
			"type": "content_block_stop", "index": index,
		}})
		index++
	}
	if turn.Thinking != "" {
		var deltas []map[string]any
		for _, c := range chunks(turn.Thinking, 8) {
			deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": c})
		}
		deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": signature(req.n)})
		block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, deltas)
	}
	if turn.Text != "" {
		var deltas []map[string]any
		for _, c := range chunks(turn.Text, 8) {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": c})
		}
		block(map[string]any{"type": "text", "text": ""}, deltas)
	}
	for _, c := range turn.ToolCalls {
		deltas := []map[string]any{{"type": "input_json_delta", "partial_json": ""}}
		for _, p := range pieces(c.Args, 3) {
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		block(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}, deltas)
	}
	return append(evs,
		event{"message_delta", map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": turn.StopReason, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": outputTokens(turn)},
		}},
		event{"message_stop", map[string]any{"type": "message_stop"}},
	)
}

func (anthropicAPI) message(turn Turn, req *request) any {
	turn = resolve(turn, req.n, "toolu_fake_")
	content := []any{}
	if turn.Thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": turn.Thinking, "signature": signature(req.n)})
	}
	if turn.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	for _, c := range turn.ToolCalls {
		var input any = json.RawMessage(c.Args)
		if !json.Valid([]byte(c.Args)) {
			input = c.Args
		}
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
	}
	return map[string]any{
		"id":            fmt.Sprintf("msg_fake_%d", req.n),
		"type":          "message",
		"role":          "assistant",
		"model":         req.model,
		"content":       content,
		"stop_reason":   turn.StopReason,
		"stop_sequence": nil,
		"usage":         anthropicUsage(req.inputTokens, outputTokens(turn)),
	}
}

func anthropicUsage(input, output int) map[string]any {
	return map[string]any{
		"input_tokens":                input,
		"output_tokens":               output,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
	}
}

// anthropicErrorType is the error type of https://docs.anthropic.com/en/api/errors
// for an HTTP status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func (anthropicAPI) errorBody(status int, message, requestID string) any {
	return map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": anthropicErrorType(status), "message": message},
		"request_id": requestID,
	}
}
