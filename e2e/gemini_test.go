package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// TestGemini_ToolImageReachesTheModel: the built agent with model
// gemini:gemini-2.5-flash (its key in GEMINI_API_KEY, its base URL the fake
// Gemini API) calls the fixture's image tool; the model's next request has
// the tool's PNG as an inlineData part beside the functionResponse, in the
// same user turn, and every turn ends with a usage_update of the tokens the
// fake counted (implicit caching included) at Gemini 2.5 Flash's list price.
func TestGemini_ToolImageReachesTheModel(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewGemini(t, // the cache minimum is Flash's, 1,024 tokens
		fakemodel.Turn{Thinking: "The user wants the picture.", Text: "Let me look.", ToolCalls: []fakemodel.ToolCall{{Name: "mcp__fixture__image"}}},
		fakemodel.Turn{Text: "It is a single red pixel."},
		fakemodel.Turn{Text: "You are welcome."},
	)
	cfg := filepath.Join(t.TempDir(), "config.json")
	data, _ := json.Marshal(map[string]any{
		"model":       map[string]any{"provider": "gemini", "name": "gemini-2.5-flash", "baseURL": fake.URL},
		"permissions": map[string]any{"allow": []string{"mcp__fixture__image"}},
	})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgentWith(t, []string{"GEMINI_API_KEY=test-key"}, "--config", cfg)
	sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""))
	u := &usageCheck{t: t, fake: fake, sid: sid, size: 1_048_576, price: price{0.3, 2.5, 0.03, 0}}

	res, out := a.promptFull(sid, "show me the picture")
	u.turn("the image turn", res, out)
	if got := text(out); got != "Let me look.It is a single red pixel." {
		t.Errorf("text %q", got)
	}
	end := finalToolUpdate(t, out)
	if len(end.Content) < 2 || end.Content[1].Content.Content.Image == nil {
		t.Fatalf("the tool's result has no image:\n%s", dump(out))
	}
	png := end.Content[1].Content.Content.Image.Data // base64, as ACP carries it

	rs := fake.Requests()
	if len(rs) != 2 {
		t.Fatalf("%d model requests, want 2", len(rs))
	}
	for i, r := range rs {
		if r.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || r.Header.Get("x-goog-api-key") != "test-key" {
			t.Errorf("request %d: %s with key %q", i+1, r.Path, r.Header.Get("x-goog-api-key"))
		}
	}
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string `json:"text"`
				FunctionCall *struct {
					ID, Name string
				} `json:"functionCall"`
				FunctionResponse *struct {
					ID, Name string
					Response map[string]any
				} `json:"functionResponse"`
				InlineData *struct {
					MIMEType string `json:"mimeType"`
					Data     string `json:"data"`
				} `json:"inlineData"`
				ThoughtSignature string `json:"thoughtSignature"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(rs[1].Body, &req); err != nil {
		t.Fatal(err)
	}
	if n := len(req.Contents); n != 3 {
		t.Fatalf("the second request has %d contents, want the prompt, the call and the result:\n%s", n, rs[1].Body)
	}
	call, result := req.Contents[1], req.Contents[2]
	if call.Role != "model" || len(call.Parts) != 2 || call.Parts[1].FunctionCall == nil || call.Parts[1].FunctionCall.Name != "mcp__fixture__image" ||
		call.Parts[1].ThoughtSignature != base64.StdEncoding.EncodeToString([]byte("fake-signature-1")) {
		t.Errorf("the model's turn goes back as %+v", call)
	}
	if result.Role != "user" || len(result.Parts) != 2 {
		t.Fatalf("the result's turn: %+v", result)
	}
	fr, img := result.Parts[0].FunctionResponse, result.Parts[1].InlineData
	if fr == nil || fr.Name != "mcp__fixture__image" || fr.ID == "" || fr.ID != call.Parts[1].FunctionCall.ID {
		t.Errorf("functionResponse %+v for call %+v", fr, call.Parts[1].FunctionCall)
	}
	if img == nil || img.MIMEType != "image/png" || img.Data != png {
		t.Errorf("inlineData %+v, want the tool's PNG %s", img, png)
	}

	res, out = a.promptFull(sid, "thanks")
	u.turn("thanks", res, out)
	for i, r := range fake.Requests() {
		t.Logf("request %d: %d uncached + %d cached input tokens, %d output tokens", i+1, r.Usage.InputTokens, r.Usage.CacheReadTokens, r.Usage.OutputTokens)
	}
	if r := fake.Requests()[2].Usage; r.CacheReadTokens == 0 {
		t.Errorf("the third request read nothing from the implicit cache: %+v", r)
	}
}
