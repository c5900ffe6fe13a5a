package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
)

func TestCapResult(t *testing.T) {
	l := quota.Limits{MaxResultText: 10, MaxMedia: 4}.WithDefaults()
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "0123456"},
		&mcp.TextContent{Text: "789abcdef"},
		&mcp.ImageContent{Data: []byte("12345"), MIMEType: "image/png"},
		&mcp.AudioContent{Data: []byte("123"), MIMEType: "audio/wav"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "x://b", Blob: []byte("123456")}},
	}}
	got := capResult(res, l)
	var texts []string
	for _, c := range got.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			texts = append(texts, c.Text)
		case *mcp.AudioContent:
			texts = append(texts, "audio")
		default:
			texts = append(texts, "?")
		}
	}
	joined := strings.Join(texts, "|")
	for _, want := range []string{"0123456|789|", "image (image/png, 5 B) left out", "|audio|", "resource x://b", "6 B of text cut"} {
		if !strings.Contains(joined, want) {
			t.Errorf("capped content %q lacks %q", joined, want)
		}
	}
	if len(res.Content) != 5 || res.Content[0].(*mcp.TextContent).Text != "0123456" || res.Content[1].(*mcp.TextContent).Text != "789abcdef" {
		t.Error("capResult modified its input")
	}
	small := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
	if capResult(small, l) != small {
		t.Error("a result within the limits should be returned as is")
	}
}

func TestCapResult_Structured(t *testing.T) {
	l := quota.Limits{MaxResultText: 16}.WithDefaults()
	res := capResult(&mcp.CallToolResult{StructuredContent: map[string]any{"long": strings.Repeat("x", 40)}}, l)
	if res.StructuredContent != nil || len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "structured content") {
		b, _ := json.Marshal(res)
		t.Errorf("capped = %s", b)
	}
}

// A server that returns a huge result: the bridge passes on the capped
// result, with the note, to the model and the client alike (Raw too).
func TestManager_OversizedResultIsCapped(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a", quota.DefaultMaxResultText+44<<10)}}}, nil
	})
	m := memManager(t, nil, map[string]*mcp.Server{"big": srv}, ServerSpec{Name: "big", Transport: TransportStdio})
	res, err := toolByName(t, m, "mcp__big__big").Execute(t.Context(), "c", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 2 || len(res.Content[0].Text) != quota.DefaultMaxResultText || !strings.Contains(res.Content[1].Text, "44 KiB of text cut, over the limit of "+quota.Size(quota.DefaultMaxResultText)) {
		t.Errorf("content: %d blocks, first %d bytes, note %q", len(res.Content), len(res.Content[0].Text), res.Content[len(res.Content)-1].Text)
	}
	if raw := res.Raw.(*mcp.CallToolResult); len(raw.Content) != 2 {
		t.Error("rawOutput is not capped")
	}
}

func TestManager_ToolsPerSessionLimit(t *testing.T) {
	m := memManager(t, &Options{Limits: quota.Limits{ToolsPerSession: 5}},
		map[string]*mcp.Server{"a": testServer(t), "b": testServer(t)},
		ServerSpec{Name: "a", Transport: TransportStdio}, ServerSpec{Name: "b", Transport: TransportStdio})
	if n := len(m.Tools()); n != 5 {
		t.Errorf("%d tools bridged, want 5", n)
	}
	st := m.Servers()
	if st[0].Tools != 3 || st[0].LeftOutCount != 8 || st[1].Tools != 2 || st[1].LeftOutCount != 9 {
		t.Errorf("a: %d bridged %d left out; b: %d bridged %d left out; want the limit shared 3+2", st[0].Tools, st[0].LeftOutCount, st[1].Tools, st[1].LeftOutCount)
	}
}

func TestManager_RateLimit(t *testing.T) {
	now := time.Unix(1000, 0)
	m := memManager(t, &Options{CallsPerMinute: 2, Clock: func() time.Time { return now }},
		map[string]*mcp.Server{"mem": testServer(t)}, ServerSpec{Name: "mem", Transport: TransportStdio})
	tool := toolByName(t, m, "mcp__mem__text")
	call := func() gateway.Result {
		res, err := tool.Execute(t.Context(), "c", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	call()
	call()
	res := call()
	if !res.IsError || res.Content[0].Text != "rate limit: server mem allows 2 calls/min; retry in 30 s" {
		t.Errorf("3rd call = %+v, want a rate-limit tool error", res)
	}
	now = now.Add(30 * time.Second)
	if res := call(); res.IsError {
		t.Errorf("after 30 s: %+v", res)
	}
}

func TestManager_PerServerOverrides(t *testing.T) {
	now := time.Unix(1000, 0)
	m := memManager(t, &Options{CallsPerMinute: 1, Clock: func() time.Time { return now }},
		map[string]*mcp.Server{"mem": testServer(t)},
		ServerSpec{Name: "mem", Transport: TransportStdio, CallsPerMinute: -1, Timeouts: Timeouts{ToolCall: 50 * time.Millisecond}})
	for range 5 {
		if res, _ := toolByName(t, m, "mcp__mem__text").Execute(t.Context(), "c", nil, nil); res.IsError {
			t.Fatalf("unlimited server refused a call: %+v", res)
		}
	}
	if _, err := toolByName(t, m, "mcp__mem__block").Execute(t.Context(), "c", nil, nil); err == nil || !strings.Contains(err.Error(), "took longer than 50ms") {
		t.Errorf("per-server call timeout: %v", err)
	}
}
