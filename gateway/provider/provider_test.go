package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/anthropic"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// providerCase runs the same scripted scenarios against both providers.
type providerCase struct {
	name string
	fake func(t testing.TB, turns ...fakemodel.Turn) *fakemodel.Server
	new  func(baseURL string) gateway.Provider
}

var providerCases = []providerCase{
	{"anthropic", fakemodel.NewAnthropic, func(u string) gateway.Provider {
		return anthropic.New(&provider.Options{Model: "claude-test", APIKey: "k", BaseURL: u, MaxRetries: 2})
	}},
	{"openai", fakemodel.NewOpenAI, func(u string) gateway.Provider {
		return openai.New(&provider.Options{Model: "gpt-test", APIKey: "k", BaseURL: u + "/v1", MaxRetries: 2})
	}},
	{"openai-responses", fakemodel.NewOpenAIResponses, func(u string) gateway.Provider {
		return openai.New(&provider.Options{Model: "gpt-test", APIKey: "k", BaseURL: u + "/v1", MaxRetries: 2, API: openai.APIResponses})
	}},
}

// conversation returns the conversation a recorded request sent: Anthropic's
// and Chat Completions' "messages", the Responses API's "input".
func conversation(r fakemodel.Recorded) string {
	v, ok := r.JSON["messages"]
	if !ok {
		v = r.JSON["input"]
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// testTools are the session's tools: echo (read-only, with a $schema to
// strip), image (returns a PNG) and rootless (a schema that is not an object).
func testTools() []*gateway.Tool {
	return []*gateway.Tool{
		{Name: "mcp__srv__echo", Description: "Echo.", Annotations: gateway.Annotations{ReadOnlyHint: true},
			InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
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
func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.events {
		if e.Kind == gateway.EventTextDelta {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}
func (r *recorder) count(kind gateway.EventKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func newRunner(p gateway.Provider) (*runner.Runner, *gateway.Registry) {
	reg := &gateway.Registry{}
	reg.Set("k", testTools())
	return runner.New(reg, &runner.Options{Models: []gateway.Model{{ID: "m", Provider: p}}}), reg
}

func run(t *testing.T, r *runner.Runner, prompt string) (gateway.StopReason, *recorder, error) {
	t.Helper()
	rec := &recorder{}
	stop, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", System: "be brief", Message: []gateway.Content{gateway.TextContent(prompt)}}, rec.emit)
	return stop, rec, err
}

func TestProviders_TextStreamsInChunks(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			s := pc.fake(t, fakemodel.Turn{Thinking: "hmm, let me think", Text: "Hello there, this is streamed."})
			r, _ := newRunner(pc.new(s.URL))
			stop, rec, err := run(t, r, "hi")
			if err != nil || stop != gateway.StopEndTurn || rec.text() != "Hello there, this is streamed." {
				t.Fatalf("%s %v %q", stop, err, rec.text())
			}
			if rec.count(gateway.EventTextDelta) < 2 || rec.count(gateway.EventThoughtDelta) < 1 {
				t.Errorf("%d text deltas, %d thought deltas: want streaming", rec.count(gateway.EventTextDelta), rec.count(gateway.EventThoughtDelta))
			}
			req := s.Requests()[0].JSON
			tools := req["tools"].([]any)
			if len(tools) != 3 {
				t.Fatalf("tools = %v", tools)
			}
			// Normalized schemas: $schema stripped, a non-object root made permissive.
			var echo, rootless map[string]any
			for _, tool := range tools {
				tm := tool.(map[string]any)
				schema, name := tm["input_schema"], tm["name"]
				switch pc.name {
				case "openai":
					fn := tm["function"].(map[string]any)
					schema, name = fn["parameters"], fn["name"]
				case "openai-responses":
					schema = tm["parameters"]
					if tm["type"] != "function" || tm["strict"] != false {
						t.Errorf("tool %v: want a function tool, strict false", tm)
					}
				}
				switch name {
				case "mcp__srv__echo":
					echo = schema.(map[string]any)
				case "mcp__srv__rootless":
					rootless = schema.(map[string]any)
				}
			}
			if _, ok := echo["$schema"]; ok || echo["type"] != "object" || echo["properties"] == nil || len(echo["required"].([]any)) != 1 {
				t.Errorf("echo schema = %v", echo)
			}
			if b, _ := json.Marshal(rootless); string(b) != `{"properties":{},"type":"object"}` {
				t.Errorf("rootless schema = %s", b)
			}
		})
	}
}

func TestProviders_ToolCallsAndResults(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			s := pc.fake(t,
				fakemodel.Turn{Text: "Let me check.", ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "mcp__srv__echo", Args: `{"message":"hi"}`}}},
				fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_2", Name: "mcp__srv__image", Args: `{}`}, {ID: "call_3", Name: "mcp__srv__echo", Args: `{"message":"two"}`}}},
				fakemodel.Turn{Text: "All done."},
				fakemodel.Turn{Text: "Second answer."},
			)
			r, _ := newRunner(pc.new(s.URL))
			stop, rec, err := run(t, r, "use the tools")
			if err != nil || stop != gateway.StopEndTurn || rec.text() != "Let me check.All done." {
				t.Fatalf("%s %v %q", stop, err, rec.text())
			}
			if n := rec.count(gateway.EventToolEnd); n != 3 {
				t.Errorf("%d tool ends, want 3", n)
			}
			reqs := s.Requests()
			got := conversation(reqs[2])
			// Results go back in request order, the image as the provider can carry it.
			switch pc.name {
			case "anthropic":
				for _, want := range []string{`"tool_use_id":"call_1"`, `"text":"Echo: hi"`, `"tool_use_id":"call_2"`, `"type":"image"`, `"media_type":"image/png"`, `"data":"UE5HREFUQQ=="`, `"tool_use_id":"call_3"`} {
					if !strings.Contains(got, want) {
						t.Errorf("third request lacks %s:\n%s", want, got)
					}
				}
				if strings.Index(got, `"call_2"`) > strings.Index(got, `"tool_use_id":"call_3"`) {
					t.Error("tool results out of request order")
				}
			case "openai":
				// The image follows the tool messages in a user message.
				images := `{"content":[{"text":"The images of the result of tool call call_2 (mcp__srv__image):","type":"text"},` +
					`{"image_url":{"url":"data:image/png;base64,UE5HREFUQQ=="},"type":"image_url"}],"role":"user"}`
				for _, want := range []string{`"tool_call_id":"call_1"`, `"content":"Echo: hi"`, `"tool_call_id":"call_2"`,
					`[image: image/png, 7 bytes; in the user message after the tool results]`, `"tool_call_id":"call_3"`, images} {
					if !strings.Contains(got, want) {
						t.Errorf("third request lacks %s:\n%s", want, got)
					}
				}
				if strings.Index(got, `"tool_call_id":"call_2"`) > strings.Index(got, `"tool_call_id":"call_3"`) {
					t.Error("tool results out of request order")
				}
				if !strings.Contains(got, `"role":"tool","tool_call_id":"call_3"},`+images) {
					t.Errorf("the images' user message is not right after the last tool message:\n%s", got)
				}
			case "openai-responses":
				for _, want := range []string{`{"call_id":"call_1","output":"Echo: hi","type":"function_call_output"}`,
					`{"call_id":"call_2","output":[{"text":"a picture","type":"input_text"},{"detail":"auto","image_url":"data:image/png;base64,UE5HREFUQQ==","type":"input_image"}],"type":"function_call_output"}`,
					`"call_id":"call_3"`} {
					if !strings.Contains(got, want) {
						t.Errorf("third request lacks %s:\n%s", want, got)
					}
				}
				if strings.Index(got, `"call_id":"call_2","output"`) > strings.Index(got, `"call_id":"call_3","output"`) {
					t.Error("tool results out of request order")
				}
			}
			// A second prompt carries the whole history.
			if _, _, err := run(t, r, "and now?"); err != nil {
				t.Fatal(err)
			}
			fourth := conversation(s.Requests()[3])
			for _, want := range []string{"use the tools", "Let me check.", "call_3", "All done.", "and now?"} {
				if !strings.Contains(fourth, want) {
					t.Errorf("second prompt's history lacks %q", want)
				}
			}
		})
	}
}

