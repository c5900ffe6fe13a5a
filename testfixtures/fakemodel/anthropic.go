package fakemodel

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// NewAnthropic starts a fake Anthropic Messages API serving POST
// /v1/messages with turns, and closes it with t.Cleanup. It is
// NewAnthropicWith(t, nil, turns...).
//
// A request with "stream": true gets the event stream of
// https://docs.anthropic.com/en/api/messages-streaming: message_start (id
// "msg_fake_<turn>", the request's model, empty content, usage with
// input_tokens, cache_creation_input_tokens, cache_read_input_tokens and
// output_tokens 1), ping, then per block content_block_start /
// content_block_delta... / content_block_stop, then message_delta
// (stop_reason, the usage with the final output_tokens) and message_stop.
// Blocks come in the order thinking (thinking_delta events and one
// signature_delta), text (text_delta events), tool_use (id, name, input {};
// then input_json_delta events, the first with an empty partial_json). Any
// other request gets the same turn as one JSON message, with the usage.
// Errors use the body {"type":"error","error":{"type":...,"message":...},
// "request_id":...}.
//
// Use it with option.WithBaseURL(s.URL).
func NewAnthropic(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	return NewAnthropicWith(t, nil, turns...)
}

// NewAnthropicWith is [NewAnthropic] with options; a nil opts gives the
// defaults. The server enforces opts.ContextWindow and caches prompts by
// Anthropic's rules (see the package doc). opts is copied.
func NewAnthropicWith(t testing.TB, opts *Options, turns ...Turn) *Server {
	t.Helper()
	o := opts.withDefaults()
	return newServer(t, &anthropicAPI{cache: newBlockCache(o)}, o, turns)
}

// anthropicAPI is the Anthropic Messages API.
type anthropicAPI struct {
	cache *blockCache
}

func (*anthropicAPI) path() string { return "/v1/messages" }

// maxBreakpoints is how many blocks with cache_control a request may have.
const maxBreakpoints = 4

// anthropicPrompt is the prompt of an Anthropic request: its blocks in order.
type anthropicPrompt struct {
	model  string
	blocks []block
	total  int // input tokens: the blocks', or the body's if it is not JSON
}

func (p *anthropicPrompt) tokens() int { return p.total }

// block is one block of an Anthropic prompt.
type block struct {
	cum        int           // tokens of the prefix ending with this block
	prefix     [32]byte      // hash of that prefix, cache_control left out
	breakpoint bool          // the block has a cache_control
	ttl        time.Duration // the cache_control's "ttl"; 0 if none
}

func (*anthropicAPI) parse(model string, body []byte) (prompt, *apiError) {
	var req struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	p := &anthropicPrompt{model: model}
	if err := json.Unmarshal(body, &req); err != nil {
		p.total = tokens(string(body))
		return p, nil
	}
	h := sha256.New()
	add := func(tag string, raw json.RawMessage) {
		var c bytes.Buffer
		if json.Compact(&c, raw) != nil {
			return
		}
		p.total += tokens(c.String())
		rest, cc := stripMember(c.Bytes(), "cache_control")
		b := block{cum: p.total, breakpoint: cc != nil && string(cc) != "null"}
		if b.breakpoint {
			var ctl struct {
				TTL string `json:"ttl"`
			}
			_ = json.Unmarshal(cc, &ctl)
			b.ttl, _ = time.ParseDuration(ctl.TTL)
		}
		for _, part := range [][]byte{[]byte(tag), rest} {
			_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
			h.Write(part)
		}
		h.Sum(b.prefix[:0])
		p.blocks = append(p.blocks, b)
	}
	for _, t := range req.Tools {
		add("tool", t)
	}
	for _, b := range splitBlocks(req.System) {
		add("system", b)
	}
	for _, m := range req.Messages {
		for i, b := range splitBlocks(m.Content) {
			tag := "+" // a block after the first of its message
			if i == 0 {
				tag = "message " + m.Role
			}
			add(tag, b)
		}
	}
	n := 0
	for _, b := range p.blocks {
		if b.breakpoint {
			n++
		}
	}
	if n > maxBreakpoints {
		return nil, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(
			"A maximum of %d blocks with cache_control may be provided. Found %d.", maxBreakpoints, n)}
	}
	return p, nil
}

// splitBlocks returns the blocks of a system prompt or a message content: the
// elements of an array, or raw itself (a string).
func splitBlocks(raw json.RawMessage) []json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var list []json.RawMessage
	if raw[0] == '[' && json.Unmarshal(raw, &list) == nil {
		return list
	}
	return []json.RawMessage{raw}
}

// stripMember returns the compact JSON object obj without its top-level
// member key, and that member's value; obj itself and nil if it has none.
func stripMember(obj []byte, key string) (rest, value []byte) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return obj, nil
	}
	for dec.More() {
		start := dec.InputOffset() // at the comma before the member, if any
		k, err := dec.Token()
		if err != nil {
			return obj, nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return obj, nil
		}
		end := dec.InputOffset()
		if k != key {
			continue
		}
		if start == 1 && end < int64(len(obj)) && obj[end] == ',' {
			end++ // the first member: drop the comma after it instead
		}
		return slices.Concat(obj[:start], obj[end:]), v
	}
	return obj, nil
}

func (*anthropicAPI) tooLong(n, limit int) *apiError {
	return &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("prompt is too long: %d tokens > %d maximum", n, limit)}
}

func (a *anthropicAPI) account(p prompt, now time.Time) Usage {
	return a.cache.account(p.(*anthropicPrompt), now)
}

// signature is the opaque signature sent for the thinking block of turn n.
func signature(n int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "fakemodel signature for turn %d", n))
}

func (*anthropicAPI) stream(turn Turn, req *request) []event {
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
				"usage":         anthropicUsage(req.usage, 1),
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
			"usage": anthropicUsage(req.usage, req.usage.OutputTokens),
		}},
		event{"message_stop", map[string]any{"type": "message_stop"}},
	)
}

func (*anthropicAPI) message(turn Turn, req *request) any {
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
		"usage":         anthropicUsage(req.usage, req.usage.OutputTokens),
	}
}

// anthropicUsage is the usage object of a message, with output tokens.
func anthropicUsage(u Usage, output int) map[string]any {
	return map[string]any{
		"input_tokens":                u.InputTokens,
		"cache_creation_input_tokens": u.CacheWriteTokens,
		"cache_read_input_tokens":     u.CacheReadTokens,
		"output_tokens":               output,
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

func (*anthropicAPI) errorBody(e *apiError, requestID string) any {
	return map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": anthropicErrorType(e.status), "message": e.message},
		"request_id": requestID,
	}
}

// modelInfo is a Models API model object
// (https://docs.anthropic.com/en/api/models): max_input_tokens is the
// server's window, 0 when it has none.
func (*anthropicAPI) modelInfo(id string, window int) any {
	return map[string]any{"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z", "max_input_tokens": window, "max_tokens": 64000}
}
