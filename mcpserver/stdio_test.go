package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// The server's own requests over the stdio transport: a response to one
// reaches it; a response to an id the server never sent, or to a request
// it cancelled, is dropped; an invalid response fails the request it
// answers; the connection goes on throughout.
func TestStdioTransport_ServerRequests(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	var logged testutil.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	ss, err := srv.Connect(ctx, mcpserver.NewStdioTransport(inR, outW, 0, log), nil)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _ = ss.Wait(); _ = outW.Close(); close(ended) }()
	t.Cleanup(func() { _ = inW.Close(); <-ended })
	out := testutil.ScanLines(outR)
	// send writes a line without waiting for the server to read it (it may
	// answer first); a failed write shows as the server's missing answer.
	send := func(s string) {
		go func() { _, _ = io.WriteString(inW, s+"\n") }()
	}
	type message struct {
		ID     any            `json:"id"`
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
		Result any            `json:"result"`
	}
	next := func() message {
		t.Helper()
		select {
		case line, ok := <-out:
			if !ok {
				t.Fatal("the server ended")
			}
			var m message
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return m
		case <-ctx.Done():
			t.Fatal("no message from the server")
		}
		return message{}
	}
	send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"c","version":"1"}}}`)
	if m := next(); m.ID != "init" {
		t.Fatalf("initialize: %+v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// listRoots asks the client for its roots and returns the request.
	listRoots := func(ctx context.Context) (message, <-chan error) {
		t.Helper()
		errc := make(chan error, 1)
		go func() {
			//lint:ignore SA1019 roots are deprecated from 2026-07-28, but a server request is what this test needs, and the session speaks 2025-06-18.
			_, err := ss.ListRoots(ctx, nil)
			errc <- err
		}()
		m := next()
		if m.Method != "roots/list" {
			t.Fatalf("want roots/list, got %+v", m)
		}
		return m, errc
	}
	ping := func(id string) {
		t.Helper()
		send(`{"jsonrpc":"2.0","id":"` + id + `","method":"ping"}`)
		if m := next(); m.ID != id || m.Result == nil {
			t.Fatalf("ping %s: %+v", id, m)
		}
	}

	req, errc := listRoots(ctx)
	id, _ := json.Marshal(req.ID)
	send(`{"jsonrpc":"2.0","id":919,"result":{"roots":[{"uri":"file:///never"}]}}`) // never sent: dropped
	send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"roots":[{"uri":"file:///work"}]}}`)
	if err := <-errc; err != nil {
		t.Fatalf("roots/list: %v", err)
	}
	ping("p1")

	req, errc = listRoots(ctx)
	id, _ = json.Marshal(req.ID)
	send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{},"error":{"code":1,"message":"both"}}`)
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "the client's response is invalid: it has both result and error") {
		t.Errorf("roots/list answered with both result and error: %v", err)
	}
	ping("p2")

	cctx, ccancel := context.WithCancel(ctx)
	req, errc = listRoots(cctx)
	ccancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled roots/list: %v", err)
	}
	if m := next(); m.Method != "notifications/cancelled" {
		t.Fatalf("want notifications/cancelled, got %+v", m)
	}
	id, _ = json.Marshal(req.ID)
	send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"roots":[]}}`) // late: dropped
	ping("p3")
	dropped := func(id string) bool {
		return strings.Contains(logged.String(), `msg="dropped a response to no request of the server's under way (never sent, answered or cancelled)" id=`+id)
	}
	logged.WaitFor(t, wait, func(string) bool { return dropped("919") && dropped(string(id)) }, "the dropped responses were not logged:\n%s", &logged)
}
