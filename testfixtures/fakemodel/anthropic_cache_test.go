package fakemodel_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// --- Anthropic --------------------------------------------------------------

var ephemeral = anthropic.NewCacheControlEphemeralParam()

// userText is a user message of one text block, a breakpoint if cached.
func userText(text string, cached bool) anthropic.MessageParam {
	b := anthropic.TextBlockParam{Text: text}
	if cached {
		b.CacheControl = ephemeral
	}
	return anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfText: &b})
}

// cachedParams is a request with a breakpoint on its one tool (a prefix under
// the minimum) and on its system prompt (bigText), then msgs.
func cachedParams(msgs ...anthropic.MessageParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:         "read_file",
			Description:  anthropic.String("Reads a file."),
			InputSchema:  anthropic.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}},
			CacheControl: ephemeral,
		}}},
		System:   []anthropic.TextBlockParam{{Text: bigText, CacheControl: ephemeral}},
		Messages: msgs,
	}
}

// anthropicSend sends params, streaming or not, and returns the usage the
// SDK reports.
func anthropicSend(t *testing.T, c anthropic.Client, params anthropic.MessageNewParams, stream bool) (anthropic.Usage, error) {
	t.Helper()
	if !stream {
		msg, err := c.Messages.New(t.Context(), params)
		if err != nil {
			return anthropic.Usage{}, err
		}
		return msg.Usage, nil
	}
	s := c.Messages.NewStreaming(t.Context(), params)
	defer s.Close()
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatalf("Accumulate: %v", err)
		}
	}
	return msg.Usage, s.Err()
}

// anthropicBlockTokens returns the tokens of each block of a recorded
// Anthropic request by the package's rule: tools, system blocks, then each
// message's content blocks, each one token per 4 bytes of its compact JSON.
func anthropicBlockTokens(t *testing.T, r fakemodel.Recorded) []int {
	t.Helper()
	var req struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &req); err != nil {
		t.Fatal(err)
	}
	var out []int
	add := func(raw json.RawMessage) {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, (b.Len()+3)/4)
	}
	split := func(raw json.RawMessage) {
		var list []json.RawMessage
		if len(raw) == 0 {
			return
		} else if raw[0] != '[' {
			add(raw)
		} else if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatal(err)
		}
		for _, b := range list {
			add(b)
		}
	}
	for _, b := range req.Tools {
		add(b)
	}
	split(req.System)
	for _, m := range req.Messages {
		split(m.Content)
	}
	return out
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// checkAnthropicUsage checks that the SDK got the server's record of the
// last request, and that it is want (output aside).
func checkAnthropicUsage(t *testing.T, s *fakemodel.Server, got anthropic.Usage, want fakemodel.Usage) {
	t.Helper()
	reqs := s.Requests()
	rec := reqs[len(reqs)-1].Usage
	sdk := fakemodel.Usage{
		InputTokens: int(got.InputTokens), CacheReadTokens: int(got.CacheReadInputTokens),
		CacheWriteTokens: int(got.CacheCreationInputTokens), OutputTokens: int(got.OutputTokens),
	}
	if sdk != rec {
		t.Errorf("the SDK got usage %+v, the server recorded %+v", sdk, rec)
	}
	want.OutputTokens = rec.OutputTokens
	if rec != want || rec.OutputTokens == 0 {
		t.Errorf("usage = %+v, want %+v", rec, want)
	}
}

