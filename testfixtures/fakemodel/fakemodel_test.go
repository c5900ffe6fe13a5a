package fakemodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

const longText = "Hello, wörld! This text is long enough to be split into several deltas. 日本語も."

var twoCalls = []fakemodel.ToolCall{
	{ID: "call_a", Name: "read_file", Args: `{"path":"/tmp/a.txt","limit":10}`},
	{ID: "call_b", Name: "list_dir", Args: `{"path":"/tmp","recursive":true,"pattern":"*.go"}`},
}

// --- Anthropic --------------------------------------------------------------

func anthropicClient(s *fakemodel.Server, opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{
		aoption.WithBaseURL(s.URL), aoption.WithAPIKey("test"), aoption.WithMaxRetries(2),
	}, opts...)...)
}

func anthropicParams(prompt string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
}

// anthropicStream streams one message and accumulates it, counting the deltas.
func anthropicStream(ctx context.Context, t *testing.T, c anthropic.Client, prompt string) (anthropic.Message, map[string]int, error) {
	t.Helper()
	stream := c.Messages.NewStreaming(ctx, anthropicParams(prompt))
	defer stream.Close()
	var msg anthropic.Message
	deltas := map[string]int{}
	for stream.Next() {
		ev := stream.Current()
		if ev.Type == "content_block_delta" {
			deltas[ev.Delta.Type]++
		}
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("Accumulate(%s): %v", ev.Type, err)
		}
	}
	return msg, deltas, stream.Err()
}

func TestAnthropic_Text(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: longText})
	msg, deltas, err := anthropicStream(t.Context(), t, anthropicClient(s), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Content[0].Text != longText {
		t.Errorf("content = %+v, want one text block %q", msg.Content, longText)
	}
	if deltas["text_delta"] < 5 {
		t.Errorf("%d text deltas, want several", deltas["text_delta"])
	}
	if msg.StopReason != anthropic.StopReasonEndTurn || msg.Model != "claude-test" || msg.ID != "msg_fake_1" {
		t.Errorf("stop_reason, model, id = %q, %q, %q", msg.StopReason, msg.Model, msg.ID)
	}
	if msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
		t.Errorf("usage = %+v, want non-zero counts", msg.Usage)
	}
}

func TestAnthropic_ParallelToolCalls(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: "Let me look.", ToolCalls: twoCalls})
	msg, deltas, err := anthropicStream(t.Context(), t, anthropicClient(s), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse {
		t.Errorf("stop_reason = %q, want tool_use", msg.StopReason)
	}
	if len(msg.Content) != 3 {
		t.Fatalf("content = %+v, want text + 2 tool_use", msg.Content)
	}
	for i, want := range twoCalls {
		b := msg.Content[i+1]
		if b.Type != "tool_use" || b.ID != want.ID || b.Name != want.Name {
			t.Errorf("block %d = %s %s %s, want tool_use %s %s", i+1, b.Type, b.ID, b.Name, want.ID, want.Name)
		}
		checkArgs(t, b.Input, want.Args)
	}
	if deltas["input_json_delta"] < 2*3 {
		t.Errorf("%d input_json_delta events, want arguments in several pieces", deltas["input_json_delta"])
	}
}

func TestAnthropic_Thinking(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Thinking: "Let me think about this.", Text: "42"})
	msg, _, err := anthropicStream(t.Context(), t, anthropicClient(s), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[1].Text != "42" {
		t.Fatalf("content = %+v, want thinking + text", msg.Content)
	}
	th := msg.Content[0].AsThinking()
	if th.Thinking != "Let me think about this." || th.Signature == "" {
		t.Errorf("thinking block = %+v, want the thinking and a signature", th)
	}
}

