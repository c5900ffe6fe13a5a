package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
)

// TestManager_StructuredOnlyResultReachesTheModel: a result with only
// structuredContent carries its JSON as text, the only part a model reads;
// one with text blocks gets the JSON next to them, unless a text block
// already holds the same JSON value.
func TestManager_StructuredOnlyResultReachesTheModel(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "structured", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "weather", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"celsius": 21, "sky": "clear"}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "both", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "21 C"}}, StructuredContent: map[string]any{"celsius": 21}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "same", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{ \"sky\": \"clear\", \"celsius\": 21 }"}}, StructuredContent: map[string]any{"celsius": 21, "sky": "clear"}}, nil
	})
	m := memManager(t, nil, map[string]*mcp.Server{"w": srv}, ServerSpec{Name: "w", Transport: TransportStdio})

	res, err := toolByName(t, m, "mcp__w__weather").Execute(t.Context(), "c1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := provider.ResultText(openai.Capabilities, &res), `{"celsius":21,"sky":"clear"}`; got != want {
		t.Errorf("model reads %q, want %q", got, want)
	}
	if res.Structured == nil {
		t.Error("the structured content itself is gone")
	}
	if len(res.Content) != 1 || res.Content[0].ModelOnly {
		t.Errorf("a structured-only result: %+v, want its JSON as the one block a client shows too", res.Content)
	}

	res, err = toolByName(t, m, "mcp__w__both").Execute(t.Context(), "c2", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := provider.ResultText(openai.Capabilities, &res), "21 C\n{\"celsius\":21}"; got != want {
		t.Errorf("a result with text and structured content reads %q, want %q", got, want)
	}
	if n := len(res.Content); n != 2 || res.Content[0].ModelOnly || !res.Content[1].ModelOnly {
		t.Errorf("a result with text and structured content: %+v, want the text, then the JSON marked ModelOnly (the client has it in rawOutput)", res.Content)
	}

	res, err = toolByName(t, m, "mcp__w__same").Execute(t.Context(), "c3", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := provider.ResultText(openai.Capabilities, &res), `{ "sky": "clear", "celsius": 21 }`; got != want {
		t.Errorf("a result whose text is its structured content reads %q, want the text once: %q", got, want)
	}
}