func TestAnthropic_PromptCache(t *testing.T) {
	s := fakemodel.NewAnthropicWith(t, nil,
		fakemodel.Turn{Text: "one"}, fakemodel.Turn{Text: "two"}, fakemodel.Turn{Text: "three"}, fakemodel.Turn{Text: "four"})
	c := anthropicClient(s)
	last := func() []int { r := s.Requests(); return anthropicBlockTokens(t, r[len(r)-1]) }

	// 1. Breakpoints on the tool (under the minimum), the system prompt and
	// the message: everything up to the last one is written.
	got, err := anthropicSend(t, c, cachedParams(userText("first question", true)), true)
	if err != nil {
		t.Fatal(err)
	}
	b1 := last()
	checkAnthropicUsage(t, s, got, fakemodel.Usage{CacheWriteTokens: sum(b1)})

	// 2. The same prefix, then more with a 4th breakpoint: the prefix is read,
	// the rest written.
	conv := []anthropic.MessageParam{
		userText("first question", true),
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("one")),
		userText("second question", true),
	}
	got, err = anthropicSend(t, c, cachedParams(conv...), false)
	if err != nil {
		t.Fatal(err)
	}
	b2 := last()
	checkAnthropicUsage(t, s, got, fakemodel.Usage{CacheReadTokens: sum(b1), CacheWriteTokens: sum(b2[3:])})

	// 3. The message breakpoint moves two messages on: the entry at the old
	// position is found by looking back, whatever its cache_control.
	conv = []anthropic.MessageParam{
		userText("first question", false),
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("one")),
		userText("second question", false),
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("two")),
		userText("third question", true),
	}
	got, err = anthropicSend(t, c, cachedParams(conv...), true)
	if err != nil {
		t.Fatal(err)
	}
	b3 := last()
	checkAnthropicUsage(t, s, got, fakemodel.Usage{CacheReadTokens: sum(b3[:5]), CacheWriteTokens: sum(b3[5:])})

	// 4. A breakpoint more than 20 blocks after the last entry: only the
	// system prompt's entry is found.
	var many []anthropic.ContentBlockParamUnion
	for i := range 25 {
		many = append(many, anthropic.NewTextBlock(fmt.Sprintf("part %d", i)))
	}
	many[24].OfText.CacheControl = ephemeral
	conv = append(conv[:len(conv)-1], userText("third question", false),
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("three")), anthropic.NewUserMessage(many...))
	got, err = anthropicSend(t, c, cachedParams(conv...), false)
	if err != nil {
		t.Fatal(err)
	}
	b4 := last()
	checkAnthropicUsage(t, s, got, fakemodel.Usage{CacheReadTokens: sum(b4[:2]), CacheWriteTokens: sum(b4[2:])})

	var total fakemodel.Usage
	for _, r := range s.Requests() {
		total.InputTokens += r.Usage.InputTokens
		total.CacheReadTokens += r.Usage.CacheReadTokens
		total.CacheWriteTokens += r.Usage.CacheWriteTokens
		total.OutputTokens += r.Usage.OutputTokens
	}
	if s.Usage() != total || total.CacheReadTokens == 0 {
		t.Errorf("Server.Usage() = %+v, want the sum %+v", s.Usage(), total)
	}
}

func TestAnthropic_PromptCacheNone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   *fakemodel.Options
		params anthropic.MessageNewParams
	}{
		{"no breakpoint", nil, anthropic.MessageNewParams{
			Model: "claude-test", MaxTokens: 1024,
			System:   []anthropic.TextBlockParam{{Text: bigText}},
			Messages: []anthropic.MessageParam{userText("hi", false)},
		}},
		{"under the minimum", nil, anthropic.MessageNewParams{
			Model: "claude-test", MaxTokens: 1024,
			System:   []anthropic.TextBlockParam{{Text: "Be brief.", CacheControl: ephemeral}},
			Messages: []anthropic.MessageParam{userText("hi", true)},
		}},
		{"under a raised minimum", &fakemodel.Options{MinCacheTokens: 4096}, cachedParams(userText("hi", true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakemodel.NewAnthropicWith(t, tc.opts, fakemodel.Turn{Text: "a"}, fakemodel.Turn{Text: "b"})
			c := anthropicClient(s)
			for _, stream := range []bool{true, false} {
				got, err := anthropicSend(t, c, tc.params, stream)
				if err != nil {
					t.Fatal(err)
				}
				r := s.Requests()
				checkAnthropicUsage(t, s, got, fakemodel.Usage{InputTokens: sum(anthropicBlockTokens(t, r[len(r)-1]))})
			}
		})
	}
}