func TestAnthropic_RetryAfter429(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Status: http.StatusTooManyRequests}, fakemodel.Turn{Text: "ok"})
	start := time.Now()
	msg, _, err := anthropicStream(t.Context(), t, anthropicClient(s), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "ok" {
		t.Errorf("content = %+v", msg.Content)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	if d := time.Since(start); d > 400*time.Millisecond {
		t.Errorf("retry took %v; retry-after: 0 should make it immediate", d)
	}
}

func TestAnthropic_Unauthorized(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Status: http.StatusUnauthorized, Text: "invalid x-api-key"})
	_, _, err := anthropicStream(t.Context(), t, anthropicClient(s), "hi")
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v, want an *anthropic.Error with status 401", err)
	}
	if apiErr.Type() != "authentication_error" || !strings.Contains(apiErr.RawJSON(), "invalid x-api-key") {
		t.Errorf("error type %q, body %s", apiErr.Type(), apiErr.RawJSON())
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (401 is not retried)", n)
	}
}

func TestAnthropic_RecordsRequest(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: "ok"})
	if _, _, err := anthropicStream(t.Context(), t, anthropicClient(s), "what is 6*7?"); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/messages" || r.Header.Get("x-api-key") != "test" {
		t.Errorf("request %s %s x-api-key=%q", r.Method, r.Path, r.Header.Get("x-api-key"))
	}
	if r.JSON["model"] != "claude-test" || r.JSON["stream"] != true {
		t.Errorf("model, stream = %v, %v", r.JSON["model"], r.JSON["stream"])
	}
	want := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "what is 6*7?"}}}}
	if !reflect.DeepEqual(r.JSON["messages"], want) {
		t.Errorf("messages = %#v, want %#v", r.JSON["messages"], want)
	}
}

func TestAnthropic_NonStreaming(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Thinking: "hmm", Text: "Calling.", ToolCalls: twoCalls[:1]})
	client := anthropicClient(s)
	msg, err := client.Messages.New(t.Context(), anthropicParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 3 || msg.Content[0].Thinking != "hmm" || msg.Content[1].Text != "Calling." ||
		msg.Content[2].ID != "call_a" || msg.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("message = %s", msg.RawJSON())
	}
	checkArgs(t, msg.Content[2].Input, twoCalls[0].Args)
}

// --- OpenAI -----------------------------------------------------------------

func openaiClient(s *fakemodel.Server) openai.Client {
	return openai.NewClient(ooption.WithBaseURL(s.URL+"/v1"), ooption.WithAPIKey("test"), ooption.WithMaxRetries(2))
}

func openaiParams(prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:         "gpt-test",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

// openaiStream streams one completion and accumulates it; it also collects
// the reasoning_content fragments, which the SDK keeps in ExtraFields.
func openaiStream(ctx context.Context, t *testing.T, c openai.Client, prompt string) (openai.ChatCompletion, string, int, error) {
	t.Helper()
	stream := c.Chat.Completions.NewStreaming(ctx, openaiParams(prompt))
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder
	n := 0
	for stream.Next() {
		chunk := stream.Current()
		n++
		if !acc.AddChunk(chunk) {
			t.Fatalf("AddChunk refused chunk %s", chunk.RawJSON())
		}
		if len(chunk.Choices) > 0 {
			if f, ok := chunk.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
				var s string
				if err := json.Unmarshal([]byte(f.Raw()), &s); err != nil {
					t.Fatalf("reasoning_content %s: %v", f.Raw(), err)
				}
				reasoning.WriteString(s)
			}
		}
	}
	return acc.ChatCompletion, reasoning.String(), n, stream.Err()
}

func TestOpenAI_Text(t *testing.T) {
	s := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: longText})
	cc, _, n, err := openaiStream(t.Context(), t, openaiClient(s), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.Choices) != 1 || cc.Choices[0].Message.Content != longText || cc.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion = %+v", cc.Choices)
	}
	if n < 5 {
		t.Errorf("%d chunks, want several", n)
	}
	if cc.Model != "gpt-test" || cc.ID != "chatcmpl-fake-1" || cc.Usage.TotalTokens == 0 {
		t.Errorf("model, id, usage = %q, %q, %+v", cc.Model, cc.ID, cc.Usage)
	}
}

