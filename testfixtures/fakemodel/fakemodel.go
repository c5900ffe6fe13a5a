// Package fakemodel provides fake model API servers for tests: an Anthropic
// Messages API ([NewAnthropic]), an OpenAI Chat Completions API
// ([NewOpenAI]), an OpenAI Responses API ([NewOpenAIResponses]) and a Gemini
// API ([NewGemini]; its wire format and implicit cache are documented
// there). Each plays scripted [Turn]s, one per request, in the streaming
// wire format of the real API closely enough that the official Go SDKs
// (anthropic-sdk-go, openai-go, genai) parse and accumulate it, and records
// every request it receives. Product code never imports this package.
//
// Quick start:
//
//	s := fakemodel.NewAnthropic(t,
//		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "echo", Args: `{"text":"hi"}`}}},
//		fakemodel.Turn{Text: "Done."},
//	)
//	client := anthropic.NewClient(option.WithBaseURL(s.URL), option.WithAPIKey("test"))
//	// ... drive the code under test, then inspect s.Requests().
//
// The servers listen on 127.0.0.1 only and are closed by t.Cleanup.
// [NewAnthropicWith] and [NewOpenAIWith] also take [Options]: a context
// window, a Respond function that answers whatever the script does not, the
// prompt cache's minimum, lifetime and clock, and the answer to a request
// for a session's title, which takes no scripted turn ([Server.TitleRequests]). Like the real APIs, the
// servers refuse a prompt over the window, cache prompt prefixes and report
// token usage, so that caching, compaction and budgets are testable offline.
//
// # Tokens
//
// Tokens are estimated from bytes: one token per 4 bytes, rounded up, of the
// JSON text (compacted as by [json.Compact]) of each piece of the prompt.
//
//   - Anthropic: the prompt is the sequence of blocks tools[0], tools[1]...,
//     then the system blocks (a "system" string is one block), then each
//     message's content blocks in order (a string content is one block). Its
//     input tokens are the sum of its blocks' tokens, and nothing else.
//   - OpenAI: the prompt is one text, the JSON of "tools" followed by the JSON
//     of each message in order; prompt_tokens is that text's tokens.
//
// A body that is not a JSON object counts as one piece. Output tokens are
// estimated the same way from the turn's thinking, text, tool names and
// arguments (at least 1).
//
// # Context window
//
// With [Options.ContextWindow] set, a prompt of more input tokens is refused,
// before any turn is taken, with the real APIs' error: HTTP 400
// invalid_request_error "prompt is too long: N tokens > M maximum"
// (Anthropic), or HTTP 400 invalid_request_error, param "messages", code
// "context_length_exceeded", "This model's maximum context length is M tokens.
// However, your messages resulted in N tokens. Please reduce the length of
// the messages." (OpenAI).
//
// # Prompt caching
//
// Anthropic, after
// https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching: a
// block with a "cache_control" member is a breakpoint; more than 4 make an
// HTTP 400 ("A maximum of 4 blocks with cache_control may be provided. Found
// N."). A cache entry is keyed by the model and the exact bytes of every block
// up to and including a breakpoint, cache_control members left out (moving a
// breakpoint keeps the prefix's key). A request reads the longest prefix found
// in the cache, looked up at each breakpoint and at the 20 block boundaries
// before it; it writes the tokens from there to its last breakpoint; the rest
// is plain input. Every breakpoint's prefix of at least
// [Options.MinCacheTokens] becomes an entry; a shorter one is not cached and
// its tokens are plain input. An entry lives [Options.CacheTTL] (or its
// breakpoint's "ttl", such as "1h"), renewed each time it is read. Usage
// reports input_tokens (uncached input), cache_creation_input_tokens and
// cache_read_input_tokens.
//
// OpenAI, after https://platform.openai.com/docs/guides/prompt-caching:
// caching is automatic. cached_tokens is the longest byte prefix the prompt
// shares with an earlier live prompt of the same model, in tokens (rounded
// down), counted in steps of 128 from MinCacheTokens (0 under it). Two
// requests that both carry a prompt_cache_key share the cache only if the keys
// are equal. The 256 most recent prompts of at least MinCacheTokens per model
// and key are remembered, each for CacheTTL after its last use. Usage reports
// prompt_tokens (cached included) and prompt_tokens_details.cached_tokens.
//
// A request answered with an error (a refusal, a scripted Turn.Status, an
// unknown path) caches nothing and accounts a zero [Usage]. Each request's
// accounting is [Recorded.Usage]; [Server.Usage] sums them and [Usage.Billed]
// prices the input with the caches' multipliers. Not modelled: cache
// invalidation by a change of tool_choice, images or thinking parameters,
// the 1-hour cache's write price, and OpenAI's per-machine routing. An image
// counts by the bytes of its base64 data, not by OpenAI's or Anthropic's
// per-tile or per-pixel rules.
//
// # Context management (Anthropic)
//
// A request's context_management.edits are applied as documented, each
// only with its anthropic-beta header (else HTTP 400):
//
//   - clear_tool_uses_20250919 (context-management-2025-06-27,
//     https://docs.anthropic.com/en/docs/build-with-claude/context-editing):
//     when the prompt passes the trigger (input_tokens, default 100,000; or
//     tool_uses), the result of every tool use but the newest keep (default
//     3) and those of exclude_tools is replaced by [ClearedPlaceholder] (the
//     tool_use's input by {} under clear_tool_inputs), unless that frees
//     fewer than clear_at_least tokens. The history is cleared anew at each
//     request, as the API is stateless; the prompt counted and cached is the
//     cleared one, and the response's context_management.applied_edits says
//     what was cleared (cleared_tool_uses, cleared_input_tokens).
//     clear_thinking_20251015 is accepted and does nothing.
//   - compact_20260112 (compact-2026-01-12,
//     https://docs.anthropic.com/en/docs/build-with-claude/compaction): every
//     message block before the last compaction block with a summary is
//     dropped. A prompt still over the trigger (default 150,000; under 50,000
//     is an HTTP 400) is compacted: the answer begins with a compaction block
//     (content: the fake's summary, which quotes the newest user text;
//     encrypted_content: opaque; streamed as one compaction_delta), and the
//     turn is written from the tools, the system prompt and that block. Usage
//     has "iterations", the compaction's (the whole prompt in, the summary
//     out) and the message's, and its top-level counts are the message's;
//     [Recorded.Usage] is their sum, as billed.
//
// Wire references:
// https://docs.anthropic.com/en/api/messages-streaming,
// https://platform.openai.com/docs/api-reference/chat-streaming.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// A Turn is one scripted model response. The zero Turn is an empty answer
// that ends the turn ("end_turn").
type Turn struct {
	// Thinking, if non-empty, is streamed first: as a thinking block with
	// thinking_delta events and one signature_delta (Anthropic), or as
	// delta.reasoning_content fragments (OpenAI; the field DeepSeek, vLLM and
	// other OpenAI-compatible servers use), or as a reasoning item with a
	// summary (the Responses API).
	Thinking string
	// Text, if non-empty, is streamed after Thinking as several text deltas of
	// about 8 bytes each (never splitting a UTF-8 character). With Status set,
	// Text is the error message instead.
	Text string
	// ToolCalls are streamed after Text, in order; several make parallel tool
	// calls in one response.
	ToolCalls []ToolCall
	// StopReason is the Anthropic stop_reason to send: "end_turn", "tool_use",
	// "max_tokens", "refusal", "stop_sequence", "pause_turn"... If empty, it is
	// "tool_use" when ToolCalls is non-empty and "end_turn" otherwise. The
	// OpenAI server maps it to finish_reason: end_turn and stop_sequence →
	// "stop", tool_use → "tool_calls", max_tokens → "length", refusal →
	// "content_filter"; any other value is sent as is.
	StopReason string
	// Status, if non-zero (429, 500, 401...), makes the server answer with this
	// HTTP status and the API's JSON error body instead of a message. Every
	// status the SDKs retry (408, 409, 429, 5xx) also carries "retry-after: 0"
	// and "retry-after-ms: 0", so SDK retries happen at once.
	Status int
	// Delay is waited before each streamed event; a non-streaming answer or an
	// error status waits it once. If the client goes away (or the server is
	// closed) meanwhile, the response is aborted.
	Delay time.Duration
	// Hang makes the server send the first streamed event, then block until
	// the client disconnects or the server is closed, and abort the response
	// (the client sees the connection cut, not the end of the stream). A
	// non-streaming request or an error status gets no answer at all.
	Hang bool
}

