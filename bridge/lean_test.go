package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRightSizeMaps_KeepsValues checks that rightSizeMaps leaves what a
// result says unchanged: its JSON is the same before and after.
func TestRightSizeMaps_KeepsValues(t *testing.T) {
	results := map[string]func() mcp.Result{
		"tools/list": func() mcp.Result {
			return &mcp.ListToolsResult{Meta: mcp.Meta{"a": map[string]any{"b": []any{1.0, map[string]any{}}}},
				Tools: []*mcp.Tool{{Name: "t", Meta: mcp.Meta{}}, {Name: "u", Meta: mcp.Meta{"k": "v"}}}}
		},
		"prompts/list": func() mcp.Result {
			return &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{{Name: "p", Meta: mcp.Meta{"k": []any{}}}}}
		},
		"tools/call": func() mcp.Result {
			return &mcp.CallToolResult{Meta: mcp.Meta{}, StructuredContent: map[string]any{"x": map[string]any{}, "y": []any{"z"}},
				Content: []mcp.Content{&mcp.TextContent{Text: "hi", Meta: mcp.Meta{"m": 1.0}}}}
		},
	}
	for method, make := range results {
		t.Run(method, func(t *testing.T) {
			want, err := json.Marshal(make())
			if err != nil {
				t.Fatal(err)
			}
			h := rightSizeMaps(func(context.Context, string, mcp.Request) (mcp.Result, error) { return make(), nil })
			res, err := h(t.Context(), method, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("after rightSizeMaps:\n%s\nwant\n%s", got, want)
			}
		})
	}
}
