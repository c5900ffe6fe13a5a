//lint:file-ignore SA1019 sampling is deprecated only from protocol 2026-07-28; this fixture tests it on 2025-11-25.

package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sample sends sampling/createMessage in.Times times, whether or not the
// client offered sampling.
func sample(ctx context.Context, req *mcp.CallToolRequest, in sampleIn) (*mcp.CallToolResult, any, error) {
	prefix := ""
	if p := req.Session.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Sampling == nil {
		prefix = "no sampling capability; "
	}
	topic := cmp.Or(in.Topic, "the sea")
	var out []string
	for range max(in.Times, 1) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 100, SystemPrompt: "You write haiku.",
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Write a haiku about " + topic + "."}}}})
		if err != nil {
			r := text(prefix + "sampling failed: " + err.Error())
			r.IsError = true
			return r, nil, nil
		}
		t, _ := res.Content.(*mcp.TextContent)
		if t == nil {
			t = &mcp.TextContent{Text: fmt.Sprintf("(%T content)", res.Content)}
		}
		out = append(out, fmt.Sprintf("%s [model %s, %s]", t.Text, res.Model, res.StopReason))
	}
	return text(prefix + strings.Join(out, "\n")), nil, nil
}