// A ToolCall is one tool call in a scripted Turn.
type ToolCall struct {
	// ID is the tool call's id. If empty, the server makes one up:
	// "toolu_fake_<turn>_<i>" (Anthropic) or "call_fake_<turn>_<i>" (OpenAI),
	// with turn counted from 1 and i from 0.
	ID string
	// Name is the tool's name.
	Name string
	// Args is the raw JSON object text of the arguments; empty means "{}". It
	// is streamed verbatim in a few fragments, so invalid JSON can be scripted
	// to test a consumer's handling of a broken call. (A non-streaming Anthropic
	// answer carries invalid Args as a JSON string.)
	Args string
}

// Recorded is one request a Server received.
type Recorded struct {
	// Method and Path are the request's method and URL path.
	Method, Path string
	// Header is the request's header.
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// JSON is Body decoded as a JSON object, or nil if it is not one.
	JSON map[string]any
	// Status is the HTTP status of the server's answer: 200 for a message or
	// a stream (even one that Delay or Hang cut short), the error's status
	// otherwise. It is 0 until the answer is decided (while Respond runs).
	Status int
	// Usage is the request's token accounting: the input, as the prompt cache
	// split it, and the output of the turn. It is zero for a request answered
	// with an error (a prompt over the context window, a scripted Status...)
	// and until the answer is decided.
	Usage Usage
}

