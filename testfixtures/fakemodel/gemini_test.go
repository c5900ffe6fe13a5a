package fakemodel_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// geminiClient is the official SDK pointed at s.
func geminiClient(t *testing.T, s *fakemodel.Server) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: s.URL}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// geminiPost sends body to the fake's path and returns the status and body.
func geminiPost(t *testing.T, s *fakemodel.Server, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The SDK reads the fake's stream: thoughts, text, function calls with a
// thought signature, the finish reason and the usage.
func TestGemini_StreamThroughTheSDK(t *testing.T) {
	s := fakemodel.NewGemini(t, fakemodel.Turn{Thinking: "pondering", Text: "Calling now.", ToolCalls: []fakemodel.ToolCall{{Name: "echo", Args: `{"text":"hi"}`}, {ID: "c2", Name: "add"}}})
	var text, thought string
	var calls []*genai.FunctionCall
	var sig []byte
	var last *genai.GenerateContentResponse
	for chunk, err := range geminiClient(t, s).Models.GenerateContentStream(t.Context(), "gemini-x", genai.Text("hello"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		last = chunk
		for _, p := range chunk.Candidates[0].Content.Parts {
			switch {
			case p.FunctionCall != nil:
				calls = append(calls, p.FunctionCall)
				if sig == nil {
					sig = p.ThoughtSignature
				}
			case p.Thought:
				thought += p.Text
			default:
				text += p.Text
			}
		}
	}
	if text != "Calling now." || thought != "pondering" || len(calls) != 2 || calls[0].Args["text"] != "hi" || calls[0].ID != "" || calls[1].ID != "c2" {
		t.Errorf("text %q, thought %q, calls %+v", text, thought, calls)
	}
	if string(sig) != "fake-signature-1" || last.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Errorf("signature %q, finish %q", sig, last.Candidates[0].FinishReason)
	}
	r := s.Requests()[0]
	u := last.UsageMetadata
	if int(u.PromptTokenCount) != r.Usage.InputTokens || int(u.CandidatesTokenCount+u.ThoughtsTokenCount) != r.Usage.OutputTokens ||
		u.ThoughtsTokenCount != 3 || u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount+u.ThoughtsTokenCount {
		t.Errorf("usage %+v, accounted %+v", u, r.Usage)
	}
}

// Implicit caching counts the longest shared prefix in tokens, from
// MinCacheTokens on; a prompt under it is not remembered.
func TestGemini_ImplicitCache(t *testing.T) {
	s := fakemodel.NewGeminiWith(t, &fakemodel.Options{Respond: respondOK})
	c := geminiClient(t, s)
	send := func(text string) *genai.GenerateContentResponseUsageMetadata {
		t.Helper()
		resp, err := c.Models.GenerateContent(t.Context(), "gemini-x", genai.Text(text), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.UsageMetadata
	}
	if u := send("short"); u.CachedContentTokenCount != 0 {
		t.Errorf("first: %+v", u)
	}
	if u := send("short and more"); u.CachedContentTokenCount != 0 {
		t.Errorf("under the minimum: %+v", u)
	}
	if u := send(bigText); u.CachedContentTokenCount != 0 {
		t.Errorf("a new long prompt: %+v", u)
	}
	u := send(bigText + " And then some.")
	shared := (len(`{"parts":[{"text":"`) + len(bigText)) / 4
	if int(u.CachedContentTokenCount) != shared || u.PromptTokenCount <= u.CachedContentTokenCount {
		t.Errorf("the long prompt again: cached %d of %d, want %d", u.CachedContentTokenCount, u.PromptTokenCount, shared)
	}
	if r := s.Requests()[3].Usage; r.CacheReadTokens != shared || r.CacheWriteTokens != 0 {
		t.Errorf("accounted %+v", r)
	}
	// Another model shares nothing.
	resp, err := c.Models.GenerateContent(t.Context(), "gemini-y", genai.Text(bigText+" And then some."), nil)
	if err != nil || resp.UsageMetadata.CachedContentTokenCount != 0 {
		t.Errorf("another model: %v %+v", err, resp.UsageMetadata)
	}
}

func TestGemini_Refusals(t *testing.T) {
	s := fakemodel.NewGeminiWith(t, &fakemodel.Options{ContextWindow: 5}, fakemodel.Turn{Text: "fits"})
	status, body := geminiPost(t, s, "/v1beta/models/m:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"`+strings.Repeat("x", 100)+`"}]}]}`)
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || status != 400 || e.Error.Code != 400 || e.Error.Status != "INVALID_ARGUMENT" ||
		!strings.HasPrefix(e.Error.Message, "The input token count (") || !strings.HasSuffix(e.Error.Message, "exceeds the maximum number of tokens allowed (5).") {
		t.Errorf("%d %s", status, body)
	}
	if status, body := geminiPost(t, s, "/v1beta/models/m:streamGenerateContent", `{}`); status != 400 || !strings.Contains(body, "alt=sse") {
		t.Errorf("without alt=sse: %d %s", status, body)
	}
	if status, _ := geminiPost(t, s, "/v1beta/models/m:countTokens", `{}`); status != 404 {
		t.Errorf("unknown method: %d", status)
	}
	status, body = geminiPost(t, s, "/v1beta/models/m:streamGenerateContent?alt=sse", `{}`)
	if status != 200 || !bytes.Contains([]byte(body), []byte(`data: {"candidates":[{"content":{"parts":[{"text":"fits"}]`)) {
		t.Errorf("%d %s", status, body)
	}
	if rs := s.Requests(); len(rs) != 4 || rs[0].Status != 400 || rs[3].Status != 200 {
		t.Errorf("recorded %d requests", len(rs))
	}
}
