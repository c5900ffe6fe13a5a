package fakemodel

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// NewGemini starts a fake Gemini API serving POST
// /v1beta/models/{model}:streamGenerateContent?alt=sse and
// /v1beta/models/{model}:generateContent with turns, and closes it with
// t.Cleanup. It is NewGeminiWith(t, nil, turns...).
//
// A streamed request gets data-only Server-Sent Events of
// https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent,
// each a GenerateContentResponse {"candidates":[{"content":{"role":"model",
// "parts":[...]},"index":0}],"usageMetadata":{...},"modelVersion":<the
// path's model>,"responseId":"resp_fake_<turn>"}: thought parts ({"text",
// "thought":true}), text parts, one chunk with every functionCall part
// ({"name","args"}, and "id" only when the script gives one, as Gemini 2.5
// sends none) whose first part carries the thoughtSignature
// base64("fake-signature-<turn>"), then a last chunk with the finishReason.
// Every chunk has the usage so far; the last one the request's
// (promptTokenCount, cachedContentTokenCount, candidatesTokenCount,
// thoughtsTokenCount, totalTokenCount). Turn.StopReason maps to
// finishReason: end_turn, tool_use and stop_sequence → STOP, max_tokens →
// MAX_TOKENS, refusal → SAFETY; any other value is sent as is.
// streamGenerateContent without alt=sse (a JSON array) is refused with 400.
// generateContent gets the turn as one GenerateContentResponse. Errors use
// the body {"error":{"code":...,"message":...,"status":...}}.
//
// Use it with genai.HTTPOptions{BaseURL: s.URL}.
func NewGemini(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	return NewGeminiWith(t, nil, turns...)
}

// NewGeminiWith is [NewGemini] with options; a nil opts gives the defaults.
// The server enforces opts.ContextWindow, refusing a longer prompt with
// Gemini's HTTP 400 INVALID_ARGUMENT "The input token count (N) exceeds the
// maximum number of tokens allowed (M).", and caches prompts as Gemini's
// implicit caching does.
//
// Implicit caching, after
// https://ai.google.dev/gemini-api/docs/caching#implicit-caching: it is
// automatic; a request whose prompt begins with an earlier live prompt's
// prefix of the same model reads that prefix from the cache, reported as
// usageMetadata.cachedContentTokenCount (a part of promptTokenCount). Kept
// simple here: the prompt is one text, the JSON of systemInstruction, tools
// and each content in order (compacted); the hit is the longest byte prefix
// shared with a remembered prompt, in tokens rounded down, counted only from
// opts.MinCacheTokens (Gemini's minimum is 1,024 tokens for Flash models and
// 4,096 for Pro; the fake's default 1,024); a prompt of at least that many
// tokens is remembered for CacheTTL after its last use (Gemini gives no
// lifetime). Cache writes are free and not reported, as with Gemini. opts is
// copied.
func NewGeminiWith(t testing.TB, opts *Options, turns ...Turn) *Server {
	t.Helper()
	o := opts.withDefaults()
	c := newPrefixCache(o)
	c.step = 1
	return newServer(t, &geminiAPI{cache: c}, o, turns)
}

// geminiAPI is the Gemini API's generateContent.
type geminiAPI struct {
	cache *prefixCache
}

// geminiPrefix is the path of the Gemini API's models.
const geminiPrefix = "/v1beta/models/"

func (*geminiAPI) path() string { return geminiPrefix + "{model}:streamGenerateContent" }

// route reads the model and the method from the path of a POST request:
// ok for streamGenerateContent (stream) and generateContent.
func (*geminiAPI) route(r *http.Request) (model string, stream, ok bool) {
	rest, found := strings.CutPrefix(r.URL.Path, geminiPrefix)
	if !found {
		return "", false, false
	}
	model, method, found := strings.Cut(rest, ":")
	if !found || model == "" {
		return "", false, false
	}
	switch method {
	case "streamGenerateContent":
		return model, true, true
	case "generateContent":
		return model, false, true
	}
	return "", false, false
}

// routeError refuses a request the fake does not serve on a routed path.
func (*geminiAPI) routeError(r *http.Request, stream bool) *apiError {
	if stream && r.URL.Query().Get("alt") != "sse" {
		return &apiError{status: http.StatusBadRequest, message: "fakemodel: streamGenerateContent is served only with alt=sse"}
	}
	return nil
}

func (*geminiAPI) parse(model string, body []byte, _ http.Header) (prompt, *apiError) {
	var req struct {
		SystemInstruction json.RawMessage   `json:"systemInstruction"`
		Tools             json.RawMessage   `json:"tools"`
		Contents          []json.RawMessage `json:"contents"`
	}
	p := &openaiPrompt{model: model}
	if err := json.Unmarshal(body, &req); err != nil {
		p.total = tokens(string(body))
		return p, nil
	}
	var b bytes.Buffer
	for _, raw := range []json.RawMessage{req.SystemInstruction, req.Tools} {
		if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
			_ = json.Compact(&b, t)
		}
	}
	for _, c := range req.Contents {
		_ = json.Compact(&b, c)
	}
	p.text = b.String()
	p.total = tokens(p.text)
	return p, nil
}

