package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/mcpserver"
)

// The stdio front end answers every malformed line with the JSON-RPC error
// the spec gives and goes on serving: one bad line never ends the
// conversation.
func TestStdioTransport_MalformedLinesAreAnsweredAndSkipped(t *testing.T) {
	const maxLine = 64 << 10
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, mcpserver.NewStdioTransport(inR, outW, maxLine, nil)) }()
	t.Cleanup(func() { cancel(); _ = inW.Close(); <-done; _ = outW.Close() })
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no reply: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("reply %q: %v", lines.Text(), err)
		}
		return m
	}
	send := func(s string) {
		t.Helper()
		go func() { _, _ = io.WriteString(inW, s+"\n") }()
	}
	tests := []struct {
		line string
		id   any
		code float64
		msg  string
	}{
		{`this is not json`, nil, -32700, "not valid JSON"},
		{`[]`, nil, -32600, "batches"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, nil, -32600, "batches"},
		{`"hello"`, nil, -32600, "must be a JSON object"},
		{`{"jsonrpc":"1.0","id":2,"method":"ping"}`, float64(2), -32600, `jsonrpc must be "2.0"`},
		{`{"method":"ping","id":"x"}`, "x", -32600, `jsonrpc must be "2.0"`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, nil, -32600, "id must be a string or an integer"},
		{`{"jsonrpc":"2.0","id":3,"method":42}`, float64(3), -32600, "method must be a non-empty string"},
		{`{"jsonrpc":"2.0","id":4}`, float64(4), -32600, "no method"},
		{`{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":` + strings.Repeat("[", 12000) + strings.Repeat("]", 12000) + `}}`, float64(5), -32700, "nests deeper"},
		{`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"` + strings.Repeat("x", 3*maxLine) + `"}}`, float64(9), -32600, fmt.Sprintf("over the limit of %d bytes", maxLine)},
	}
	for _, tt := range tests {
		send(tt.line)
		r := next()
		e, _ := r["error"].(map[string]any)
		if e == nil || e["code"] != tt.code || !strings.Contains(fmt.Sprint(e["message"]), tt.msg) || r["id"] != tt.id {
			t.Errorf("%.60s → %v; want id %v, code %v, message with %q", tt.line, r, tt.id, tt.code, tt.msg)
		}
	}
	// The conversation goes on.
	send(`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if r := next(); r["id"] != float64(10) || r["result"] == nil {
		t.Fatalf("initialize after the bad lines: %v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":11,"method":"ping"}`)
	if r := next(); r["id"] != float64(11) || r["error"] != nil {
		t.Errorf("ping: %v", r)
	}
}

// The malformed lines of the e2e suite (testutil.MalformedJSONRPC), each
// followed by a ping, to the real server behind the stdio transport: each
// gets its answer, or none, and the ping is answered.
func TestStdioTransport_MalformedCorpus(t *testing.T) {
	e := start(t, setup{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.srv.Run(ctx, mcpserver.NewStdioTransport(inR, outW, 0, nil)); _ = outW.Close() }()
	t.Cleanup(func() { cancel(); _ = inW.Close(); <-done })
	out := testutil.ScanLines(outR)
	testutil.FeedMalformed(t, []testutil.Malformed{
		{Name: "initialize", Line: `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, ID: `"init"`, Result: true},
		{Name: "initialized", Line: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	}, inW, out)
	testutil.FeedMalformed(t, testutil.MalformedJSONRPC(), inW, out)
	_ = inW.Close()
	for line := range out { // until the server's output closes
		t.Errorf("the server wrote %.200q after its input closed", line)
	}
	if err := <-done; err != nil && !errors.Is(err, io.EOF) {
		t.Errorf("the server ended with %v, want EOF", err)
	}
	done <- nil // for the cleanup's receive
}
