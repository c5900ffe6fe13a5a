package bridge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// headerServer is an MCP server whose "headers" tool returns the HTTP
// headers of the request that carried the call.
func headerServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "http-fixture", Version: "1"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "touch", Description: "Do something that is not idempotent."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "headers", Description: "Return the request's headers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			var lines []string
			if req.Extra != nil {
				for k, vs := range req.Extra.Header {
					lines = append(lines, k+": "+strings.Join(vs, ","))
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(lines, "\n")}}}, nil, nil
		})
	return srv
}

func connectHTTP(t *testing.T, spec ServerSpec, opts *Options) *Manager {
	t.Helper()
	m := NewManager(opts)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	if err := m.Connect(t.Context(), []ServerSpec{spec}); err != nil {
		t.Fatal(err)
	}
	if st := m.Servers()[0]; st.State != StateConnected {
		t.Fatalf("%s: %v %v", spec.Name, st.State, st.Err)
	}
	return m
}

// recordHeaders wraps h, keeping the headers of every request it serves.
func recordHeaders(h http.Handler, seen *[]http.Header, mu *sync.Mutex) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*seen = append(*seen, r.Header.Clone())
		mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func TestHTTP_TransportsSendHeaders(t *testing.T) {
	srv := headerServer()
	var mu sync.Mutex
	var seen []http.Header
	streamable := httptest.NewServer(recordHeaders(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil), &seen, &mu))
	defer streamable.Close()
	sse := httptest.NewServer(recordHeaders(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil), &seen, &mu))
	defer sse.Close()

	for _, spec := range []ServerSpec{
		{Name: "web", Transport: TransportHTTP, URL: streamable.URL, Headers: []Header{{"Authorization", "Bearer s3cret"}, {"X-Team", "blue"}}},
		{Name: "old", Transport: TransportSSE, URL: sse.URL, Headers: []Header{{"Authorization", "Bearer s3cret"}, {"X-Team", "blue"}}},
	} {
		t.Run(string(spec.Transport), func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			m := connectHTTP(t, spec, nil)
			if _, err := toolByName(t, m, "mcp__"+spec.Name+"__headers").Execute(t.Context(), "c", nil, nil); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < 2 {
				t.Fatalf("server saw %d requests", len(seen))
			}
			for i, h := range seen { // every request: connect, initialize, tools/list, tools/call
				if h.Get("Authorization") != "Bearer s3cret" || h.Get("X-Team") != "blue" {
					t.Errorf("request %d lacks the entry's headers: %v", i, h)
				}
			}
		})
	}
}

func TestHTTP_RefusedURLFailsOnlyThatServer(t *testing.T) {
	m := NewManager(&Options{URLs: &urlpolicy.Policy{DenyHosts: []string{"127.0.0.1"}}})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	_ = m.Connect(t.Context(), []ServerSpec{{Name: "denied", Transport: TransportHTTP, URL: "http://127.0.0.1:1/mcp"}})
	st := m.Servers()[0]
	if st.State != StateFailed || !errors.Is(st.Err, urlpolicy.ErrRefused) || !strings.Contains(st.Err.Error(), "http://127.0.0.1:1/mcp") {
		t.Errorf("status = %v %v, want refused naming the URL", st.State, st.Err)
	}
}

func TestHTTP_ExpiredSessionReconnectsOnce(t *testing.T) {
	srv := headerServer()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var expire atomic.Int32 // number of session-bearing requests to answer 404
	var inits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") != "" && r.Method == http.MethodPost && expire.Load() > 0 {
			expire.Add(-1)
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if isInitialize(r) {
			inits.Add(1)
		}
		handler.ServeHTTP(w, r)
	}))
	defer ts.Close()
	m := connectHTTP(t, ServerSpec{Name: "web", Transport: TransportHTTP, URL: ts.URL}, nil)
	tool := toolByName(t, m, "mcp__web__headers")

	expire.Store(1)
	if _, err := tool.Execute(t.Context(), "c1", nil, nil); err != nil {
		t.Fatalf("after one 404 the call should succeed on a fresh session: %v", err)
	}
	if n := inits.Load(); n != 2 {
		t.Errorf("initialize count = %d, want 2 (the first and one reconnect)", n)
	}

	expire.Store(2) // the retried call expires too
	_, err := tool.Execute(t.Context(), "c2", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "lost the MCP session") || !strings.Contains(err.Error(), `"web"`) {
		t.Errorf("err = %v, want a clear session-expired error naming the server", err)
	}
}