func TestOpenAI_ParallelToolCalls(t *testing.T) {
	s := fakemodel.NewOpenAI(t, fakemodel.Turn{ToolCalls: twoCalls})
	cc, _, _, err := openaiStream(t.Context(), t, openaiClient(s), "hi")
	if err != nil {
		t.Fatal(err)
	}
	ch := cc.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 2 {
		t.Fatalf("choice = %+v, want 2 tool calls", ch)
	}
	for i, want := range twoCalls {
		tc := ch.Message.ToolCalls[i]
		if tc.ID != want.ID || tc.Type != "function" || tc.Function.Name != want.Name {
			t.Errorf("tool call %d = %s %s %s", i, tc.ID, tc.Type, tc.Function.Name)
		}
		checkArgs(t, []byte(tc.Function.Arguments), want.Args)
	}
}

func TestOpenAI_Thinking(t *testing.T) {
	s := fakemodel.NewOpenAI(t, fakemodel.Turn{Thinking: "Let me think about this.", Text: "42"})
	cc, reasoning, _, err := openaiStream(t.Context(), t, openaiClient(s), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if reasoning != "Let me think about this." || cc.Choices[0].Message.Content != "42" {
		t.Errorf("reasoning, content = %q, %q", reasoning, cc.Choices[0].Message.Content)
	}
}

func TestOpenAI_RetryAfter429(t *testing.T) {
	s := fakemodel.NewOpenAI(t, fakemodel.Turn{Status: http.StatusTooManyRequests}, fakemodel.Turn{Text: "ok"})
	cc, _, _, err := openaiStream(t.Context(), t, openaiClient(s), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if cc.Choices[0].Message.Content != "ok" {
		t.Errorf("content = %q", cc.Choices[0].Message.Content)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestOpenAI_Unauthorized(t *testing.T) {
	s := fakemodel.NewOpenAI(t, fakemodel.Turn{Status: http.StatusUnauthorized})
	_, _, _, err := openaiStream(t.Context(), t, openaiClient(s), "hi")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v, want an *openai.Error with status 401", err)
	}
	if apiErr.Code != "invalid_api_key" || apiErr.Type != "invalid_request_error" || apiErr.Message == "" {
		t.Errorf("error code, type, message = %q, %q, %q", apiErr.Code, apiErr.Type, apiErr.Message)
	}
}

func TestOpenAI_RecordsRequest(t *testing.T) {
	s := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "ok"})
	if _, _, _, err := openaiStream(t.Context(), t, openaiClient(s), "what is 6*7?"); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test" {
		t.Errorf("request %s Authorization=%q", r.Path, r.Header.Get("Authorization"))
	}
	if r.JSON["model"] != "gpt-test" || r.JSON["stream"] != true {
		t.Errorf("model, stream = %v, %v", r.JSON["model"], r.JSON["stream"])
	}
	want := []any{map[string]any{"role": "user", "content": "what is 6*7?"}}
	if !reflect.DeepEqual(r.JSON["messages"], want) {
		t.Errorf("messages = %#v, want %#v", r.JSON["messages"], want)
	}
}

func TestOpenAI_NonStreaming(t *testing.T) {
	s := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "Calling.", ToolCalls: twoCalls[:1], StopReason: "max_tokens"})
	client := openaiClient(s)
	cc, err := client.Chat.Completions.New(t.Context(), openaiParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	ch := cc.Choices[0]
	if ch.Message.Content != "Calling." || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].ID != "call_a" ||
		ch.FinishReason != "length" {
		t.Fatalf("completion = %s", cc.RawJSON())
	}
}

// --- Both -------------------------------------------------------------------

