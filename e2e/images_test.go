package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// TestModel_ToolImageReachesOpenAI: the fixture's image tool returns a PNG
// and the model sees it, through the built binary: on the Responses API
// (config model.api "responses") as an input_image in the
// function_call_output, on Chat Completions (a base URL of its own) in a
// user message right after the tool message; with model.images false (a
// text-only model, and what Chat Completions got before issue 35) as a
// note in the tool message. The next turn sends it again from the
// history. Run with -v for each request's tokens.
func TestModel_ToolImageReachesOpenAI(t *testing.T) {
	for _, tc := range []struct {
		name string
		fake func(testing.TB, ...fakemodel.Turn) *fakemodel.Server
		api  string
	}{
		{"responses", fakemodel.NewOpenAIResponses, "responses"},
		{"chat", fakemodel.NewOpenAI, ""},
		{"chat-no-images", fakemodel.NewOpenAI, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := tc.fake(t,
				fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_img", Name: "mcp__fixture__image", Args: `{}`}}},
				fakemodel.Turn{Text: "A one-pixel image."},
				fakemodel.Turn{Text: "Still one pixel."},
			)
			model := map[string]any{"provider": "openai", "name": "gpt-fake"}
			if tc.api != "" {
				model["api"] = tc.api
			}
			if tc.name == "chat-no-images" {
				model["images"] = false
			}
			cfg := writeConfig(t, map[string]any{"model": model})
			a := startAgentWith(t, []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + fake.URL + "/v1"}, "--config", cfg)
			perms := &permissionAnswers{}
			perms.queue("allow_once")
			a.Client.SetPermission(perms.answer)
			sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""))

			stop, out := a.prompt(sid, "show me the image")
			if stop != acpsdk.StopReasonEndTurn || text(out) != "A one-pixel image." {
				t.Fatalf("stop %s, text %q:\n%s", stop, text(out), dump(out))
			}
			end := finalToolUpdate(t, out)
			if *end.Status != acpsdk.ToolCallStatusCompleted || len(end.Content) < 2 || end.Content[1].Content.Content.Image == nil {
				t.Fatalf("the image call:\n%s", dump(out))
			}
			img := end.Content[1].Content.Content.Image
			url := "data:" + img.MimeType + ";base64," + img.Data
			if stop, _ := a.prompt(sid, "and now?"); stop != acpsdk.StopReasonEndTurn {
				t.Fatalf("second turn: %s", stop)
			}

			reqs := fake.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model requests, want 3", len(reqs))
			}
			for i, r := range reqs[1:] {
				checkImageSent(t, tc.name, i+2, r, url)
			}
			for i, r := range reqs {
				t.Logf("%s request %d: input %d uncached + %d cached, output %d", tc.name, i+1, r.Usage.InputTokens, r.Usage.CacheReadTokens, r.Usage.OutputTokens)
			}
		})
	}
}

// checkImageSent checks that request n of api carries the image at url in
// the result of call_img.
func checkImageSent(t *testing.T, api string, n int, r fakemodel.Recorded, url string) {
	t.Helper()
	switch api {
	case "responses":
		if r.Path != "/v1/responses" || r.JSON["prompt_cache_key"] == nil {
			t.Errorf("request %d: %s, prompt_cache_key %v", n, r.Path, r.JSON["prompt_cache_key"])
		}
		for _, it := range r.JSON["input"].([]any) {
			item := it.(map[string]any)
			if item["type"] != "function_call_output" || item["call_id"] != "call_img" {
				continue
			}
			b, _ := json.Marshal(item["output"])
			if !strings.Contains(string(b), `{"detail":"auto","image_url":"`+url+`","type":"input_image"}`) || !strings.Contains(string(b), `"tiny image"`) {
				t.Errorf("request %d: the output of call_img is %s", n, b)
			}
			return
		}
		t.Errorf("request %d has no function_call_output of call_img: %s", n, r.Body)
	case "chat-no-images":
		b, _ := json.Marshal(r.JSON["messages"])
		body := string(b)
		if strings.Contains(body, "image_url") || !strings.Contains(body, `"content":"tiny image\n[image: image/png, `) || !strings.Contains(body, `bytes; not shown to the model]","role":"tool","tool_call_id":"call_img"`) {
			t.Errorf("request %d: %s", n, body)
		}
	case "chat":
		msgs := r.JSON["messages"].([]any)
		for i, m := range msgs {
			msg := m.(map[string]any)
			if msg["role"] != "tool" || msg["tool_call_id"] != "call_img" {
				continue
			}
			if i+1 == len(msgs) {
				t.Fatalf("request %d: nothing after the tool message", n)
			}
			next, _ := json.Marshal(msgs[i+1])
			if !strings.Contains(string(next), `"role":"user"`) || !strings.Contains(string(next), `{"image_url":{"url":"`+url+`"},"type":"image_url"}`) {
				t.Errorf("request %d: after the tool message comes %s", n, next)
			}
			return
		}
		t.Errorf("request %d has no tool message of call_img: %s", n, r.Body)
	}
}
