package fakemodel_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// bigText is about 1,300 tokens: over the default cache minimum on its own.
var bigText = strings.Repeat("All work and no play makes Jack a dull boy. ", 120)

// checkRefused checks that the first request was recorded as refused and
// that the scripted turn went to the second.
func checkRefused(t *testing.T, s *fakemodel.Server) {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if reqs[0].Status != http.StatusBadRequest || reqs[0].Usage != (fakemodel.Usage{}) {
		t.Errorf("refused request: status %d, usage %+v; want 400 and no usage", reqs[0].Status, reqs[0].Usage)
	}
	if u := reqs[1].Usage; reqs[1].Status != http.StatusOK || u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens == 0 {
		t.Errorf("next request: status %d, usage %+v; want 200 and its usage", reqs[1].Status, reqs[1].Usage)
	}
	if s.Usage() != reqs[1].Usage {
		t.Errorf("Server.Usage() = %+v, want the second request's %+v", s.Usage(), reqs[1].Usage)
	}
}

// clock is a settable clock for Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// --- OpenAI -----------------------------------------------------------------

// openaiCanonical returns the prompt text of a recorded OpenAI request by the
// package's rule: the compact JSON of tools, then of each message.
func openaiCanonical(t *testing.T, r fakemodel.Recorded) string {
	t.Helper()
	var req struct {
		Tools    json.RawMessage   `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &req); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, raw := range append([]json.RawMessage{req.Tools}, req.Messages...) {
		if len(raw) > 0 {
			if err := json.Compact(&b, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b.String()
}

// openaiSend sends one user message, streaming or not, and returns the usage
// the SDK reports.
func openaiSend(t *testing.T, s *fakemodel.Server, params openai.ChatCompletionNewParams, stream bool) (openai.CompletionUsage, error) {
	t.Helper()
	c := openaiClient(s)
	if !stream {
		cc, err := c.Chat.Completions.New(t.Context(), params)
		if err != nil {
			return openai.CompletionUsage{}, err
		}
		return cc.Usage, nil
	}
	st := c.Chat.Completions.NewStreaming(t.Context(), params)
	defer st.Close()
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	return acc.Usage, st.Err()
}

// respondOK answers every request with "ok".
func respondOK(fakemodel.Recorded) fakemodel.Turn { return fakemodel.Turn{Text: "ok"} }

// checkOpenAIUsage checks that the SDK got the server's record of the last
// request, that its prompt_tokens are the canonical text's, and that
// cached_tokens is cached.
func checkOpenAIUsage(t *testing.T, s *fakemodel.Server, got openai.CompletionUsage, cached int) {
	t.Helper()
	reqs := s.Requests()
	r := reqs[len(reqs)-1]
	prompt := (len(openaiCanonical(t, r)) + 3) / 4
	want := fakemodel.Usage{InputTokens: prompt - cached, CacheReadTokens: cached, OutputTokens: r.Usage.OutputTokens}
	if r.Usage != want || r.Usage.OutputTokens == 0 {
		t.Errorf("usage = %+v, want %+v", r.Usage, want)
	}
	if got.PromptTokens != int64(prompt) || got.PromptTokensDetails.CachedTokens != int64(cached) ||
		got.CompletionTokens != int64(want.OutputTokens) || got.TotalTokens != int64(prompt+want.OutputTokens) {
		t.Errorf("the SDK got prompt_tokens %d, cached_tokens %d, completion_tokens %d, total_tokens %d; want %d, %d, %d, %d",
			got.PromptTokens, got.PromptTokensDetails.CachedTokens, got.CompletionTokens, got.TotalTokens,
			prompt, cached, want.OutputTokens, prompt+want.OutputTokens)
	}
}

func userParams(model, text, key string) openai.ChatCompletionNewParams {
	p := openaiParams(text)
	p.Model = model
	if key != "" {
		p.PromptCacheKey = openai.String(key)
	}
	return p
}

func TestOpenAI_PromptCacheSteps(t *testing.T) {
	// Where the user text starts in the prompt text.
	probe := fakemodel.NewOpenAIWith(t, &fakemodel.Options{Respond: respondOK})
	if _, err := openaiSend(t, probe, openaiParams("PROBE"), false); err != nil {
		t.Fatal(err)
	}
	at := strings.Index(openaiCanonical(t, probe.Requests()[0]), "PROBE")

	for _, tc := range []struct {
		shared int // tokens of the shared prefix
		cached int
	}{
		{1000, 0}, {1023, 0}, {1024, 1024}, {1151, 1024}, {1152, 1152}, {1300, 1280}, {2100, 2048},
	} {
		t.Run(fmt.Sprint(tc.shared), func(t *testing.T) {
			s := fakemodel.NewOpenAIWith(t, &fakemodel.Options{Respond: respondOK})
			prefix := strings.Repeat("x", 4*tc.shared-at)
			for i, tail := range []string{"A and some more", "B and some more"} {
				got, err := openaiSend(t, s, openaiParams(prefix+tail), i == 1)
				if err != nil {
					t.Fatal(err)
				}
				checkOpenAIUsage(t, s, got, []int{0, tc.cached}[i])
			}
		})
	}
}

func TestOpenAI_PromptCacheKeys(t *testing.T) {
	clk := &clock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := fakemodel.NewOpenAIWith(t, &fakemodel.Options{Respond: respondOK, Now: clk.Now})
	text := bigText + bigText // about 2,600 tokens
	for i, step := range []struct {
		wait       time.Duration
		model, key string
		hit        bool
	}{
		{0, "gpt-test", "a", false},
		{0, "gpt-test", "b", false}, // another key
		{0, "gpt-test", "a", true},
		{0, "gpt-test", "", true}, // no key shares with any
		{0, "gpt-other", "", false},
		{4 * time.Minute, "gpt-test", "b", true},
		{5 * time.Minute, "gpt-test", "b", false}, // expired
	} {
		clk.advance(step.wait)
		got, err := openaiSend(t, s, userParams(step.model, text, step.key), i%2 == 0)
		if err != nil {
			t.Fatal(err)
		}
		cached := 0
		if step.hit {
			whole := len(openaiCanonical(t, s.Requests()[i])) / 4
			cached = 1024 + (whole-1024)/128*128 // the whole prompt, in 128-token steps
		}
		checkOpenAIUsage(t, s, got, cached)
	}
}

func TestOpenAI_ContextWindow(t *testing.T) {
	s := fakemodel.NewOpenAIWith(t, &fakemodel.Options{ContextWindow: 1000}, fakemodel.Turn{Text: "ok"})
	_, err := openaiSend(t, s, openaiParams(bigText), true)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v, want an *openai.Error with status 400", err)
	}
	n := (len(openaiCanonical(t, s.Requests()[0])) + 3) / 4
	want := fmt.Sprintf("This model's maximum context length is 1000 tokens. However, your messages resulted in %d tokens. "+
		"Please reduce the length of the messages.", n)
	if apiErr.Message != want || apiErr.Code != "context_length_exceeded" || apiErr.Type != "invalid_request_error" ||
		apiErr.Param != "messages" {
		t.Errorf("error %s, want code context_length_exceeded and message %q", apiErr.RawJSON(), want)
	}
	if _, err := openaiSend(t, s, openaiParams("hi"), true); err != nil {
		t.Fatal(err)
	}
	checkRefused(t, s)
}

func TestOpenAI_UsageOnlyWhenAsked(t *testing.T) {
	s := fakemodel.NewOpenAIWith(t, &fakemodel.Options{Respond: respondOK})
	params := openaiParams(bigText)
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	for _, stream := range []bool{true, false} {
		got, err := openaiSend(t, s, params, stream)
		if err != nil {
			t.Fatal(err)
		}
		reqs := s.Requests()
		r := reqs[len(reqs)-1]
		if stream && got.PromptTokens != 0 {
			t.Errorf("a stream without include_usage reported usage %s", got.RawJSON())
		}
		if !stream && got.PromptTokensDetails.CachedTokens == 0 {
			t.Errorf("non-streaming usage %s, want it with cached_tokens", got.RawJSON())
		}
		if r.Usage.InputTokens+r.Usage.CacheReadTokens == 0 {
			t.Errorf("request %d recorded no usage", len(reqs))
		}
	}
}

// --- Both -------------------------------------------------------------------

// TestServer_Respond checks that Respond answers once the script is
// exhausted, reacting to the request, and that SetRespond replaces it.
func TestServer_Respond(t *testing.T) {
	for _, tc := range []struct {
		name             string
		new              func(testing.TB, *fakemodel.Options, ...fakemodel.Turn) *fakemodel.Server
		path, withTool   string
		toolCall, noTool string // what the answers contain
	}{
		{"anthropic", fakemodel.NewAnthropicWith, "/v1/messages",
			`{"model":"m","tools":[{"name":"read_file","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`,
			`"name":"read_file"`, `"text":"no tools"`},
		{"openai", fakemodel.NewOpenAIWith, "/v1/chat/completions",
			`{"model":"m","tools":[{"type":"function","function":{"name":"read_file"}}],"messages":[{"role":"user","content":"hi"}]}`,
			`"name":"read_file"`, `"content":"no tools"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &recordingTB{TB: t}
			var mu sync.Mutex
			var seen []string
			respond := func(r fakemodel.Recorded) fakemodel.Turn {
				mu.Lock()
				seen = append(seen, r.Path)
				mu.Unlock()
				tools, _ := r.JSON["tools"].([]any)
				if len(tools) > 0 && strings.Contains(string(r.Body), `"read_file"`) {
					return fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "read_file", Args: `{"path":"a"}`}}}
				}
				return fakemodel.Turn{Text: "no tools"}
			}
			s := tc.new(rt, &fakemodel.Options{Respond: respond}, fakemodel.Turn{Text: "scripted"})
			for i, step := range []struct{ body, want string }{
				{`{"model":"m"}`, "scripted"},
				{tc.withTool, tc.toolCall},
				{`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, tc.noTool},
			} {
				if status, body := post(t, s.URL+tc.path, step.body); status != 200 || !strings.Contains(body, step.want) {
					t.Errorf("request %d: got %d %s, want 200 with %s", i+1, status, body, step.want)
				}
			}
			mu.Lock()
			if len(seen) != 2 || seen[0] != tc.path {
				t.Errorf("Respond saw %q, want the 2 requests after the script", seen)
			}
			mu.Unlock()
			s.SetRespond(nil)
			if status, _ := post(t, s.URL+tc.path, `{"model":"m"}`); status != http.StatusInternalServerError {
				t.Errorf("after SetRespond(nil): status %d, want 500", status)
			}
			if errs := rt.errors(); len(errs) != 1 || !strings.Contains(errs[0], "no scripted turn left") {
				t.Errorf("t.Errorf calls = %q, want only the one after SetRespond(nil)", errs)
			}
		})
	}
}

func TestUsage_Billed(t *testing.T) {
	u := fakemodel.Usage{InputTokens: 100, CacheWriteTokens: 200, CacheReadTokens: 1000, OutputTokens: 7}
	if got := u.Billed(); got != 450 {
		t.Errorf("Billed() = %v, want 100 + 1.25×200 + 0.1×1000 = 450", got)
	}
}