// Options configures a Server. The zero value, like a nil *Options, gives no
// context window, no Respond function and the real APIs' cache defaults.
type Options struct {
	// ContextWindow is the largest prompt, in estimated input tokens, that the
	// server accepts; a larger one is refused with the API's HTTP 400 (see
	// the package doc) and takes no turn. Zero or negative means no limit.
	ContextWindow int
	// Respond, if non-nil, answers every request that finds no scripted turn
	// left, so a test can script a model that reacts to the request; running
	// out of script is then no test error. It gets the request's record
	// (Status and Usage not filled in yet). It is called without the server's
	// lock held, possibly concurrently, and may call the Server's methods.
	Respond func(r Recorded) Turn
	// MinCacheTokens is the shortest prefix, in tokens, that a cache keeps.
	// If zero or negative, 1024 (Claude Sonnet and Opus; OpenAI).
	MinCacheTokens int
	// CacheTTL is how long a cache entry lives after its last use (Anthropic:
	// a breakpoint's own "ttl" wins). If zero or negative, 5 minutes.
	CacheTTL time.Duration
	// Now is the clock of cache lifetimes. If nil, time.Now.
	Now func() time.Time
	// Title answers a request for a session's title (one whose
	// gateway.PurposeHeader is gateway.PurposeTitle): such a request takes
	// no scripted turn, is not in Requests or Usage but in TitleRequests,
	// and is answered with this text, "Fake session title" when empty.
	Title string
}

// withDefaults returns a copy of o (which may be nil) with defaults filled in.
func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MinCacheTokens <= 0 {
		r.MinCacheTokens = 1024
	}
	if r.CacheTTL <= 0 {
		r.CacheTTL = 5 * time.Minute
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r
}

// Server is a fake model API on 127.0.0.1, made by [NewAnthropic],
// [NewOpenAI], [NewAnthropicWith] or [NewOpenAIWith]. Its methods are safe
// for concurrent use. Concurrent requests take turns in the order the server
// receives them.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:PORT", with no trailing slash.
	// The Anthropic API is served at URL+"/v1/messages"; the OpenAI API at
	// URL+"/v1/chat/completions" (so OpenAI clients take URL+"/v1" as their
	// base URL).
	URL string

	t    testing.TB
	api  api
	opts Options // with defaults; read-only (Respond lives in respond)
	srv  *httptest.Server
	quit chan struct{} // closed at cleanup, before srv.Close; ends every pause

	// modelInfo counts the model-information requests (GET /v1/models and
	// /v1/models/{id}), which are answered but not recorded in requests.
	modelInfo atomic.Int64

	mu       sync.Mutex
	turns    []Turn              // scripted turns not served yet, in order
	respond  func(Recorded) Turn // answers when turns is empty; nil: a test error
	served   int                 // number of turns taken so far (the next one is served+1)
	requests []Recorded          // every request received, in arrival order
	titles   []Recorded          // the title requests (Options.Title), apart
	received testutil.Signal     // notified after each request is recorded
}

// api is what differs between the two fake APIs. Its methods are safe for
// concurrent use.
type api interface {
	// path is the one endpoint served, such as "/v1/messages".
	path() string
	// parse reads the prompt of a request body. A non-nil error is a request
	// the API refuses as invalid, before the context window is checked.
	parse(model string, body []byte, header http.Header) (prompt, *apiError)
	// tooLong is the error for a prompt of n tokens over a window of limit.
	tooLong(n, limit int) *apiError
	// account looks p up in the API's prompt cache at now, updates the cache
	// and returns the input side of the request's usage.
	account(p prompt, now time.Time) Usage
	// stream returns the events of a streamed answer.
	stream(turn Turn, req *request) []event
	// message returns the body of a non-streaming answer.
	message(turn Turn, req *request) any
	// errorBody returns the JSON error body for e.
	errorBody(e *apiError, requestID string) any
	// modelInfo returns the body of a model-information request for id
	// (the path after /v1/models/, or "/v1/models" for the list) on a
	// server whose context window is window (0: none).
	modelInfo(id string, window int) any
}

