//lint:file-ignore SA1019 roots and sampling are deprecated from protocol 2026-07-28 but still served, as input requests there.

package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// legacyServer returns options of a server that speaks 2025-11-25 at most, as
// TypeScript SDK servers do: it answers the server/discover probe with an
// error and the client falls back to initialize.
func legacyServer() *mcp.ServerOptions {
	return &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}}
}

// versionServer returns a server with one tool, "version", that reports the
// protocol version of the session it is called on.
func versionServer(opts *mcp.ServerOptions) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "v", Version: "1"}, opts)
	srv.AddTool(&mcp.Tool{Name: "version", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Session.InitializeParams().ProtocolVersion}}}, nil
	})
	return srv
}

// TestManager_NegotiatesLatestProtocol checks that the bridge asks for
// ProtocolVersion (2026-07-28) and gets it from a server that speaks it, and
// that a server that does not (it refuses server/discover) still connects,
// at 2025-11-25, with its tools.
func TestManager_NegotiatesLatestProtocol(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts *mcp.ServerOptions
		want string
	}{
		{"latest", nil, "2026-07-28"},
		{"legacy", legacyServer(), "2025-11-25"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := memManager(t, nil, map[string]*mcp.Server{"v": versionServer(tt.opts)}, ServerSpec{Name: "v", Transport: TransportStdio})
			if st := m.Servers()[0]; st.State != StateConnected {
				t.Fatalf("state = %s (%v), want connected", st.State, st.Err)
			}
			res, err := toolByName(t, m, "mcp__v__version").Execute(t.Context(), "c1", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].Text; got != tt.want {
				t.Errorf("the server's session is at %q, want %q", got, tt.want)
			}
		})
	}
}

// inputServer returns a server whose tool "ask" asks the client, with one
// multi round-trip input request each (SEP-2322, the only way at
// 2026-07-28), for a form elicitation, a sampling message and the roots,
// and returns what it got back and its session's protocol version.
func inputServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "ask", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in := req.Params.InputResponses
		if in == nil {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"form": &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{"type": "object",
					"properties": map[string]any{"name": map[string]any{"type": "string"}}}},
				"sample": &mcp.CreateMessageParams{MaxTokens: 50,
					Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "write a haiku"}}}},
				"roots": &mcp.ListRootsParams{},
			}}, nil
		}
		var out []string
		if r, ok := in["form"].(*mcp.ElicitResult); ok {
			b, _ := json.Marshal(r.Content)
			out = append(out, "form: "+r.Action+" "+string(b))
		}
		switch r := in["sample"].(type) {
		case *mcp.CreateMessageResult:
			out = append(out, "sample: "+r.Content.(*mcp.TextContent).Text)
		case *mcp.CreateMessageWithToolsResult:
			out = append(out, "sample: "+r.Content[0].(*mcp.TextContent).Text)
		}
		if r, ok := in["roots"].(*mcp.ListRootsResult); ok && len(r.Roots) == 1 {
			out = append(out, "root: "+r.Roots[0].URI)
		}
		out = append(out, "version: "+req.Session.InitializeParams().ProtocolVersion)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(out, "\n")}}}, nil
	})
	return srv
}

// TestManager_InputRequests checks that on a 2026-07-28 session, where a
// server may not send elicitation/create, sampling/createMessage or
// roots/list, its input requests reach the same Elicitor, Sampler and root
// as those requests do, tied to the call in flight.
func TestManager_InputRequests(t *testing.T) {
	user := newFakeUser(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}})
	var sampler fakeSampler
	cwd := t.TempDir()
	m := memManager(t, &Options{Cwd: cwd, Elicitor: user.elicitor(true, false), Sampler: sampler.sampler()},
		map[string]*mcp.Server{"ask": inputServer()}, ServerSpec{Name: "ask", Transport: TransportStdio})
	got := callText(t, m, "ask", "c1", nil)
	for _, want := range []string{`form: accept {"name":"Grace"}`, "sample: a haiku", "root: " + rootFor(cwd).URI, "version: 2026-07-28"} {
		if !strings.Contains(got, want) {
			t.Errorf("the server got %q, want it to contain %q", got, want)
		}
	}
	user.mu.Lock()
	defer user.mu.Unlock()
	if len(user.reqs) != 1 || user.reqs[0].CallID != "c1" || user.reqs[0].Server != "ask" {
		t.Errorf("elicitations = %+v, want one from server ask for call c1", user.reqs)
	}
	sampler.mu.Lock()
	defer sampler.mu.Unlock()
	if len(sampler.reqs) != 1 || sampler.reqs[0].CallID != "c1" {
		t.Errorf("sampling requests = %+v, want one for call c1", sampler.reqs)
	}
}

// TestHTTP_ProtocolOverStreamableHTTP checks both kinds of go-sdk Streamable
// HTTP server: a stateless one negotiates 2026-07-28, and a tool it adds
// reaches the bridge (notifications/tools/list_changed over
// subscriptions/listen, which replaces the session's standalone stream); a
// stateful one (which cannot serve 2026-07-28) negotiates 2025-11-25.
func TestHTTP_ProtocolOverStreamableHTTP(t *testing.T) {
	for _, tt := range []struct {
		name      string
		stateless bool
		want      string
	}{
		{"stateless", true, "2026-07-28"},
		{"stateful", false, "2025-11-25"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := versionServer(nil)
			handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: tt.stateless})
			ts := httptest.NewServer(handler)
			// Registered before the Manager's Close, so it runs after it:
			// Close must end the subscriptions/listen stream, or this waits.
			t.Cleanup(ts.Close)
			changed := make(chan []*gateway.Tool, 10)
			m := connectHTTP(t, ServerSpec{Name: "v", Transport: TransportHTTP, URL: ts.URL}, &Options{OnToolsChanged: func(tools []*gateway.Tool) { changed <- tools }})
			res, err := toolByName(t, m, "mcp__v__version").Execute(t.Context(), "c1", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].Text; got != tt.want {
				t.Errorf("the server's session is at %q, want %q", got, tt.want)
			}
			srv.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late ok"}}}, nil
			})
			deadline := time.After(20 * time.Second)
			for {
				select {
				case tools := <-changed:
					if len(tools) != 2 {
						continue
					}
					res, err := toolByName(t, m, "mcp__v__late").Execute(t.Context(), "c2", nil, nil)
					if err != nil || res.Content[0].Text != "late ok" {
						t.Errorf("the new tool: %+v %v", res, err)
					}
					return
				case <-deadline:
					t.Fatal("no refresh after the server added a tool")
				}
			}
		})
	}
}
