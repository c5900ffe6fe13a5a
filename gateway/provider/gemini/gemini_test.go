package gemini_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/gemini"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// testTools are echo (with a $schema to strip), image (text and a PNG)
// and rootless (a schema that is not an object).
func testTools() []*gateway.Tool {
	return []*gateway.Tool{
		{Name: "mcp__srv__echo", Description: "Echo.", Annotations: gateway.Annotations{ReadOnlyHint: true},
			InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"message":{"type":"string"}},"required":["message"],"additionalProperties":false}`),
			Execute: func(_ context.Context, _ string, args map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
				return gateway.Result{Content: []gateway.Content{gateway.TextContent("Echo: " + args["message"].(string))}}, nil
			}},
		{Name: "mcp__srv__image", Annotations: gateway.Annotations{ReadOnlyHint: true},
			Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
				return gateway.Result{Content: []gateway.Content{gateway.TextContent("a picture"), {Type: gateway.ContentImage, Data: []byte("PNGDATA"), MIMEType: "image/png"}}}, nil
			}},
		{Name: "mcp__srv__rootless", Annotations: gateway.Annotations{ReadOnlyHint: true}, InputSchema: json.RawMessage(`{"type":"array"}`),
			Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
				return gateway.Result{}, nil
			}},
	}
}

type recorder struct {
	mu     sync.Mutex
	events []gateway.Event
}

func (r *recorder) emit(e gateway.Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }

// text joins the deltas of kind.
func (r *recorder) text(kind gateway.EventKind) (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	n := 0
	for _, e := range r.events {
		if e.Kind == kind {
			b.WriteString(e.Text)
			n++
		}
	}
	return b.String(), n
}

func (r *recorder) usage() *gateway.UsageReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Kind == gateway.EventUsage {
			return e.Usage
		}
	}
	return nil
}

func newProvider(url string) *gemini.Provider {
	return gemini.New(&provider.Options{Model: "gemini-test", APIKey: "k", BaseURL: url, MaxRetries: 2})
}

func newRunner(p gateway.Provider) *runner.Runner {
	reg := &gateway.Registry{}
	reg.Set("k", testTools())
	return runner.New(reg, &runner.Options{Models: []gateway.Model{{ID: "m", Provider: p}}})
}

func run(t *testing.T, r *runner.Runner, prompt string) (gateway.StopReason, *recorder, error) {
	t.Helper()
	rec := &recorder{}
	stop, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", System: "be brief", Message: []gateway.Content{gateway.TextContent(prompt)}}, rec.emit)
	return stop, rec, err
}

func userRequest(text string) *gateway.Request {
	return &gateway.Request{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(text)}}}}
}

// field walks v by keys and indexes.
func field(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestGemini_StreamsTextAndThoughtsWithTheRequestShape(t *testing.T) {
	s := fakemodel.NewGemini(t, fakemodel.Turn{Thinking: "hmm, let me think", Text: "Hello there, this is streamed."})
	stop, rec, err := run(t, newRunner(newProvider(s.URL)), "hi")
	text, deltas := rec.text(gateway.EventTextDelta)
	thought, thoughts := rec.text(gateway.EventThoughtDelta)
	if err != nil || stop != gateway.StopEndTurn || text != "Hello there, this is streamed." || deltas < 2 {
		t.Fatalf("%s %v %q in %d deltas", stop, err, text, deltas)
	}
	if thought != "hmm, let me think" || thoughts < 2 {
		t.Errorf("thoughts %q in %d deltas", thought, thoughts)
	}
	r := s.Requests()[0]
	if r.Path != "/v1beta/models/gemini-test:streamGenerateContent" || r.Header.Get("x-goog-api-key") != "k" {
		t.Errorf("path %s, key %q", r.Path, r.Header.Get("x-goog-api-key"))
	}
	if got := field(r.JSON, "systemInstruction", "parts", 0, "text"); got != "be brief" {
		t.Errorf("systemInstruction text = %v", got)
	}
	if got := field(r.JSON, "contents", 0, "parts", 0, "text"); got != "hi" || field(r.JSON, "contents", 0, "role") != "user" {
		t.Errorf("contents = %v", r.JSON["contents"])
	}
	gc := r.JSON["generationConfig"]
	if field(gc, "maxOutputTokens") != float64(provider.DefaultMaxTokens) || field(gc, "thinkingConfig", "includeThoughts") != true {
		t.Errorf("generationConfig = %v", gc)
	}
	decls, _ := field(r.JSON, "tools", 0, "functionDeclarations").([]any)
	if len(decls) != 3 {
		t.Fatalf("functionDeclarations = %v", r.JSON["tools"])
	}
	schemas := map[string]map[string]any{}
	for _, d := range decls {
		schemas[field(d, "name").(string)], _ = field(d, "parametersJsonSchema").(map[string]any)
	}
	echo := schemas["mcp__srv__echo"]
	if _, ok := echo["$schema"]; ok || echo["type"] != "object" || echo["additionalProperties"] != false || len(echo["required"].([]any)) != 1 {
		t.Errorf("echo schema = %v", echo)
	}
	if b, _ := json.Marshal(schemas["mcp__srv__rootless"]); string(b) != `{"properties":{},"type":"object"}` {
		t.Errorf("rootless schema = %s", b)
	}
	// The usage as the fake accounted it, thoughts in the output.
	want := s.Requests()[0].Usage
	u := rec.usage()
	if u == nil || u.Turn.InputTokens != int64(want.InputTokens) || u.Turn.OutputTokens != int64(want.OutputTokens) ||
		u.Turn.ThoughtTokens == 0 || u.Turn.ThoughtTokens >= u.Turn.OutputTokens {
		t.Errorf("usage %+v, fake accounted %+v", u, want)
	}
}

// A tool result's image travels as an inlineData part beside the
// functionResponse parts, in the same user turn; the thought signature of
// a function call goes back on it.
func TestGemini_ToolResultsCarryImagesBesideFunctionResponses(t *testing.T) {
	s := fakemodel.NewGemini(t,
		fakemodel.Turn{Text: "Let me check.", ToolCalls: []fakemodel.ToolCall{{Name: "mcp__srv__echo", Args: `{"message":"hi"}`}}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_2", Name: "mcp__srv__image"}, {ID: "call_3", Name: "mcp__srv__echo", Args: `{"message":"two"}`}}},
		fakemodel.Turn{Text: "All done."},
	)
	stop, rec, err := run(t, newRunner(newProvider(s.URL)), "use the tools")
	if text, _ := rec.text(gateway.EventTextDelta); err != nil || stop != gateway.StopEndTurn || text != "Let me check.All done." {
		t.Fatalf("%s %v %q", stop, err, text)
	}
	rs := s.Requests()
	if len(rs) != 3 {
		t.Fatalf("%d requests", len(rs))
	}
	contents := rs[2].JSON["contents"].([]any)
	if len(contents) != 5 {
		t.Fatalf("contents = %v", contents)
	}
	// The first call had no id from the model: the runner's goes both ways.
	call1 := field(contents, 1, "parts", 1, "functionCall")
	resp1 := field(contents, 2, "parts", 0, "functionResponse")
	if field(call1, "id") == nil || field(call1, "id") != field(resp1, "id") || field(resp1, "name") != "mcp__srv__echo" ||
		field(resp1, "response", "output") != "Echo: hi" {
		t.Errorf("first call %v, its response %v", call1, resp1)
	}
	sig := base64.StdEncoding.EncodeToString([]byte("fake-signature-2"))
	if got := field(contents, 3, "parts", 0, "thoughtSignature"); got != sig || field(contents, 3, "parts", 1, "thoughtSignature") != nil {
		t.Errorf("second model turn's signatures: %v", field(contents, 3, "parts"))
	}
	parts := field(contents, 4, "parts").([]any)
	if field(contents, 4, "role") != "user" || len(parts) != 3 {
		t.Fatalf("the results' turn = %v", field(contents, 4))
	}
	if field(parts, 0, "functionResponse", "id") != "call_2" || field(parts, 1, "functionResponse", "id") != "call_3" ||
		!strings.Contains(field(parts, 0, "functionResponse", "response", "output").(string), "a picture") {
		t.Errorf("function responses = %v", parts[:2])
	}
	if field(parts, 2, "inlineData", "mimeType") != "image/png" || field(parts, 2, "inlineData", "data") != "UE5HREFUQQ==" {
		t.Errorf("image part = %v", parts[2])
	}
}

// A history written by another model (no signature) gets the documented
// dummy signature on its first function call; a failed call's text goes
// under "error".
func TestGemini_ForeignHistory(t *testing.T) {
	s := fakemodel.NewGemini(t, fakemodel.Turn{Text: "ok"})
	p := newProvider(s.URL)
	req := &gateway.Request{Messages: []gateway.Message{
		{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("go")}},
		{Role: gateway.RoleAssistant, ThinkingSignature: "anthropic-sig", Thinking: "t", ToolCalls: []gateway.ToolCall{{ID: "toolu_1", Name: "x", Args: map[string]any{}}}},
		{Role: gateway.RoleTool, ToolCallID: "toolu_1", ToolName: "x", Result: &gateway.Result{Content: []gateway.Content{gateway.TextContent("no such file")}, IsError: true}},
	}}
	if _, err := p.Complete(t.Context(), req, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	c := s.Requests()[0].JSON["contents"]
	if got := field(c, 1, "parts", 0, "thoughtSignature"); got != base64.StdEncoding.EncodeToString([]byte("skip_thought_signature_validator")) {
		t.Errorf("signature = %v", got)
	}
	if got := field(c, 2, "parts", 0, "functionResponse", "response", "error"); got != "no such file" {
		t.Errorf("error response = %v", field(c, 2))
	}
}

// Implicit caching: the second request of a conversation reads the first
// one's prompt from the cache, reported as cachedContentTokenCount and
// read into CacheReadTokens.
func TestGemini_CachedTokens(t *testing.T) {
	s := fakemodel.NewGeminiWith(t, &fakemodel.Options{MinCacheTokens: 64}, fakemodel.Turn{Text: "first"}, fakemodel.Turn{Text: "second"})
	p := newProvider(s.URL)
	long := strings.Repeat("a stable system prompt. ", 40)
	var usages []gateway.Usage
	msgs := []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("one")}}}
	for i := range 2 {
		resp, err := p.Complete(t.Context(), &gateway.Request{System: long, Messages: msgs}, func(gateway.Event) {})
		if err != nil {
			t.Fatal(err)
		}
		usages = append(usages, resp.Usage)
		msgs = append(msgs, resp.Message, gateway.Message{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("more " + string(rune('a'+i)))}})
	}
	for i, r := range s.Requests() {
		want := gateway.Usage{InputTokens: int64(r.Usage.InputTokens), CacheReadTokens: int64(r.Usage.CacheReadTokens), OutputTokens: int64(r.Usage.OutputTokens), Requests: 1}
		if usages[i] != want {
			t.Errorf("request %d: usage %+v, fake accounted %+v", i+1, usages[i], want)
		}
	}
	if usages[0].CacheReadTokens != 0 || usages[1].CacheReadTokens < int64(len(long)/4) {
		t.Errorf("cache reads %d then %d, want 0 then at least the system prompt's %d", usages[0].CacheReadTokens, usages[1].CacheReadTokens, len(long)/4)
	}
	t.Logf("tokens per request (uncached/cached/output): %d/%d/%d, %d/%d/%d", usages[0].InputTokens, usages[0].CacheReadTokens, usages[0].OutputTokens,
		usages[1].InputTokens, usages[1].CacheReadTokens, usages[1].OutputTokens)
}

func TestGemini_Errors(t *testing.T) {
	t.Run("too long", func(t *testing.T) {
		s := fakemodel.NewGeminiWith(t, &fakemodel.Options{ContextWindow: 10})
		_, err := newProvider(s.URL).Complete(t.Context(), userRequest(strings.Repeat("long ", 50)), func(gateway.Event) {})
		var pe *provider.Error
		if !errors.Is(err, provider.ErrPromptTooLong) || !errors.As(err, &pe) || pe.Limit != 10 || pe.Status != http.StatusBadRequest {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("retry then success", func(t *testing.T) {
		s := fakemodel.NewGemini(t, fakemodel.Turn{Status: http.StatusServiceUnavailable}, fakemodel.Turn{Text: "after a retry"})
		resp, err := newProvider(s.URL).Complete(t.Context(), userRequest("hi"), func(gateway.Event) {})
		if err != nil || gateway.PromptText(resp.Message.Content) != "after a retry" || len(s.Requests()) != 2 {
			t.Errorf("%v, %d requests", err, len(s.Requests()))
		}
	})
	for _, tt := range []struct {
		status int
		msg    string
		want   string
		hint   string
	}{
		{http.StatusBadRequest, "API key not valid. Please pass a valid API key.", "gemini: HTTP 400 Bad Request: API key not valid", "set MY_GEMINI_KEY to a valid API key"},
		{http.StatusForbidden, "Method doesn't allow unregistered callers", "gemini: HTTP 403 Forbidden", "MY_GEMINI_KEY"},
		{http.StatusTooManyRequests, "Resource has been exhausted", "gemini: HTTP 429 Too Many Requests: Resource has been exhausted", "rate limited"},
	} {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			s := fakemodel.NewGemini(t, fakemodel.Turn{Status: tt.status, Text: tt.msg})
			p := gemini.New(&provider.Options{Model: "gemini-test", APIKey: "k", APIKeyEnv: "MY_GEMINI_KEY", BaseURL: s.URL, MaxRetries: -1})
			_, err := p.Complete(t.Context(), userRequest("hi"), func(gateway.Event) {})
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Status != tt.status || !strings.Contains(err.Error(), tt.want) || !strings.Contains(pe.Hint, tt.hint) {
				t.Errorf("err = %v (hint %q)", err, pe.Hint)
			}
		})
	}
	t.Run("no key", func(t *testing.T) {
		_, err := gemini.New(&provider.Options{Model: "m"}).Complete(t.Context(), userRequest("hi"), func(gateway.Event) {})
		var pe *provider.Error
		if !errors.Is(err, provider.ErrNoAPIKey) || !errors.As(err, &pe) || !strings.Contains(pe.Hint, "GEMINI_API_KEY") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestGemini_StopReasons(t *testing.T) {
	s := fakemodel.NewGemini(t, fakemodel.Turn{Text: "cut", StopReason: "max_tokens"}, fakemodel.Turn{Text: "no", StopReason: "refusal"})
	r := newRunner(newProvider(s.URL))
	if stop, _, err := run(t, r, "a"); err != nil || stop != gateway.StopMaxTokens {
		t.Errorf("max_tokens: %s %v", stop, err)
	}
	if stop, _, err := run(t, r, "b"); err != nil || stop != gateway.StopRefusal {
		t.Errorf("refusal: %s %v", stop, err)
	}
}

// The key is read per request; thinking off asks for no thoughts; the
// purpose goes as a header; a user's image is an inlineData part.
func TestGemini_PerRequestOptions(t *testing.T) {
	s := fakemodel.NewGemini(t, fakemodel.Turn{Text: "a"}, fakemodel.Turn{Text: "b"})
	key := "first"
	p := gemini.New(&provider.Options{Model: "gemini-2.5-flash", BaseURL: s.URL, APIKeyFunc: func() string { return key }})
	off := false
	req := userRequest("look")
	req.Messages[0].Content = append(req.Messages[0].Content, gateway.Content{Type: gateway.ContentImage, Data: []byte("PNGDATA"), MIMEType: "image/png"})
	if _, err := p.Complete(t.Context(), req, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	key = "second"
	if _, err := p.Complete(t.Context(), &gateway.Request{Messages: req.Messages, Thinking: &off, Purpose: gateway.PurposeSummary, MaxTokens: 100}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	rs := s.Requests()
	if rs[0].Header.Get("x-goog-api-key") != "first" || rs[1].Header.Get("x-goog-api-key") != "second" {
		t.Errorf("keys %q, %q", rs[0].Header.Get("x-goog-api-key"), rs[1].Header.Get("x-goog-api-key"))
	}
	if got := field(rs[0].JSON, "contents", 0, "parts", 1, "inlineData", "data"); got != "UE5HREFUQQ==" {
		t.Errorf("prompt image = %v", field(rs[0].JSON, "contents"))
	}
	gc := rs[1].JSON["generationConfig"]
	if field(gc, "thinkingConfig", "includeThoughts") != nil || field(gc, "thinkingConfig", "thinkingBudget") != float64(0) || field(gc, "maxOutputTokens") != float64(100) {
		t.Errorf("thinking off: generationConfig = %v", gc)
	}
	if rs[1].Header.Get(gateway.PurposeHeader) != gateway.PurposeSummary || rs[0].Header.Get(gateway.PurposeHeader) != "" {
		t.Errorf("purpose headers %q, %q", rs[0].Header.Get(gateway.PurposeHeader), rs[1].Header.Get(gateway.PurposeHeader))
	}
}

// CheckKey reports Gemini's refusal of a key (400 API_KEY_INVALID) as 401,
// what "acp-agent login" refuses, and accepts a key the API takes.
func TestGemini_CheckKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("x-goog-api-key") != "good" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",` +
				`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`))
			return
		}
		_, _ = w.Write([]byte(`{"models":[{"name":"models/gemini-2.5-flash"}]}`))
	}))
	t.Cleanup(srv.Close)
	if err := gemini.CheckKey(t.Context(), provider.Options{APIKey: "good", BaseURL: srv.URL}); err != nil {
		t.Errorf("good key: %v", err)
	}
	err := gemini.CheckKey(t.Context(), provider.Options{APIKey: "bad", BaseURL: srv.URL})
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != http.StatusUnauthorized || !strings.Contains(pe.Hint, "GEMINI_API_KEY") {
		t.Errorf("bad key: %v", err)
	}
}
