package fakemodel_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

func responsesParams(prompt, key string) responses.ResponseNewParams {
	p := responses.ResponseNewParams{
		Model:        "gpt-fake",
		Instructions: openai.String(strings.Repeat("Stable instructions. ", 300)),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
	}
	if key != "" {
		p.PromptCacheKey = openai.String(key)
	}
	return p
}

// The official SDK reads the stream: named events in sequence, every
// output item (reasoning, message, function calls) in response.completed,
// and the usage.
func TestOpenAIResponses_Stream(t *testing.T) {
	s := fakemodel.NewOpenAIResponses(t, fakemodel.Turn{Thinking: "think first", Text: longText, ToolCalls: twoCalls})
	c := openaiClient(s)
	stream := c.Responses.NewStreaming(t.Context(), responsesParams("hi", ""))
	defer stream.Close()
	var text, args strings.Builder
	var final responses.Response
	seq := int64(-1)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq+1 {
			t.Errorf("%s: sequence_number %d after %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.function_call_arguments.delta":
			args.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != longText || args.String() != twoCalls[0].Args+twoCalls[1].Args {
		t.Errorf("deltas: text %q, arguments %q", text.String(), args.String())
	}
	out := final.Output
	if len(out) != 4 || out[0].Type != "reasoning" || out[0].AsReasoning().Summary[0].Text != "think first" ||
		out[1].AsMessage().Content[0].Text != longText || out[2].AsFunctionCall().CallID != "call_a" || out[3].AsFunctionCall().Name != twoCalls[1].Name {
		t.Errorf("output = %s", final.RawJSON())
	}
	if final.Usage.InputTokens == 0 || final.Usage.OutputTokens == 0 || final.Usage.OutputTokensDetails.ReasoningTokens != 3 {
		t.Errorf("usage = %+v", final.Usage)
	}
}

// Caching by OpenAI's rules, with prompt_cache_key separating caches; a
// max_tokens turn is incomplete; a non-streaming request gets the object.
func TestOpenAIResponses_CacheAndStatus(t *testing.T) {
	s := fakemodel.NewOpenAIResponses(t, fakemodel.Turn{Text: "a"}, fakemodel.Turn{Text: "b"}, fakemodel.Turn{Text: "c"})
	c := openaiClient(s)
	for _, key := range []string{"one", "one", "two"} {
		if _, err := c.Responses.New(t.Context(), responsesParams("hi", key)); err != nil {
			t.Fatal(err)
		}
	}
	reqs := s.Requests()
	if reqs[0].Usage.CacheReadTokens != 0 || reqs[1].Usage.CacheReadTokens < 1024 || reqs[2].Usage.CacheReadTokens != 0 {
		t.Errorf("cached: %d, %d, %d; want 0, a prefix, 0 (another key)", reqs[0].Usage.CacheReadTokens, reqs[1].Usage.CacheReadTokens, reqs[2].Usage.CacheReadTokens)
	}
	s.Push(fakemodel.Turn{Text: "cut", StopReason: "max_tokens"})
	r, err := c.Responses.New(t.Context(), responsesParams("hi", "one"))
	if err != nil || r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("max_tokens: %v %s %+v", err, r.Status, r.IncompleteDetails)
	}
}

// A prompt over the window is refused with OpenAI's error, param "input".
func TestOpenAIResponses_TooLong(t *testing.T) {
	s := fakemodel.NewOpenAIResponsesWith(t, &fakemodel.Options{ContextWindow: 100})
	c := openaiClient(s)
	_, err := c.Responses.New(t.Context(), responsesParams("hi", ""), ooption.WithMaxRetries(0))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" || apiErr.Param != "input" {
		t.Fatalf("err = %v", err)
	}
}