func TestProviders_RetryAndErrors(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			s := pc.fake(t, fakemodel.Turn{Status: 429}, fakemodel.Turn{Text: "after a retry"})
			r, _ := newRunner(pc.new(s.URL))
			if _, rec, err := run(t, r, "hi"); err != nil || rec.text() != "after a retry" || len(s.Requests()) != 2 {
				t.Errorf("429 then success: %v %q, %d requests", err, rec.text(), len(s.Requests()))
			}

			for _, tt := range []struct {
				status int
				want   string
			}{
				{401, "HTTP 401 Unauthorized"},
				{500, "HTTP 500 Internal Server Error"},
			} {
				s := pc.fake(t, fakemodel.Turn{Status: tt.status, Text: "boom"}, fakemodel.Turn{Status: tt.status, Text: "boom"}, fakemodel.Turn{Status: tt.status, Text: "boom"})
				r, _ := newRunner(pc.new(s.URL))
				_, _, err := run(t, r, "hi")
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Status != tt.status || !strings.Contains(err.Error(), strings.TrimSuffix(pc.name, "-responses")+": HTTP") || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%d: err = %v", tt.status, err)
				}
				if tt.status == 401 && !strings.Contains(pe.Hint, "_API_KEY") {
					t.Errorf("401 does not say which variable to set: %v (hint %q)", err, pe.Hint)
				}
			}
		})
	}
}