// prompt is a parsed request as the context window and the cache see it.
type prompt interface {
	// tokens is the prompt's estimated input tokens.
	tokens() int
}

// apiError is an error answer.
type apiError struct {
	status  int
	message string
	param   string // OpenAI's "param"; empty sends null
	code    string // OpenAI's "code"; empty uses the status's
}

// request is what the APIs need to know about one request.
type request struct {
	n            int    // the turn number, from 1
	model        string // the request's "model", or "fake-model"
	usage        Usage  // the request's accounting, output included
	includeUsage bool   // OpenAI stream_options.include_usage
	prompt       prompt // the parsed prompt, after account
}

func newServer(t testing.TB, a api, opts Options, turns []Turn) *Server {
	t.Helper()
	s := &Server{
		t: t, api: a, opts: opts, quit: make(chan struct{}),
		turns: append([]Turn(nil), turns...), respond: opts.Respond,
	}
	s.opts.Respond = nil
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		close(s.quit)
		s.srv.Close()
	})
	return s
}

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// SetRespond replaces [Options.Respond]: f answers every request that finds
// no scripted turn left from now on. A nil f makes running out of script a
// test error again.
func (s *Server) SetRespond(f func(r Recorded) Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = f
}

// ModelInfoRequests returns how many model-information requests the server
// answered: GET /v1/models/{id} (Anthropic's Models API, with
// max_input_tokens the server's ContextWindow) and GET /v1/models (an
// OpenAI model list, which names no model). They are not in Requests.
func (s *Server) ModelInfoRequests() int { return int(s.modelInfo.Load()) }

// Requests returns every request received so far, in order, including those
// that got an error. The result is a copy; its elements share Body, Header
// and JSON with the server's record, which is never modified.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

// AwaitRequests waits until the server has received at least n requests
// (as Requests counts them), waking on each, and reports whether it had
// before d passed.
func (s *Server) AwaitRequests(d time.Duration, n int) bool {
	return s.received.Await(d, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.requests) >= n
	})
}

// TitleRequests returns the requests for a session's title received so far
// (see [Options.Title]), in order, each with its Status and Usage.
func (s *Server) TitleRequests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.titles...)
}

// Usage returns the sum of every request's [Recorded.Usage] so far.
func (s *Server) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var u Usage
	for _, r := range s.requests {
		u = u.add(r.Usage)
	}
	return u
}

// take records rec and, if serve, takes the next turn: a scripted one, or a
// turn number and the Respond function to ask for the turn. n is the turn's
// number, or 0 if there is none; seq is the request's number. Both count
// from 1.
func (s *Server) take(rec Recorded, serve bool) (turn Turn, respond func(Recorded) Turn, n, seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
	s.received.Notify()
	seq = len(s.requests)
	switch {
	case !serve:
		return Turn{}, nil, 0, seq
	case len(s.turns) > 0:
		turn = s.turns[0]
		s.turns = s.turns[1:]
	case s.respond != nil:
		respond = s.respond
	default:
		return Turn{}, nil, 0, seq
	}
	s.served++
	return turn, respond, s.served, seq
}

// takeTitle records rec, a title request, and returns its turn and its
// number, negative (settle tells it from a scripted request's by that).
func (s *Server) takeTitle(rec Recorded) (turn Turn, seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.titles = append(s.titles, rec)
	text := s.opts.Title
	if text == "" {
		text = "Fake session title"
	}
	return Turn{Text: text}, -len(s.titles)
}

