package provider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// The API follows the base URL unless the options name one.
func TestOpenAI_APIByBaseURL(t *testing.T) {
	for _, tt := range []struct {
		baseURL, api, want string
	}{
		{"", "", openai.APIResponses},
		{"https://api.openai.com/v1", "", openai.APIResponses},
		{"http://127.0.0.1:11434/v1", "", openai.APIChat},
		{"", openai.APIChat, openai.APIChat},
		{"http://127.0.0.1:8000/v1", openai.APIResponses, openai.APIResponses},
	} {
		if got := openai.New(&provider.Options{BaseURL: tt.baseURL, API: tt.api}).API(); got != tt.want {
			t.Errorf("base URL %q, API %q: %s, want %s", tt.baseURL, tt.api, got, tt.want)
		}
	}
}

func responsesProvider(url, model string) *openai.Provider {
	return openai.New(&provider.Options{Model: model, APIKey: "k", BaseURL: url + "/v1", API: openai.APIResponses})
}

func user(text string) gateway.Message {
	return gateway.Message{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(text)}}
}

// Reasoning items come back in the assistant message, survive the store's
// JSON, and go back before the function call they came with, to the model
// that made them only.
func TestOpenAIResponses_ReasoningKeptAcrossTurns(t *testing.T) {
	s := fakemodel.NewOpenAIResponses(t,
		fakemodel.Turn{Thinking: "I should echo.", ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "mcp__srv__echo", Args: `{"message":"hi"}`}}},
		fakemodel.Turn{Text: "Done."},
		fakemodel.Turn{Text: "Other model."},
	)
	p := responsesProvider(s.URL, "gpt-test")
	rec := &recorder{}
	first, err := p.Complete(t.Context(), &gateway.Request{Messages: []gateway.Message{user("echo hi")}}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if rec.count(gateway.EventThoughtDelta) < 1 || first.Message.Thinking != "I should echo." || len(first.Message.ToolCalls) != 1 {
		t.Fatalf("first response %+v, %d thought deltas", first.Message, rec.count(gateway.EventThoughtDelta))
	}
	stored, _ := json.Marshal(first.Message)
	var assistant gateway.Message
	if err := json.Unmarshal(stored, &assistant); err != nil {
		t.Fatal(err)
	}
	history := []gateway.Message{user("echo hi"), assistant,
		{Role: gateway.RoleTool, ToolCallID: "call_1", ToolName: "mcp__srv__echo", Result: &gateway.Result{Content: []gateway.Content{gateway.TextContent("Echo: hi")}}}}
	if _, err := p.Complete(t.Context(), &gateway.Request{Messages: history}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	got := conversation(s.Requests()[1])
	reasoning := `{"encrypted_content":null,"id":"rs_fake_1","summary":[{"text":"I should echo.","type":"summary_text"}],"type":"reasoning"}`
	call := `{"arguments":"{\"message\":\"hi\"}","call_id":"call_1","name":"mcp__srv__echo","type":"function_call"}`
	if !strings.Contains(got, reasoning+","+call) {
		t.Errorf("second request does not send the reasoning item back before its call:\n%s", got)
	}
	// Another model does not get this model's reasoning.
	if _, err := responsesProvider(s.URL, "gpt-other").Complete(t.Context(), &gateway.Request{Messages: history}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	if got := conversation(s.Requests()[2]); strings.Contains(got, "rs_fake_1") || !strings.Contains(got, call) {
		t.Errorf("another model's request: %s", got)
	}
}

// prompt_cache_key is the request's CacheKey, and the usage the fake
// reports (cached tokens by OpenAI's rules) maps to gateway.Usage.
func TestOpenAIResponses_CacheKeyAndUsage(t *testing.T) {
	s := fakemodel.NewOpenAIResponses(t, fakemodel.Turn{Thinking: "hmm", Text: "one"}, fakemodel.Turn{Text: "two"})
	p := responsesProvider(s.URL, "gpt-test")
	system := strings.Repeat("A stable system prompt. ", 300) // about 1,800 tokens
	history := []gateway.Message{user("first")}
	var usages []gateway.Usage
	for range 2 {
		resp, err := p.Complete(t.Context(), &gateway.Request{System: system, Messages: history, CacheKey: "session-hash"}, func(gateway.Event) {})
		if err != nil {
			t.Fatal(err)
		}
		usages = append(usages, resp.Usage)
		history = append(history, resp.Message, user("next"))
	}
	for i, r := range s.Requests() {
		if r.JSON["prompt_cache_key"] != "session-hash" || r.JSON["instructions"] != system {
			t.Errorf("request %d: prompt_cache_key %v, instructions set %v", i+1, r.JSON["prompt_cache_key"], r.JSON["instructions"] == system)
		}
		u := usages[i]
		if u.InputTokens != int64(r.Usage.InputTokens) || u.CacheReadTokens != int64(r.Usage.CacheReadTokens) || u.OutputTokens != int64(r.Usage.OutputTokens) || u.Requests != 1 {
			t.Errorf("request %d: usage %+v, the fake accounted %+v", i+1, u, r.Usage)
		}
	}
	if usages[0].CacheReadTokens != 0 || usages[1].CacheReadTokens < 1024 || usages[0].ThoughtTokens != 1 {
		t.Errorf("usages %+v: want no cache, then a cached prefix; one reasoning token", usages)
	}
}

// model.images false: Chat Completions gets the image as a note in the
// tool message and no user message with it; a prompt's image is a note.
func TestOpenAIChat_NoImages(t *testing.T) {
	s := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "ok"})
	p := openai.New(&provider.Options{Model: "text-only", APIKey: "k", BaseURL: s.URL + "/v1", NoImages: true})
	img := gateway.Content{Type: gateway.ContentImage, Data: []byte("PNGDATA"), MIMEType: "image/png"}
	history := []gateway.Message{
		{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("look"), img}},
		{Role: gateway.RoleAssistant, ToolCalls: []gateway.ToolCall{{ID: "call_1", Name: "image", Args: map[string]any{}}}},
		{Role: gateway.RoleTool, ToolCallID: "call_1", ToolName: "image", Result: &gateway.Result{Content: []gateway.Content{img}}},
	}
	if _, err := p.Complete(t.Context(), &gateway.Request{Messages: history}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	got := conversation(s.Requests()[0])
	if strings.Contains(got, "image_url") || strings.Count(got, "[image: image/png, 7 bytes; not shown to the model]") != 2 {
		t.Errorf("request: %s", got)
	}
}