func TestProviders_StopReasons(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			s := pc.fake(t, fakemodel.Turn{Text: "cut", StopReason: "max_tokens"}, fakemodel.Turn{Text: "no", StopReason: "refusal"})
			r, _ := newRunner(pc.new(s.URL))
			if stop, _, err := run(t, r, "a"); err != nil || stop != gateway.StopMaxTokens {
				t.Errorf("max_tokens: %s %v", stop, err)
			}
			if stop, _, err := run(t, r, "b"); err != nil || stop != gateway.StopRefusal {
				t.Errorf("refusal: %s %v", stop, err)
			}
		})
	}
}

func TestProviders_PromptContent(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			s := pc.fake(t, fakemodel.Turn{Text: "seen"})
			r, _ := newRunner(pc.new(s.URL))
			msg := []gateway.Content{
				gateway.TextContent("look at these"),
				{Type: gateway.ContentImage, Data: []byte("PNGDATA"), MIMEType: "image/png"},
				{Type: gateway.ContentResource, Resource: &gateway.EmbeddedResource{URI: "file:///src/main.go", Text: "package main"}},
				{Type: gateway.ContentResourceLink, URI: "file:///src/go.mod", Name: "go.mod"},
			}
			if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Message: msg}, func(gateway.Event) {}); err != nil {
				t.Fatal(err)
			}
			body := string(s.Requests()[0].Body)
			want := []string{"look at these", `resource uri=\"file:///src/main.go\"`, `\npackage main\n`, "[resource link: file:///src/go.mod (go.mod)]"}
			switch pc.name {
			case "anthropic":
				want = append(want, `"type":"image"`, `"data":"UE5HREFUQQ=="`)
			case "openai":
				want = append(want, `"image_url":{"url":"data:image/png;base64,UE5HREFUQQ=="}`)
			case "openai-responses":
				want = append(want, `"image_url":"data:image/png;base64,UE5HREFUQQ==","type":"input_image"`)
			}
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Errorf("request lacks %s:\n%s", w, body)
				}
			}
		})
	}
}

func TestAnthropic_ThinkingBudget(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Thinking: "step by step", Text: "42"})
	p := anthropic.New(&provider.Options{Model: "claude-test", APIKey: "k", BaseURL: s.URL, ThinkingBudget: 2048})
	r, _ := newRunner(p)
	_, rec, err := run(t, r, "think")
	if err != nil || rec.count(gateway.EventThoughtDelta) == 0 {
		t.Fatalf("%v, %d thought deltas", err, rec.count(gateway.EventThoughtDelta))
	}
	req := s.Requests()[0].JSON
	th, _ := req["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != float64(2048) || req["max_tokens"].(float64) <= 2048 {
		t.Errorf("thinking = %v, max_tokens = %v", th, req["max_tokens"])
	}
}

// A request turns thinking on or off whatever the options say (the
// session's toggle): on without a configured budget it thinks with
// DefaultThinkingBudget and room above it; a request capped below the
// budget (a compaction summary) does not think.
func TestAnthropic_ThinkingPerRequest(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: "a"}, fakemodel.Turn{Text: "b"}, fakemodel.Turn{Text: "c"})
	p := anthropic.New(&provider.Options{Model: "claude-test", APIKey: "k", BaseURL: s.URL})
	if p.ThinksByDefault() {
		t.Error("thinks by default without a budget")
	}
	on, off := true, false
	for _, req := range []*gateway.Request{
		{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("x")}}}, Thinking: &on},
		{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("x")}}}, Thinking: &off},
		{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("x")}}}, Thinking: &on, MaxTokens: 1000},
	} {
		if _, err := p.Complete(t.Context(), req, func(gateway.Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	rs := s.Requests()
	th, _ := rs[0].JSON["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != float64(provider.DefaultThinkingBudget) || rs[0].JSON["max_tokens"].(float64) <= float64(provider.DefaultThinkingBudget) {
		t.Errorf("thinking on: thinking = %v, max_tokens = %v", th, rs[0].JSON["max_tokens"])
	}
	for i, r := range rs[1:] {
		if _, ok := r.JSON["thinking"]; ok {
			t.Errorf("request %d thinks: %v", i+2, r.JSON["thinking"])
		}
	}
}