// settle records the answer to request seq (negative: title request -seq).
func (s *Server) settle(seq, status int, u Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.requests
	if seq < 0 {
		recs, seq = s.titles, -seq
	}
	recs[seq-1].Status = status
	recs[seq-1].Usage = u
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	if r.Method == http.MethodGet && (r.URL.Path == "/v1/models" || strings.HasPrefix(r.URL.Path, "/v1/models/")) {
		s.modelInfo.Add(1)
		writeJSON(w, http.StatusOK, s.api.modelInfo(strings.TrimPrefix(r.URL.Path, "/v1/models/"), s.opts.ContextWindow))
		return
	}
	rec := Recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if err := json.Unmarshal(body, &rec.JSON); err != nil {
		rec.JSON = nil
	}
	var fields struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(body, &fields) // a bad body still gets the scripted turn
	model := fields.Model
	if model == "" {
		model = "fake-model"
	}

	onPath := r.Method == http.MethodPost && r.URL.Path == s.api.path()
	var p prompt
	var refusal *apiError
	if rt, ok := s.api.(router); ok && r.Method == http.MethodPost {
		if m, stream, routed := rt.route(r); routed {
			onPath, model, fields.Stream = true, m, stream
			refusal = rt.routeError(r, stream)
		}
	}
	if onPath && refusal == nil {
		p, refusal = s.api.parse(model, body, r.Header)
		if window := s.opts.ContextWindow; refusal == nil && window > 0 && p.tokens() > window {
			refusal = s.api.tooLong(p.tokens(), window)
		}
	}
	var turn Turn
	var respond func(Recorded) Turn
	var n, seq int
	reqID := ""
	if onPath && refusal == nil && r.Header.Get(gateway.PurposeHeader) == gateway.PurposeTitle {
		turn, seq = s.takeTitle(rec)
		n, reqID = 1, fmt.Sprintf("req_fake_title_%d", -seq)
	} else {
		turn, respond, n, seq = s.take(rec, onPath && refusal == nil)
		reqID = fmt.Sprintf("req_fake_%d", seq)
	}
	w.Header().Set("request-id", reqID)   // Anthropic
	w.Header().Set("x-request-id", reqID) // OpenAI
	switch {
	case !onPath:
		msg := fmt.Sprintf("fakemodel: no route for %s %s (this fake serves POST %s)", r.Method, r.URL.Path, s.api.path())
		s.settle(seq, http.StatusNotFound, Usage{})
		writeJSON(w, http.StatusNotFound, s.api.errorBody(&apiError{status: http.StatusNotFound, message: msg}, reqID))
		return
	case refusal != nil:
		s.settle(seq, refusal.status, Usage{})
		writeJSON(w, refusal.status, s.api.errorBody(refusal, reqID))
		return
	case n == 0:
		msg := fmt.Sprintf("fakemodel: no scripted turn left for request %d (%s %s)", seq, r.Method, r.URL.Path)
		s.t.Errorf("%s", msg)
		s.settle(seq, http.StatusInternalServerError, Usage{})
		w.Header().Set("x-should-retry", "false")
		writeJSON(w, http.StatusInternalServerError, s.api.errorBody(&apiError{status: http.StatusInternalServerError, message: msg}, reqID))
		return
	}
	if respond != nil {
		turn = respond(rec)
	}

	req := &request{n: n, model: model, includeUsage: fields.StreamOptions.IncludeUsage, prompt: p}
	if turn.Status != 0 {
		s.settle(seq, turn.Status, Usage{})
	} else {
		req.usage = s.api.account(p, s.opts.Now())
		req.usage.OutputTokens += outputTokens(resolve(turn, n, ""))
		s.settle(seq, http.StatusOK, req.usage)
	}

	if turn.Status != 0 || !fields.Stream {
		s.pause(r, turn.Delay)
		if turn.Hang {
			s.pause(r, -1)
		}
		if turn.Status != 0 {
			s.writeError(w, turn, reqID)
			return
		}
		writeJSON(w, http.StatusOK, s.api.message(turn, req))
		return
	}

	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, ev := range s.api.stream(turn, req) {
		s.pause(r, turn.Delay)
		if _, err := w.Write(ev.encode()); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if i == 0 && turn.Hang {
			s.pause(r, -1)
		}
	}
}

// pause sleeps for d, or forever if d is negative. If the client goes away or
// the server is closed first, it aborts the response (the client, if still
// there, sees the connection cut rather than a clean end) by panicking with
// http.ErrAbortHandler, which net/http recovers without logging.
func (s *Server) pause(r *http.Request, d time.Duration) {
	if d == 0 && r.Context().Err() == nil {
		return
	}
	var timeout <-chan time.Time
	if d >= 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-timeout:
		if r.Context().Err() == nil {
			return
		}
	case <-r.Context().Done():
	case <-s.quit:
	}
	panic(http.ErrAbortHandler)
}

func (s *Server) writeError(w http.ResponseWriter, turn Turn, reqID string) {
	msg := turn.Text
	if msg == "" {
		msg = fmt.Sprintf("fakemodel: scripted %d %s", turn.Status, http.StatusText(turn.Status))
	}
	if retryable(turn.Status) {
		w.Header().Set("retry-after", "0")
		w.Header().Set("retry-after-ms", "0")
	}
	writeJSON(w, turn.Status, s.api.errorBody(&apiError{status: turn.Status, message: msg}, reqID))
}
