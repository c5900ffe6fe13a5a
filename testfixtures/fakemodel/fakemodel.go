// Package fakemodel provides fake model API servers for tests: an Anthropic
// Messages API ([NewAnthropic]) and an OpenAI Chat Completions API
// ([NewOpenAI]). Each plays scripted [Turn]s, one per request, in the
// streaming wire format of the real API closely enough that the official Go
// SDKs (anthropic-sdk-go, openai-go) parse and accumulate it, and records
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
//
// Wire references:
// https://docs.anthropic.com/en/api/messages-streaming,
// https://platform.openai.com/docs/api-reference/chat-streaming.
package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// A Turn is one scripted model response. The zero Turn is an empty answer
// that ends the turn ("end_turn").
type Turn struct {
	// Thinking, if non-empty, is streamed first: as a thinking block with
	// thinking_delta events and one signature_delta (Anthropic), or as
	// delta.reasoning_content fragments (OpenAI; the field DeepSeek, vLLM and
	// other OpenAI-compatible servers use).
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
}

// Server is a fake model API on 127.0.0.1, made by [NewAnthropic] or
// [NewOpenAI]. Its methods are safe for concurrent use. Concurrent requests
// take turns in the order the server receives them.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:PORT", with no trailing slash.
	// The Anthropic API is served at URL+"/v1/messages"; the OpenAI API at
	// URL+"/v1/chat/completions" (so OpenAI clients take URL+"/v1" as their
	// base URL).
	URL string

	t    testing.TB
	api  api
	srv  *httptest.Server
	quit chan struct{} // closed at cleanup, before srv.Close; ends every pause

	mu       sync.Mutex
	turns    []Turn     // scripted turns not served yet, in order
	served   int        // number of turns taken so far (the next one is served+1)
	requests []Recorded // every request received, in arrival order
}

// api is what differs between the two fake APIs.
type api interface {
	// path is the one endpoint served, such as "/v1/messages".
	path() string
	// stream returns the events of a streamed answer.
	stream(turn Turn, req *request) []event
	// message returns the body of a non-streaming answer.
	message(turn Turn, req *request) any
	// errorBody returns the JSON error body for status.
	errorBody(status int, message, requestID string) any
}

// request is what the APIs need to know about one request.
type request struct {
	n           int    // the turn number, from 1
	model       string // the request's "model", or "fake-model"
	inputTokens int    // a rough estimate from the body size
	usage       bool   // OpenAI stream_options.include_usage
}

// event is one Server-Sent Event. An empty name sends only a data line.
type event struct {
	name string
	data any // marshalled to JSON, or sent verbatim if a string
}

func newServer(t testing.TB, a api, turns []Turn) *Server {
	t.Helper()
	s := &Server{t: t, api: a, quit: make(chan struct{}), turns: append([]Turn(nil), turns...)}
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

// Requests returns every request received so far, in order, including those
// that got an error. The result is a copy; its elements share Body, Header
// and JSON with the server's record, which is never modified.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

// record stores the request and takes the next turn if it is for the served
// endpoint (ok). n is the turn's number, or 0 if no turn is left; seq is the
// request's number. Both count from 1.
func (s *Server) record(r *http.Request, body []byte) (turn Turn, n, seq int, ok bool) {
	rec := Recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if err := json.Unmarshal(body, &rec.JSON); err != nil {
		rec.JSON = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
	seq = len(s.requests)
	if r.Method != http.MethodPost || r.URL.Path != s.api.path() {
		return Turn{}, 0, seq, false
	}
	if len(s.turns) == 0 {
		return Turn{}, 0, seq, true
	}
	turn = s.turns[0]
	s.turns = s.turns[1:]
	s.served++
	return turn, s.served, seq, true
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	turn, n, seq, ok := s.record(r, body)
	reqID := fmt.Sprintf("req_fake_%d", seq)
	w.Header().Set("request-id", reqID)   // Anthropic
	w.Header().Set("x-request-id", reqID) // OpenAI
	switch {
	case !ok:
		msg := fmt.Sprintf("fakemodel: no route for %s %s (this fake serves POST %s)", r.Method, r.URL.Path, s.api.path())
		writeJSON(w, http.StatusNotFound, s.api.errorBody(http.StatusNotFound, msg, reqID))
		return
	case n == 0:
		msg := fmt.Sprintf("fakemodel: no scripted turn left for request %d (%s %s)", seq, r.Method, r.URL.Path)
		s.t.Errorf("%s", msg)
		w.Header().Set("x-should-retry", "false")
		writeJSON(w, http.StatusInternalServerError, s.api.errorBody(http.StatusInternalServerError, msg, reqID))
		return
	}

	var fields struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(body, &fields) // a bad body still gets the scripted turn
	req := &request{
		n:           n,
		model:       fields.Model,
		inputTokens: tokens(string(body)),
		usage:       fields.StreamOptions.IncludeUsage,
	}
	if req.model == "" {
		req.model = "fake-model"
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
	writeJSON(w, turn.Status, s.api.errorBody(turn.Status, msg, reqID))
}

// retryable reports whether the SDKs retry a response with this status.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(marshal(v), '\n'))
}

// encode renders the event in the text/event-stream format.
func (ev event) encode() []byte {
	var b bytes.Buffer
	if ev.name != "" {
		b.WriteString("event: " + ev.name + "\n")
	}
	b.WriteString("data: ")
	if s, ok := ev.data.(string); ok {
		b.WriteString(s)
	} else {
		b.Write(marshal(ev.data))
	}
	b.WriteString("\n\n")
	return b.Bytes()
}

// marshal encodes v as the APIs do: compact, with <, > and & left as they are.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("fakemodel: " + err.Error()) // only our own values are encoded
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// resolve fills in a turn's defaults: the stop reason, tool call ids (with
// prefix) and empty arguments.
func resolve(turn Turn, n int, prefix string) Turn {
	if turn.StopReason == "" {
		turn.StopReason = "end_turn"
		if len(turn.ToolCalls) > 0 {
			turn.StopReason = "tool_use"
		}
	}
	calls := make([]ToolCall, len(turn.ToolCalls))
	for i, c := range turn.ToolCalls {
		if c.ID == "" {
			c.ID = prefix + strconv.Itoa(n) + "_" + strconv.Itoa(i)
		}
		if c.Args == "" {
			c.Args = "{}"
		}
		calls[i] = c
	}
	turn.ToolCalls = calls
	return turn
}

// outputTokens estimates the tokens a turn produces.
func outputTokens(turn Turn) int {
	n := tokens(turn.Thinking) + tokens(turn.Text)
	for _, c := range turn.ToolCalls {
		n += tokens(c.Name) + tokens(c.Args)
	}
	return max(n, 1)
}

// tokens is a rough token count: one per 4 bytes.
func tokens(s string) int { return (len(s) + 3) / 4 }

// chunks splits s into pieces of at least size bytes (the last may be
// shorter), never inside a UTF-8 character.
func chunks(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		i := min(size, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// pieces splits s into about n pieces, never inside a UTF-8 character.
func pieces(s string, n int) []string {
	return chunks(s, max(1, (len(s)+n-1)/n))
}