// TestOpenAI_ImageTurnTokens measures, with the fakes' accounting, a turn
// in which a tool returns an image, and the next turn: Chat Completions
// before issue 35 (the image a note: the same request as NoImages), after
// (the image in a user message), and the Responses API (the image in the
// function_call_output). Run with -v for the table.
func TestOpenAI_ImageTurnTokens(t *testing.T) {
	system := strings.Repeat("A stable system prompt. ", 300)
	for _, tc := range []struct {
		name string
		fake func(testing.TB, ...fakemodel.Turn) *fakemodel.Server
		opts provider.Options
	}{
		{"chat, before (image as a note)", fakemodel.NewOpenAI, provider.Options{NoImages: true}},
		{"chat, after (image in a user message)", fakemodel.NewOpenAI, provider.Options{}},
		{"responses (image in function_call_output)", fakemodel.NewOpenAIResponses, provider.Options{API: openai.APIResponses}},
	} {
		s := tc.fake(t,
			fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_1", Name: "mcp__srv__image"}}},
			fakemodel.Turn{Text: "A picture."},
			fakemodel.Turn{Text: "Still a picture."},
		)
		o := tc.opts
		o.Model, o.APIKey, o.BaseURL = "gpt-test", "k", s.URL+"/v1"
		r, _ := newRunner(openai.New(&o))
		for _, prompt := range []string{"show me the image", "and now?"} {
			if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", System: system, Message: []gateway.Content{gateway.TextContent(prompt)}}, func(gateway.Event) {}); err != nil {
				t.Fatal(err)
			}
		}
		reqs := s.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%s: %d requests", tc.name, len(reqs))
		}
		for i, rq := range reqs {
			t.Logf("%-42s request %d: input %5d uncached + %5d cached, output %d", tc.name, i+1, rq.Usage.InputTokens, rq.Usage.CacheReadTokens, rq.Usage.OutputTokens)
		}
		if reqs[1].Usage.CacheReadTokens < 1024 || reqs[2].Usage.CacheReadTokens < reqs[1].Usage.CacheReadTokens {
			t.Errorf("%s: the prefix is not cached across requests: %+v", tc.name, reqs)
		}
	}
}
