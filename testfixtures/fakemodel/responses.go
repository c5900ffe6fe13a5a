package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// NewOpenAIResponses starts a fake OpenAI Responses API serving POST
// /v1/responses with turns, and closes it with t.Cleanup. It is
// NewOpenAIResponsesWith(t, nil, turns...).
//
// A request with "stream": true gets the named Server-Sent Events of
// https://platform.openai.com/docs/api-reference/responses-streaming, each
// with "type" and "sequence_number": response.created and
// response.in_progress (the response in_progress, no output, usage null);
// then per output item, in order, response.output_item.added, its deltas
// and response.output_item.done: a reasoning item "rs_fake_<turn>" for
// Turn.Thinking (reasoning_summary_part.added, reasoning_summary_text.delta
// fragments, reasoning_summary_text.done, reasoning_summary_part.done), a
// message "msg_fake_<turn>" for Turn.Text (content_part.added,
// output_text.delta fragments, output_text.done, content_part.done; with
// StopReason "refusal" a refusal part and refusal.delta/refusal.done),
// and a function_call "fc_fake_<turn>_<i>" per tool call
// (function_call_arguments.delta fragments, function_call_arguments.done);
// last response.completed, or response.incomplete with incomplete_details
// {"reason":"max_output_tokens"} for StopReason "max_tokens", carrying the
// whole output and the usage: input_tokens (cached included),
// input_tokens_details.cached_tokens, output_tokens,
// output_tokens_details.reasoning_tokens, total_tokens. Any other request
// gets the same response as one object. Errors use the Chat Completions
// fake's body; a prompt over the window has param "input".
//
// Tokens and caching follow the OpenAI rules of the package doc, over one
// text: the JSON of "tools", then of "instructions", then of each "input"
// item in order (an "input" string is one item). prompt_cache_key
// separates caches as there. Use it with option.WithBaseURL(s.URL + "/v1").
func NewOpenAIResponses(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	return NewOpenAIResponsesWith(t, nil, turns...)
}

// NewOpenAIResponsesWith is [NewOpenAIResponses] with options; a nil opts
// gives the defaults. opts is copied.
func NewOpenAIResponsesWith(t testing.TB, opts *Options, turns ...Turn) *Server {
	t.Helper()
	o := opts.withDefaults()
	return newServer(t, &responsesAPI{openaiAPI{cache: newPrefixCache(o)}}, o, turns)
}

// responsesAPI is the OpenAI Responses API; errors, model information and
// the cache are the Chat Completions fake's.
type responsesAPI struct {
	openaiAPI
}

func (*responsesAPI) path() string { return "/v1/responses" }

func (*responsesAPI) parse(model string, body []byte, _ http.Header) (prompt, *apiError) {
	var req struct {
		Tools          json.RawMessage `json:"tools"`
		Instructions   json.RawMessage `json:"instructions"`
		Input          json.RawMessage `json:"input"`
		PromptCacheKey string          `json:"prompt_cache_key"`
	}
	p := &openaiPrompt{model: model}
	if err := json.Unmarshal(body, &req); err != nil {
		p.total = tokens(string(body))
		return p, nil
	}
	p.key = req.PromptCacheKey
	var b bytes.Buffer
	for _, raw := range []json.RawMessage{req.Tools, req.Instructions} {
		if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
			_ = json.Compact(&b, t)
		}
	}
	var items []json.RawMessage
	if json.Unmarshal(req.Input, &items) != nil {
		items = []json.RawMessage{req.Input}
	}
	for _, it := range items {
		if t := bytes.TrimSpace(it); len(t) > 0 && string(t) != "null" {
			_ = json.Compact(&b, t)
		}
	}
	p.text = b.String()
	p.total = tokens(p.text)
	return p, nil
}

func (a *responsesAPI) tooLong(n, limit int) *apiError {
	e := a.openaiAPI.tooLong(n, limit)
	e.param = "input"
	return e
}

// responsesTurn is one turn as the Responses API answers it: its id, its
// output items and the final status.
type responsesTurn struct {
	id         string
	created    int64
	model      string
	reasoning  map[string]any // nil without Thinking
	message    map[string]any // nil without Text
	calls      []map[string]any
	refusal    bool
	status     string // completed or incomplete
	incomplete any    // incomplete_details
	usage      map[string]any
}

func newResponsesTurn(turn Turn, req *request) *responsesTurn {
	turn = resolve(turn, req.n, "call_fake_")
	rt := &responsesTurn{
		id: fmt.Sprintf("resp_fake_%d", req.n), created: time.Now().Unix(), model: req.model,
		refusal: turn.StopReason == "refusal", status: "completed",
	}
	if turn.StopReason == "max_tokens" {
		rt.status, rt.incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	if turn.Thinking != "" {
		rt.reasoning = map[string]any{
			"id": fmt.Sprintf("rs_fake_%d", req.n), "type": "reasoning",
			"summary": []any{map[string]any{"type": "summary_text", "text": turn.Thinking}}, "encrypted_content": nil,
		}
	}
	if turn.Text != "" {
		part := map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}, "logprobs": []any{}}
		if rt.refusal {
			part = map[string]any{"type": "refusal", "refusal": turn.Text}
		}
		rt.message = map[string]any{
			"id": fmt.Sprintf("msg_fake_%d", req.n), "type": "message", "status": "completed", "role": "assistant",
			"content": []any{part},
		}
	}
	for i, c := range turn.ToolCalls {
		rt.calls = append(rt.calls, map[string]any{
			"id": fmt.Sprintf("fc_fake_%d_%d", req.n, i), "type": "function_call", "status": "completed",
			"call_id": c.ID, "name": c.Name, "arguments": c.Args,
		})
	}
	u := req.usage
	input := u.InputTokens + u.CacheReadTokens
	rt.usage = map[string]any{
		"input_tokens":          input,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheReadTokens},
		"output_tokens":         u.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": tokens(turn.Thinking)},
		"total_tokens":          input + u.OutputTokens,
	}
	return rt
}