func (*geminiAPI) tooLong(n, limit int) *apiError {
	return &apiError{
		status:  http.StatusBadRequest,
		message: fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", n, limit),
	}
}

func (a *geminiAPI) account(p prompt, now time.Time) Usage {
	return a.cache.account(p.(*openaiPrompt), now)
}

// geminiFinish maps an Anthropic stop_reason to a Gemini finishReason.
func geminiFinish(stopReason string) string {
	switch stopReason {
	case "end_turn", "tool_use", "stop_sequence":
		return "STOP"
	case "max_tokens":
		return "MAX_TOKENS"
	case "refusal":
		return "SAFETY"
	}
	return stopReason
}

// geminiCalls are the functionCall parts of a turn; the first carries the
// turn's thought signature.
func geminiCalls(turn Turn, n int) []any {
	var parts []any
	for i, c := range turn.ToolCalls {
		fc := map[string]any{"name": c.Name}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		var args any = map[string]any{}
		if c.Args != "" {
			if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
				args = c.Args // invalid JSON as scripted, as a string
			}
		}
		fc["args"] = args
		part := map[string]any{"functionCall": fc}
		if i == 0 {
			part["thoughtSignature"] = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "fake-signature-%d", n))
		}
		parts = append(parts, part)
	}
	return parts
}

// geminiUsage is the usageMetadata of a turn; with final false, the
// usage of a chunk before the last (the prompt only).
func geminiUsage(turn Turn, req *request, final bool) map[string]any {
	u := req.usage
	prompt := u.InputTokens + u.CacheReadTokens
	m := map[string]any{"promptTokenCount": prompt, "totalTokenCount": prompt}
	if u.CacheReadTokens > 0 {
		m["cachedContentTokenCount"] = u.CacheReadTokens
	}
	if final {
		thoughts := min(tokens(turn.Thinking), u.OutputTokens)
		m["candidatesTokenCount"] = u.OutputTokens - thoughts
		if thoughts > 0 {
			m["thoughtsTokenCount"] = thoughts
		}
		m["totalTokenCount"] = prompt + u.OutputTokens
	}
	return m
}

func (*geminiAPI) stream(turn Turn, req *request) []event {
	calls := geminiCalls(turn, req.n)
	turn = resolve(turn, req.n, "")
	chunk := func(parts []any, finish string) event {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		return event{data: map[string]any{
			"candidates":    []any{cand},
			"usageMetadata": geminiUsage(turn, req, finish != ""),
			"modelVersion":  req.model,
			"responseId":    fmt.Sprintf("resp_fake_%d", req.n),
		}}
	}
	var evs []event
	for _, c := range chunks(turn.Thinking, 8) {
		evs = append(evs, chunk([]any{map[string]any{"text": c, "thought": true}}, ""))
	}
	for _, c := range chunks(turn.Text, 8) {
		evs = append(evs, chunk([]any{map[string]any{"text": c}}, ""))
	}
	if len(calls) > 0 {
		evs = append(evs, chunk(calls, ""))
	}
	return append(evs, chunk([]any{map[string]any{"text": ""}}, geminiFinish(turn.StopReason)))
}

func (*geminiAPI) message(turn Turn, req *request) any {
	calls := geminiCalls(turn, req.n)
	turn = resolve(turn, req.n, "")
	var parts []any
	if turn.Thinking != "" {
		parts = append(parts, map[string]any{"text": turn.Thinking, "thought": true})
	}
	if turn.Text != "" {
		parts = append(parts, map[string]any{"text": turn.Text})
	}
	parts = append(parts, calls...)
	return map[string]any{
		"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": parts}, "finishReason": geminiFinish(turn.StopReason), "index": 0,
		}},
		"usageMetadata": geminiUsage(turn, req, true),
		"modelVersion":  req.model,
		"responseId":    fmt.Sprintf("resp_fake_%d", req.n),
	}
}

// geminiStatus is the canonical status name Google APIs send for an HTTP
// status.
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

func (*geminiAPI) errorBody(e *apiError, _ string) any {
	return map[string]any{"error": map[string]any{"code": e.status, "message": e.message, "status": geminiStatus(e.status)}}
}

// modelInfo is never asked: the Gemini fake serves no /v1/models.
func (*geminiAPI) modelInfo(id string, _ int) any { return map[string]any{} }

// router is an api whose endpoint's path names the model and the method
// (Gemini's), instead of one fixed path and a body's "model" and "stream".
type router interface {
	// route reads the model and whether to stream from a POST request's
	// path; ok is false for a path not served.
	route(r *http.Request) (model string, stream, ok bool)
	// routeError is the refusal of a routed request the fake does not
	// serve, or nil.
	routeError(r *http.Request, stream bool) *apiError
}