// TestServer_Script checks turn order, Push and the error for a missing turn,
// on both fakes with plain HTTP.
func TestServer_Script(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func(testing.TB, ...fakemodel.Turn) *fakemodel.Server
		path string
	}{
		{"anthropic", fakemodel.NewAnthropic, "/v1/messages"},
		{"openai", fakemodel.NewOpenAI, "/v1/chat/completions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &recordingTB{TB: t}
			s := tc.new(rt, fakemodel.Turn{Text: "one"})
			s.Push(fakemodel.Turn{Text: "two"})
			for _, want := range []string{"one", "two"} {
				if status, body := post(t, s.URL+tc.path, `{"model":"m"}`); status != 200 || !strings.Contains(body, want) {
					t.Errorf("got %d %s, want 200 with %q", status, body, want)
				}
			}
			status, body := post(t, s.URL+tc.path, `{"model":"m","stream":true}`)
			if status != 500 || !strings.Contains(body, "fakemodel: no scripted turn left") {
				t.Errorf("got %d %s, want 500 naming the missing turn", status, body)
			}
			if errs := rt.errors(); len(errs) != 1 || !strings.Contains(errs[0], "no scripted turn left") {
				t.Errorf("t.Errorf calls = %q, want one about the missing turn", errs)
			}
			if status, _ := post(t, s.URL+"/v1/other", `{}`); status != http.StatusNotFound {
				t.Errorf("unknown path: status %d, want 404", status)
			}
			if n := len(s.Requests()); n != 4 {
				t.Errorf("%d requests recorded, want 4", n)
			}
		})
	}
}

// TestServer_CancelMidStream checks that Delay honours the client going away
// and that Hang holds the stream open after its first event, until the client
// goes away or the server is closed.
func TestServer_CancelMidStream(t *testing.T) {
	t.Run("delay", func(t *testing.T) {
		s := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: longText, Delay: 20 * time.Millisecond})
		ctx, cancel := context.WithCancel(t.Context())
		client := anthropicClient(s)
		stream := client.Messages.NewStreaming(ctx, anthropicParams("hi"))
		defer stream.Close()
		if !stream.Next() || stream.Current().Type != "message_start" {
			t.Fatalf("first event: %v", stream.Err())
		}
		cancel()
		for stream.Next() {
		}
		if !errors.Is(stream.Err(), context.Canceled) {
			t.Errorf("stream error = %v, want context.Canceled", stream.Err())
		}
	})
	t.Run("hang until the client goes away", func(t *testing.T) {
		s := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "never sent", Hang: true})
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, _, n, err := openaiStream(ctx, t, openaiClient(s), "hi")
		if n != 1 || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%d chunks, err %v; want the first chunk, then the deadline", n, err)
		}
	})
	done := make(chan error, 1)
	t.Run("hang until the server closes", func(t *testing.T) {
		s := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: "never sent", Hang: true})
		first := make(chan struct{})
		go func() {
			client := anthropicClient(s)
			stream := client.Messages.NewStreaming(context.Background(), anthropicParams("hi"))
			defer stream.Close()
			stream.Next()
			close(first)
			for stream.Next() {
			}
			done <- stream.Err()
		}()
		<-first
	}) // the subtest's cleanup closes the server, which ends the stream
	select {
	case err := <-done:
		if err == nil {
			t.Error("the stream cut by the server's close ended without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the hanging stream outlived its server")
	}
}

// --- helpers ----------------------------------------------------------------

func checkArgs(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("arguments %s: %v", got, err)
		return
	}
	_ = json.Unmarshal([]byte(want), &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("arguments = %s, want %s", got, want)
	}
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// recordingTB records Errorf calls instead of failing the test.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func TestServer_AwaitRequests(t *testing.T) {
	s := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "never sent", Hang: true})
	if s.AwaitRequests(0, 1) {
		t.Fatal("AwaitRequests saw a request before any was sent")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() { // a request that hangs until cancelled
		defer close(done)
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/chat/completions", strings.NewReader(body))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	if !s.AwaitRequests(time.Minute, 1) {
		t.Fatal("AwaitRequests missed the request under way")
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
