package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Over Streamable HTTP, a request whose id is 1e400, or any id the SDK
// would give back as another (1.5, 1e19, 2^53+1), is answered 400 and a
// response to an id the server never sent 202, on a session (2025-11-25)
// and statelessly (2026-07-28); the session that sent them, and another
// client's, go on.
func TestMCPHTTPHandler_MalformedMessages(t *testing.T) {
	ts := httptest.NewServer(mcpHTTPHandler(echoServer(), nil, nil, slog.New(slog.DiscardHandler)))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	other, err := mcp.NewClient(&mcp.Implementation{Name: "other", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	post := func(body string, header map[string]string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	_, _, h := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	session := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	if session["Mcp-Session-Id"] == "" {
		t.Fatal("initialize gave no session")
	}
	if code, body, _ := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", code, body)
	}
	stateless := map[string]string{"Mcp-Protocol-Version": "2026-07-28"}
	for _, wire := range []map[string]string{session, stateless} {
		for _, tt := range []struct {
			line string
			want int
		}{
			{`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, http.StatusBadRequest},
			// Ids the SDK would answer on another id (1, -2^63, 2^53).
			{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, http.StatusBadRequest},
			{`{"jsonrpc":"2.0","id":1e19,"method":"ping"}`, http.StatusBadRequest},
			{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, http.StatusBadRequest},
			{`[{"jsonrpc":"2.0","id":1.5,"method":"ping"}]`, http.StatusBadRequest},
			{`{"jsonrpc":"2.0","id":919,"error":{"code":-32600,"message":"x"}}`, http.StatusAccepted},
		} {
			if code, body, _ := post(tt.line, wire); code != tt.want {
				t.Errorf("%s %s: status %d (%s), want %d", wire["Mcp-Protocol-Version"], tt.line, code, body, tt.want)
			}
		}
	}
	if code, body, _ := post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, session); code != http.StatusOK || !strings.Contains(body, `"id":2,"result":{}`) {
		t.Errorf("ping on the session after the malformed messages: %d %s", code, body)
	}
	if code, body, _ := post(`{"jsonrpc":"2.0","id":"s-1","method":"ping"}`, session); code != http.StatusOK || !strings.Contains(body, `"id":"s-1","result":{}`) {
		t.Errorf("ping with a string id: %d %s", code, body)
	}
	if code, body, _ := post(`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, session); code != http.StatusOK || !strings.Contains(body, `"result":{}`) {
		t.Errorf("ping with id 1e3 (an integer): %d %s", code, body)
	}
	if res, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}}); err != nil || res.IsError {
		t.Errorf("the other client's call: %+v %v", res, err)
	}
}
