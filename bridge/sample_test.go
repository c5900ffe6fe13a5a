//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28; these servers speak 2025-11-25.

package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sampleServer returns an in-process MCP server named "ask" whose tool
// "caps" reports the client's sampling capability and "sample" sends
// sampling/createMessage "n" times (default 1) and returns the answers'
// texts, or the first error, one a line. It speaks 2025-11-25 at most
// (legacyServer), so it asks with server-initiated sampling/createMessage
// requests; TestManager_InputRequests covers 2026-07-28.
func sampleServer(t *testing.T) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "ask", Version: "1.0.0"}, legacyServer())
	srv.AddTool(&mcp.Tool{Name: "caps", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(req.Session.InitializeParams().Capabilities.Sampling)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "sample", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			N int `json:"n"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &args)
		var out []string
		for i := 0; i < max(args.N, 1); i++ {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 50, SystemPrompt: "be brief",
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "write a haiku"}}}})
			if err != nil {
				out = append(out, "error: "+err.Error())
				break
			}
			out = append(out, res.Content.(*mcp.TextContent).Text+" ("+res.Model+")")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(out, "\n")}}}, nil
	})
	return srv
}

// fakeSampler records the requests and answers each with "a haiku".
type fakeSampler struct {
	mu   sync.Mutex
	reqs []SampleRequest
}

func (f *fakeSampler) sampler() *Sampler {
	return &Sampler{Sample: func(_ context.Context, r SampleRequest) (*mcp.CreateMessageResult, error) {
		f.mu.Lock()
		f.reqs = append(f.reqs, r)
		f.mu.Unlock()
		return &mcp.CreateMessageResult{Role: "assistant", Model: "fake:m", Content: &mcp.TextContent{Text: "a haiku"}, StopReason: "endTurn"}, nil
	}}
}

func TestSample_CapabilityOnlyWithASampler(t *testing.T) {
	for _, tt := range []struct {
		name string
		sp   *Sampler
		want string
	}{
		{"none", nil, "null"},
		{"no func", &Sampler{}, "null"},
		{"sampler", (&fakeSampler{}).sampler(), "{}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := memManager(t, &Options{Sampler: tt.sp}, map[string]*mcp.Server{"ask": sampleServer(t)}, ServerSpec{Name: "ask", Transport: TransportStdio})
			if got := callText(t, m, "caps", "c1", nil); got != tt.want {
				t.Errorf("sampling capability = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSample_ServedWithTheCallInFlight(t *testing.T) {
	f := &fakeSampler{}
	m := memManager(t, &Options{Sampler: f.sampler()}, map[string]*mcp.Server{"ask": sampleServer(t)}, ServerSpec{Name: "ask", Transport: TransportStdio})
	if got := callText(t, m, "sample", "call-3", nil); got != "a haiku (fake:m)" {
		t.Errorf("the server got %q, want the sampler's answer", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(f.reqs))
	}
	r := f.reqs[0]
	if r.Server != "ask" || r.CallID != "call-3" || r.CallTitle != "ask/sample" || r.Params.MaxTokens != 50 || r.Params.SystemPrompt != "be brief" ||
		len(r.Params.Messages) != 1 || r.Params.Messages[0].Content.(*mcp.TextContent).Text != "write a haiku" {
		t.Errorf("request = %+v, params %+v", r, r.Params)
	}
}

func TestSample_RefusedWithoutASampler(t *testing.T) {
	m := memManager(t, &Options{}, map[string]*mcp.Server{"ask": sampleServer(t)}, ServerSpec{Name: "ask", Transport: TransportStdio})
	got := callText(t, m, "sample", "c1", nil)
	if !strings.Contains(got, "error: ") || !strings.Contains(got, `MCP server "ask"`) || !strings.Contains(got, "sampling is not available") {
		t.Errorf("the server got %q, want a clear refusal naming the server", got)
	}
}

func TestSample_CountsAgainstTheRateLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &fakeSampler{}
	m := memManager(t, &Options{Sampler: f.sampler(), CallsPerMinute: 3, Clock: func() time.Time { return now }},
		map[string]*mcp.Server{"ask": sampleServer(t)}, ServerSpec{Name: "ask", Transport: TransportStdio})
	// The call takes one token, two samples the others; the third sample
	// is over the limit, and so is a next tool call.
	got := callText(t, m, "sample", "c1", map[string]any{"n": 3})
	lines := strings.Split(got, "\n")
	if len(lines) != 3 || lines[0] != "a haiku (fake:m)" || lines[1] != "a haiku (fake:m)" ||
		!strings.HasPrefix(lines[2], "error: ") || !strings.Contains(lines[2], "rate limit") {
		t.Errorf("the server got %q, want two answers then a rate-limit error", got)
	}
	if n := len(f.reqs); n != 2 {
		t.Errorf("the sampler was called %d times, want 2", n)
	}
	res, err := toolByName(t, m, "mcp__ask__caps").Execute(t.Context(), "c2", nil, nil)
	if err != nil || !res.IsError {
		t.Errorf("a tool call after the samples = %+v, %v; want a rate-limit error result", res, err)
	}
}
