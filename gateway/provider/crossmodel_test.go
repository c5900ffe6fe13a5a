package provider_test

import (
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/anthropic"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/gemini"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// A session that switches from Gemini to Claude mid-conversation: Claude
// gets Gemini's calls and results, but not its thoughts with Gemini's
// signature, which the Messages API would refuse.
func TestProviders_SwitchFromGeminiToClaude(t *testing.T) {
	g := fakemodel.NewGemini(t, fakemodel.Turn{Thinking: "hmm", ToolCalls: []fakemodel.ToolCall{{Name: "mcp__srv__echo", Args: `{"message":"hi"}`}}}, fakemodel.Turn{Text: "done"})
	a := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: "ok"})
	reg := &gateway.Registry{}
	reg.Set("k", testTools())
	models := []gateway.Model{
		{ID: "gemini", Provider: gemini.New(&provider.Options{Model: "gemini-test", APIKey: "k", BaseURL: g.URL})},
		{ID: "claude", Provider: anthropic.New(&provider.Options{Model: "claude-test", APIKey: "k", BaseURL: a.URL})},
	}
	r := runner.New(reg, &runner.Options{Models: models})
	for _, model := range []string{"gemini", "claude"} {
		if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", Model: model, Message: []gateway.Content{gateway.TextContent("go")}}, func(gateway.Event) {}); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
	}
	body := string(a.Requests()[0].Body)
	if strings.Contains(body, `"type":"thinking"`) || !strings.Contains(body, `"name":"mcp__srv__echo"`) || !strings.Contains(body, "Echo: hi") {
		t.Errorf("Claude's request after Gemini's turn:\n%s", body)
	}
}
