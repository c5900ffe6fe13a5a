//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28; this server speaks 2025-11-25.

package session_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// haikuModel is a provider that records its requests and answers "a haiku".
type haikuModel struct {
	mu   sync.Mutex
	reqs []*gateway.Request
}

func (*haikuModel) Name() string { return "haiku" }

func (h *haikuModel) Complete(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
	if req.Purpose == gateway.PurposeTitle { // the session's title, after its first turn: not recorded
		return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("A title")}}}, nil
	}
	h.mu.Lock()
	h.reqs = append(h.reqs, req)
	h.mu.Unlock()
	return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("a haiku")}}}, nil
}

// samplingServer is an in-process server "asker" whose tool "sample" sends
// sampling/createMessage "n" times (default 1) and returns the answers or
// the error, one a line, after the sampling capability it was offered. It
// speaks 2025-11-25 at most: go-sdk refuses server-initiated sampling on
// 2026-07-28 (there it is an input request, bridge.TestManager_InputRequests).
func samplingServer(session.InProcessEnv) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "sample", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			N int `json:"n"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &args)
		b, _ := json.Marshal(req.Session.InitializeParams().Capabilities.Sampling)
		out := []string{"capability " + string(b)}
		for i := 0; i < max(args.N, 1); i++ {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 64, SystemPrompt: "be brief",
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "write a haiku"}}}})
			if err != nil {
				out = append(out, "error: "+err.Error())
				continue
			}
			out = append(out, res.Content.(*mcp.TextContent).Text+" by "+res.Model+" "+res.StopReason)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(out, "\n")}}}, nil
	})
	return srv
}

// scriptedAsker answers every permission question with out and records them.
type scriptedAsker struct {
	mu   sync.Mutex
	out  gateway.PermissionOutcome
	reqs []gateway.PermissionRequest
	sid  string
}

func (a *scriptedAsker) ask(sid string) gateway.AskFunc {
	a.sid = sid
	return func(_ context.Context, r gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.reqs = append(a.reqs, r)
		return a.out, nil
	}
}

// sampleOnce opens a session on gw whose permission questions a answers
// (nil: no asker), switches to model if set, and runs the server's tool
// with n requests.
func sampleOnce(t *testing.T, gw gateway.Gateway, a *scriptedAsker, model string, n int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	core := session.NewCore(&session.CoreOptions{Gateway: gw, InProcess: []session.InProcessServer{{Name: "asker", New: samplingServer}}})
	defer core.Shutdown()
	req := session.OpenRequest{Cwd: t.TempDir()}
	if a != nil {
		req.FrontEnd = testFrontEnd{ask: a.ask}
	}
	s, err := core.Open(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	if model != "" {
		if err := s.SetModel(ctx, model); err != nil {
			t.Fatal(err)
		}
	}
	for _, tl := range s.Tools() {
		if tl.Name == "mcp__asker__sample" {
			res, err := tl.Execute(ctx, "call_7", map[string]any{"n": n}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return res.Content[0].Text
		}
	}
	t.Fatalf("no tool mcp__asker__sample in %v", s.Tools())
	return ""
}

func haikuGateway() (*runner.Local, *haikuModel) {
	h := &haikuModel{}
	return runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "haiku:1", Provider: h}}}), h
}

// Allowed once: the server's request reaches the session's model, and the
// user was asked on the call in flight, naming the server and showing the
// request.
func TestSampling_AllowedOnce(t *testing.T) {
	gw, h := haikuGateway()
	a := &scriptedAsker{out: gateway.PermissionAllowOnce}
	got := sampleOnce(t, gw, a, "", 2)
	if want := "capability {}\na haiku by haiku:1 endTurn\na haiku by haiku:1 endTurn"; got != want {
		t.Errorf("the server saw %q, want %q", got, want)
	}
	if len(a.reqs) != 2 {
		t.Fatalf("asked %d times, want 2 (allow once)", len(a.reqs))
	}
	q := a.reqs[0]
	shown := q.Content[0].Text
	if c := q.Call; c.ID != "call_7" || c.Title != "asker/sample" || c.RawInput != nil {
		t.Errorf("question on %+v; want on call_7, keeping its title and input", c)
	}
	for _, want := range []string{`MCP server "asker" asks the model haiku:1`, "at most 64 tokens", "system: be brief", "user: write a haiku"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the question shows %q; want %q in it", shown, want)
		}
	}
	if !strings.Contains(q.Always, `MCP server "asker"`) {
		t.Errorf("allow always = %q, want it to name the server", q.Always)
	}
	if len(h.reqs) != 2 || h.reqs[0].System != "be brief" || len(h.reqs[0].Tools) != 0 || h.reqs[0].Messages[0].Content[0].Text != "write a haiku" ||
		h.reqs[0].MaxTokens != 64 || h.reqs[0].Purpose != gateway.PurposeSampling {
		t.Errorf("the model got %+v", h.reqs)
	}
}

// Allowed always: one question for two requests of the server.
func TestSampling_AllowedAlwaysAsksOnce(t *testing.T) {
	gw, h := haikuGateway()
	a := &scriptedAsker{out: gateway.PermissionAllowAlways}
	got := sampleOnce(t, gw, a, "", 2)
	if strings.Count(got, "a haiku by haiku:1") != 2 || len(a.reqs) != 1 || len(h.reqs) != 2 {
		t.Errorf("the server saw %q after %d questions and %d model calls; want 2 answers, 1 question, 2 calls", got, len(a.reqs), len(h.reqs))
	}
}

// Rejected: the server gets an error saying so; the model is not called.
func TestSampling_Rejected(t *testing.T) {
	gw, h := haikuGateway()
	got := sampleOnce(t, gw, &scriptedAsker{out: gateway.PermissionReject}, "", 1)
	if !strings.Contains(got, "error: ") || !strings.Contains(got, `the user refused the sampling request of MCP server "asker"`) || len(h.reqs) != 0 {
		t.Errorf("the server saw %q, the model got %d requests; want a refusal and none", got, len(h.reqs))
	}
}

// No sampling without a model (direct mode), or without a user to ask;
// a session that switches to direct mode refuses clearly.
func TestSampling_UnavailableWithoutModelOrAsker(t *testing.T) {
	for name, tc := range map[string]struct {
		gw    gateway.Gateway
		a     *scriptedAsker
		model string
		want  string
	}{
		"direct":             {runner.NewLocal(nil), &scriptedAsker{out: gateway.PermissionAllowOnce}, "", "capability null\nerror: "},
		"no asker":           {func() gateway.Gateway { g, _ := haikuGateway(); return g }(), nil, "", "capability null\nerror: "},
		"switched to direct": {func() gateway.Gateway { g, _ := haikuGateway(); return g }(), &scriptedAsker{out: gateway.PermissionAllowOnce}, runner.DirectModelID, "capability {}\nerror: "},
	} {
		t.Run(name, func(t *testing.T) {
			got := sampleOnce(t, tc.gw, tc.a, tc.model, 1)
			if !strings.HasPrefix(got, tc.want) || !strings.Contains(got, "sampling is not available") {
				t.Errorf("the server saw %q, want %q… saying sampling is not available", got, tc.want)
			}
			if tc.a != nil && len(tc.a.reqs) != 0 {
				t.Errorf("the user was asked %d times, want never", len(tc.a.reqs))
			}
		})
	}
}
