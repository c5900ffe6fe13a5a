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

	// managed is whether the request asked for context management.
	managed bool
	// edits are the context edits applied (context_management.applied_edits).
	edits []map[string]any
	// compaction, if set, is the compaction this request makes.
	compaction *compaction
	// iterations are the compaction's and the message's usage, input side,
	// when the request compacts; set by account.
	iterations []Usage
}

func (p *anthropicPrompt) tokens() int { return p.total }

// block is one block of an Anthropic prompt.
type block struct {
	cum        int           // tokens of the prefix ending with this block
	prefix     [32]byte      // hash of that prefix, cache_control left out
	breakpoint bool          // the block has a cache_control
	ttl        time.Duration // the cache_control's "ttl"; 0 if none
}

// piece is one block of a request before it is counted: its tag (what it
// is and where: "tool", "system", "message user", or "+" for a block after
// the first of its message) and its compact JSON.
type piece struct {
	tag  string
	raw  []byte
	role string // the message's role; "" for a tool or system block
}

func (*anthropicAPI) parse(model string, body []byte, header http.Header) (prompt, *apiError) {
	var req struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		ContextManagement *struct {
			Edits []json.RawMessage `json:"edits"`
		} `json:"context_management"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return &anthropicPrompt{model: model, total: tokens(string(body))}, nil
	}
	var head, msgs []piece // tools and system; messages
	compactOf := func(raw json.RawMessage) []byte {
		var c bytes.Buffer
		if json.Compact(&c, raw) != nil {
			return nil
		}
		return c.Bytes()
	}
	for _, t := range req.Tools {
		head = append(head, piece{tag: "tool", raw: compactOf(t)})
	}
	for _, b := range splitBlocks(req.System) {
		head = append(head, piece{tag: "system", raw: compactOf(b)})
	}
	for _, m := range req.Messages {
		for i, b := range splitBlocks(m.Content) {
			tag := "+" // a block after the first of its message
			if i == 0 {
				tag = "message " + m.Role
			}
			msgs = append(msgs, piece{tag: tag, raw: compactOf(b), role: m.Role})
		}
	}
	msgs = fromCompaction(msgs)
	p := buildPrompt(model, slices.Concat(head, msgs))
	if cm := req.ContextManagement; cm != nil {
		p.managed = true
		for _, raw := range cm.Edits {
			var e contextEdit
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, &apiError{status: http.StatusBadRequest, message: "context_management.edits: " + err.Error()}
			}
			if beta := e.beta(); beta == "" {
				return nil, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("context_management.edits: unknown type %q", e.Type)}
			} else if !hasBeta(header, beta) {
				return nil, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("context_management.edits: %s requires the anthropic-beta header %s", e.Type, beta)}
			}
			switch e.Type {
			case "clear_tool_uses_20250919":
				var applied map[string]any
				if msgs, applied = clearToolUses(e, p.total, msgs); applied != nil {
					p.edits = append(p.edits, applied)
					p = withEdits(buildPrompt(model, slices.Concat(head, msgs)), p)
				}
			case "compact_20260112":
				trigger := e.triggerOr(defaultCompactTrigger)
				if trigger < minCompactTrigger {
					return nil, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(
						"context_management.edits: compact_20260112 trigger must be at least %d input tokens, got %d", minCompactTrigger, trigger)}
				}
				if p.total > trigger {
					p.compaction = compact(model, head, msgs, p.total)
				}
			}
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

// withEdits returns p with the context management state of old.
func withEdits(p, old *anthropicPrompt) *anthropicPrompt {
	p.managed, p.edits, p.compaction = old.managed, old.edits, old.compaction
	return p
}

// buildPrompt counts and hashes pieces, in order, into a prompt.
func buildPrompt(model string, pieces []piece) *anthropicPrompt {
	p := &anthropicPrompt{model: model}
	h := sha256.New()
	for _, pc := range pieces {
		if pc.raw == nil {
			continue
		}
		p.total += tokens(string(pc.raw))
		rest, cc := stripMember(pc.raw, "cache_control")
		b := block{cum: p.total, breakpoint: cc != nil && string(cc) != "null"}
		if b.breakpoint {
			var ctl struct {
				TTL string `json:"ttl"`
			}
			_ = json.Unmarshal(cc, &ctl)
			b.ttl, _ = time.ParseDuration(ctl.TTL)
		}
		for _, part := range [][]byte{[]byte(pc.tag), rest} {
			_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
			h.Write(part)
		}
		h.Sum(b.prefix[:0])
		p.blocks = append(p.blocks, b)
	}
	return p
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

// account accounts p's input; a request that compacts is two iterations,
// the compaction (the whole prompt in, the summary out) and the message
// (the compacted prompt in), and its usage is their sum, the summary's
// tokens as output.
func (a *anthropicAPI) account(p prompt, now time.Time) Usage {
	ap := p.(*anthropicPrompt)
	u := a.cache.account(ap, now)
	if c := ap.compaction; c != nil {
		u.OutputTokens = tokens(c.summary)
		after := a.cache.account(c.after, now)
		ap.iterations = []Usage{u, after}
		u = u.add(after)
	}
	return u
}

// signature is the opaque signature sent for the thinking block of turn n.
func signature(n int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "fakemodel signature for turn %d", n))
}

func (*anthropicAPI) stream(turn Turn, req *request) []event {
	turn = resolve(turn, req.n, "toolu_fake_")
	p, _ := req.prompt.(*anthropicPrompt)
	start := req.usage
	if p != nil && len(p.iterations) == 2 {
		start = p.iterations[1] // the top-level counts are the message's
	}
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
				"usage":         anthropicUsage(start, 1),
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
	if p != nil && p.compaction != nil {
		delta := map[string]any{"type": "compaction_delta"}
		for k, v := range p.compaction.block {
			if k != "type" {
				delta[k] = v
			}
		}
		block(map[string]any{"type": "compaction", "content": "", "encrypted_content": ""}, []map[string]any{delta})
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
	delta := map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": turn.StopReason, "stop_sequence": nil},
		"usage": p.usage(req.usage),
	}
	if cm := p.contextManagement(); cm != nil {
		delta["context_management"] = cm
	}
	return append(evs,
		event{"message_delta", delta},
		event{"message_stop", map[string]any{"type": "message_stop"}},
	)
}

func (*anthropicAPI) message(turn Turn, req *request) any {
	turn = resolve(turn, req.n, "toolu_fake_")
	p, _ := req.prompt.(*anthropicPrompt)
	content := []any{}
	if p != nil && p.compaction != nil {
		content = append(content, p.compaction.block)
	}
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
	msg := map[string]any{
		"id":            fmt.Sprintf("msg_fake_%d", req.n),
		"type":          "message",
		"role":          "assistant",
		"model":         req.model,
		"content":       content,
		"stop_reason":   turn.StopReason,
		"stop_sequence": nil,
		"usage":         p.usage(req.usage),
	}
	if cm := p.contextManagement(); cm != nil {
		msg["context_management"] = cm
	}
	return msg
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