// anthropicErrorMessage returns the error.message of an Anthropic API error
// with status 400.
func anthropicErrorMessage(t *testing.T, err error) string {
	t.Helper()
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v, want an *anthropic.Error with status 400", err)
	}
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(apiErr.RawJSON()), &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "error" || body.Error.Type != "invalid_request_error" || body.RequestID == "" {
		t.Errorf("error body = %s, want an invalid_request_error", apiErr.RawJSON())
	}
	return body.Error.Message
}

func TestAnthropic_TooManyBreakpoints(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: "ok"})
	c := anthropicClient(s)
	params := cachedParams(userText("a", true), anthropic.NewAssistantMessage(anthropic.NewTextBlock("b")),
		userText("c", true), anthropic.NewAssistantMessage(anthropic.NewTextBlock("d")), userText("e", true))
	_, err := anthropicSend(t, c, params, true)
	if msg := anthropicErrorMessage(t, err); msg != "A maximum of 4 blocks with cache_control may be provided. Found 5." {
		t.Errorf("message = %q", msg)
	}
	if _, err := anthropicSend(t, c, cachedParams(userText("a", true)), true); err != nil {
		t.Fatal(err)
	}
	checkRefused(t, s)
}

func TestAnthropic_ContextWindow(t *testing.T) {
	s := fakemodel.NewAnthropicWith(t, &fakemodel.Options{ContextWindow: 1000}, fakemodel.Turn{Text: "ok"})
	c := anthropicClient(s)
	_, err := anthropicSend(t, c, cachedParams(userText("hi", false)), false)
	msg := anthropicErrorMessage(t, err)
	n := sum(anthropicBlockTokens(t, s.Requests()[0]))
	if want := fmt.Sprintf("prompt is too long: %d tokens > 1000 maximum", n); msg != want || n <= 1000 {
		t.Errorf("message = %q, want %q", msg, want)
	}
	msg1, _, err := anthropicStream(t.Context(), t, c, "hi")
	if err != nil || msg1.Content[0].Text != "ok" || msg1.ID != "msg_fake_1" {
		t.Fatalf("short prompt: %v, %s", err, msg1.RawJSON())
	}
	checkRefused(t, s)
}

func TestAnthropic_CacheExpiry(t *testing.T) {
	oneHour := anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}
	for _, tc := range []struct {
		name  string
		cc    anthropic.CacheControlEphemeralParam
		steps []time.Duration // the time before each request; a negative one expects a miss
	}{
		// 5 minutes, renewed by each read.
		{"default", ephemeral, []time.Duration{-0, 4 * time.Minute, 4 * time.Minute, -5 * time.Minute, time.Minute}},
		{"1h", oneHour, []time.Duration{-0, 59 * time.Minute, -61 * time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
			s := fakemodel.NewAnthropicWith(t, &fakemodel.Options{Now: clk.Now, Respond: func(fakemodel.Recorded) fakemodel.Turn {
				return fakemodel.Turn{Text: "ok"}
			}})
			c := anthropicClient(s)
			params := anthropic.MessageNewParams{
				Model: "claude-test", MaxTokens: 1024,
				System:   []anthropic.TextBlockParam{{Text: bigText, CacheControl: tc.cc}},
				Messages: []anthropic.MessageParam{userText("hi", false)},
			}
			for i, d := range tc.steps {
				clk.advance(max(d, -d))
				if _, err := anthropicSend(t, c, params, false); err != nil {
					t.Fatal(err)
				}
				r := s.Requests()[i]
				b := anthropicBlockTokens(t, r)
				want := fakemodel.Usage{CacheReadTokens: b[0], InputTokens: b[1], OutputTokens: r.Usage.OutputTokens}
				if i == 0 || d < 0 {
					want = fakemodel.Usage{CacheWriteTokens: b[0], InputTokens: b[1], OutputTokens: r.Usage.OutputTokens}
				}
				if r.Usage != want {
					t.Errorf("request %d: usage %+v, want %+v", i+1, r.Usage, want)
				}
			}
		})
	}
}