// output is the turn's output items in order.
func (rt *responsesTurn) output() []any {
	var out []any
	if rt.reasoning != nil {
		out = append(out, rt.reasoning)
	}
	if rt.message != nil {
		out = append(out, rt.message)
	}
	for _, c := range rt.calls {
		out = append(out, c)
	}
	return out
}

// object is the response object with status; final carries the output and
// the usage.
func (rt *responsesTurn) object(status string, final bool) map[string]any {
	r := map[string]any{
		"id": rt.id, "object": "response", "created_at": rt.created, "status": status, "error": nil,
		"incomplete_details": nil, "instructions": nil, "max_output_tokens": nil, "model": rt.model,
		"output": []any{}, "parallel_tool_calls": true, "previous_response_id": nil,
		"reasoning": map[string]any{"effort": nil, "summary": nil}, "store": true, "temperature": 1.0,
		"text": map[string]any{"format": map[string]any{"type": "text"}}, "tool_choice": "auto", "tools": []any{},
		"top_p": 1.0, "truncation": "disabled", "usage": nil, "user": nil, "metadata": map[string]any{},
	}
	if final {
		r["output"], r["usage"], r["incomplete_details"] = rt.output(), rt.usage, rt.incomplete
	}
	return r
}

// with returns a shallow copy of m with the keys of kv set.
func with(m map[string]any, kv ...any) map[string]any {
	c := make(map[string]any, len(m)+len(kv)/2)
	for k, v := range m {
		c[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i].(string)] = kv[i+1]
	}
	return c
}

func (*responsesAPI) stream(turn Turn, req *request) []event {
	rt := newResponsesTurn(turn, req)
	var evs []event
	add := func(typ string, fields map[string]any) {
		data := with(fields, "type", typ, "sequence_number", len(evs))
		evs = append(evs, event{name: typ, data: data})
	}
	add("response.created", map[string]any{"response": rt.object("in_progress", false)})
	add("response.in_progress", map[string]any{"response": rt.object("in_progress", false)})
	idx := 0
	if r := rt.reasoning; r != nil {
		text := turn.Thinking
		at := map[string]any{"item_id": r["id"], "output_index": idx, "summary_index": 0}
		add("response.output_item.added", map[string]any{"output_index": idx, "item": with(r, "summary", []any{})})
		add("response.reasoning_summary_part.added", with(at, "part", map[string]any{"type": "summary_text", "text": ""}))
		for _, c := range chunks(text, 8) {
			add("response.reasoning_summary_text.delta", with(at, "delta", c))
		}
		add("response.reasoning_summary_text.done", with(at, "text", text))
		add("response.reasoning_summary_part.done", with(at, "part", map[string]any{"type": "summary_text", "text": text}))
		add("response.output_item.done", map[string]any{"output_index": idx, "item": r})
		idx++
	}
	if m := rt.message; m != nil {
		text := turn.Text
		at := map[string]any{"item_id": m["id"], "output_index": idx, "content_index": 0}
		add("response.output_item.added", map[string]any{"output_index": idx, "item": with(m, "status", "in_progress", "content", []any{})})
		if rt.refusal {
			add("response.content_part.added", with(at, "part", map[string]any{"type": "refusal", "refusal": ""}))
			for _, c := range chunks(text, 8) {
				add("response.refusal.delta", with(at, "delta", c))
			}
			add("response.refusal.done", with(at, "refusal", text))
		} else {
			add("response.content_part.added", with(at, "part", map[string]any{"type": "output_text", "text": "", "annotations": []any{}}))
			for _, c := range chunks(text, 8) {
				add("response.output_text.delta", with(at, "delta", c, "logprobs", []any{}))
			}
			add("response.output_text.done", with(at, "text", text, "logprobs", []any{}))
		}
		add("response.content_part.done", with(at, "part", m["content"].([]any)[0]))
		add("response.output_item.done", map[string]any{"output_index": idx, "item": m})
		idx++
	}
	for _, c := range rt.calls {
		args := c["arguments"].(string)
		at := map[string]any{"item_id": c["id"], "output_index": idx}
		add("response.output_item.added", map[string]any{"output_index": idx, "item": with(c, "status", "in_progress", "arguments", "")})
		for _, p := range pieces(args, 3) {
			add("response.function_call_arguments.delta", with(at, "delta", p))
		}
		add("response.function_call_arguments.done", with(at, "arguments", args))
		add("response.output_item.done", map[string]any{"output_index": idx, "item": c})
		idx++
	}
	final := "response.completed"
	if rt.status == "incomplete" {
		final = "response.incomplete"
	}
	add(final, map[string]any{"response": rt.object(rt.status, true)})
	return evs
}

func (*responsesAPI) message(turn Turn, req *request) any {
	rt := newResponsesTurn(turn, req)
	return rt.object(rt.status, true)
}
