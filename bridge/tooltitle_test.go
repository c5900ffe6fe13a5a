//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28; this server speaks 2025-11-25.

package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// A server's tool title is shown to the user (tool_call, permission
// question): one line of visible text, the server's name kept whole when
// it is cut, "<server>/<tool>" when nothing visible is left.
func TestToolTitle_OneVisibleLine(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, tt := range []struct {
		server string
		tool   mcp.Tool
		want   string
	}{
		{"srv", mcp.Tool{Name: "echo", Title: "Echo"}, "Echo (srv)"},
		{"srv", mcp.Tool{Name: "echo"}, "srv/echo"},
		{"srv", mcp.Tool{Name: "echo", Title: "\u001b]0;PWNED\u0007\u001b[2JEcho \u202egnp.exe\u200b\nTool"}, "Echo gnp.exe Tool (srv)"},
		{"srv", mcp.Tool{Name: "echo", Annotations: &mcp.ToolAnnotations{Title: "Ann\u2066otated\u2069\tTitle"}}, "Annotated Title (srv)"},
		{"srv", mcp.Tool{Name: "echo", Title: "\u001b[2J\u202e\u200b\ufeff"}, "srv/echo"},
		{ReservedServerName, mcp.Tool{Name: "read", Title: "Read\u001b[31m file\u0007"}, "Read file"},
		{"srv", mcp.Tool{Name: "echo", Title: long}, strings.Repeat("é", gateway.MaxToolTitle-7) + "… (srv)"},
		{"srv", mcp.Tool{Name: "echo", Title: "Résumé 日本語 🚀"}, "Résumé 日本語 🚀 (srv)"},
	} {
		if got := toolTitle(tt.server, &tt.tool); got != tt.want {
			t.Errorf("toolTitle(%q, title %q) = %q, want %q", tt.server, tt.tool.Title, got, tt.want)
		}
	}
}

// A sampling request a tool call makes is asked about on that call, with
// its title: the server's title made visible text, as on the tool_call.
func TestSample_CallTitleIsVisibleText(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "ask", Version: "1.0.0"}, legacyServer())
	srv.AddTool(&mcp.Tool{Name: "sample", Title: "\u001b]0;PWNED\u0007Ask \u202egnp.exe", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil
		})
	f := &fakeSampler{}
	m := memManager(t, &Options{Sampler: f.sampler()}, map[string]*mcp.Server{"ask": srv}, ServerSpec{Name: "ask", Transport: TransportStdio})
	if got := toolByName(t, m, "mcp__ask__sample").Label; got != "Ask gnp.exe (ask)" {
		t.Errorf("label = %q", got)
	}
	if got := callText(t, m, "sample", "call-1", nil); got != "a haiku" {
		t.Errorf("the server got %q", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) != 1 || f.reqs[0].CallTitle != "Ask gnp.exe (ask)" {
		t.Errorf("sampling requests %+v, want one on the call titled %q", f.reqs, "Ask gnp.exe (ask)")
	}
}
