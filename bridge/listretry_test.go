package bridge

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTP_ToolsListRetriedAfterAReset: a tools/list whose connection the
// server drops without an answer (a reset under load) is sent once more
// at connect, instead of failing the server.
func TestHTTP_ToolsListRetriedAfterAReset(t *testing.T) {
	srv := headerServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var dropped atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/list"`)) && dropped.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close() // no response at all
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close) // after the Manager closes (connectHTTP)
	m := connectHTTP(t, ServerSpec{Name: "web", Transport: TransportHTTP, URL: ts.URL}, nil)
	if len(m.Tools()) == 0 || dropped.Load() != 2 {
		t.Fatalf("tools %d, tools/list sent %d times; want the tools after a second tools/list", len(m.Tools()), dropped.Load())
	}
}
