package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawClient speaks raw lines to an Agent served over pipes.
type rawClient struct {
	t     *testing.T
	w     *io.PipeWriter
	lines chan string // lines the agent wrote
	done  chan struct{}
	seen  map[string][]map[string]json.RawMessage // responses read, by id, not yet asked for
}

func serveRaw(t *testing.T, opts *testOptions) *rawClient {
	t.Helper()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	c := &rawClient{t: t, w: clientOut, lines: make(chan string, 1<<16), done: make(chan struct{}), seen: map[string][]map[string]json.RawMessage{}}
	go func() {
		defer close(c.done)
		_ = newTestAgent(opts).Serve(context.Background(), agentIn, agentOut)
		agentOut.Close()
	}()
	go func() {
		sc := bufio.NewScanner(clientIn)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		clientOut.Close()
		agentIn.Close() // a writer blocked on a dead agent returns
		clientIn.Close()
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			t.Error("agent did not stop after stdin EOF")
		}
	})
	return c
}

// response waits for the response with id.
func (c *rawClient) response(id string) map[string]json.RawMessage {
	c.t.Helper()
	if rs := c.seen[id]; len(rs) > 0 {
		c.seen[id] = rs[1:]
		return rs[0]
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("the agent closed stdout before answering id %s", id)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				c.t.Fatalf("agent wrote a line that is not JSON: %q", line)
			}
			if m["method"] != nil {
				continue
			}
			if string(m["id"]) == id {
				return m
			}
			c.seen[string(m["id"])] = append(c.seen[string(m["id"])], m)
		case <-deadline:
			c.t.Fatalf("no response to id %s", id)
		}
	}
}

// gatedHandler blocks the logging of "session/cancel" until open is closed,
// as a stderr nobody reads would.
type gatedHandler struct {
	slog.Handler
	open <-chan struct{}
}

func (h gatedHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "session/cancel" {
		<-h.open
	}
	return nil
}

func (h gatedHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h gatedHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

// TestServe_CancelFloodKeepsServing: thousands of session/cancel while the
// agent is slow to handle them used to overflow the SDK's notification
// queue, which closed the connection and ended the agent.
func TestServe_CancelFloodKeepsServing(t *testing.T) {
	open := make(chan struct{})
	var openOnce sync.Once
	release := func() { openOnce.Do(func() { close(open) }) }
	t.Cleanup(release)
	c := serveRaw(t, &testOptions{Logger: slog.New(gatedHandler{Handler: slog.DiscardHandler, open: open})})

	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := range 3000 {
			if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s%d"}}`+"\n", i); err != nil {
				return
			}
		}
		fmt.Fprintln(c.w, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	}()
	// Let the cancels pile up while the handler is stuck: until all are
	// read, the connection ends, or (framing holding the rest back) a while.
	select {
	case <-wrote:
	case <-c.done:
	case <-time.After(3 * time.Second):
	}
	release()
	if r := c.response("1"); r["result"] == nil {
		t.Fatalf("initialize after the cancels: %s", r["error"])
	}
	fmt.Fprintln(c.w, `{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}`)
	if r := c.response("2"); r["result"] == nil {
		t.Fatalf("session/list after the cancels: %s", r["error"])
	}
}

// TestServe_HostileLinesKeepServing: through the real SDK, each hostile line
// gets its answer and the agent keeps serving.
func TestServe_HostileLinesKeepServing(t *testing.T) {
	c := serveRaw(t, nil)
	big := bigPrompt(`"big"`, MaxFrameBytes, false)
	lines := []string{
		`not json`,
		`{"jsonrpc":"2.0","id":"t","method":"initialize","params":{"protocolVersion":`,
		`{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":1}}`,
		big,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/list"}`,
	}
	go func() { // the writes block if the agent has died
		for _, line := range lines {
			if _, err := fmt.Fprintln(c.w, line); err != nil {
				return
			}
		}
	}()
	if r := c.response("null"); string(r["error"]) == "" {
		t.Errorf("not json: %v", r)
	}
	if r := c.response(`"t"`); !contains(r["error"], `-32700`) {
		t.Errorf("truncated: %s", r["error"])
	}
	if r := c.response(`"big"`); !contains(r["error"], fmt.Sprint(MaxFrameBytes)) {
		t.Errorf("too large: %s", r["error"])
	}
	if r := c.response("3"); r["result"] == nil {
		t.Errorf("session/list without params: %s", r["error"])
	}
}

func contains(raw json.RawMessage, s string) bool {
	return json.Valid(raw) && strings.Contains(string(raw), s)
}

// TestServe_AmbiguousLinesKeepServing: lines the SDK would refuse, or read
// differently from framing, used to freeze the agent (session/cancel with
// "error":1: refused by the SDK, so Agent.Cancel never released it and
// reading waited forever, even after stdin EOF) or end it ("Method" beside
// "method": read as session/cancel by the SDK without back-pressure, which
// overflowed its queue).
func TestServe_AmbiguousLinesKeepServing(t *testing.T) {
	c := serveRaw(t, nil)
	go func() { // the writes block if the agent is stuck
		for i := range 300 {
			if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s%d"},"error":1}`+"\n", i); err != nil {
				return
			}
		}
		for i := range 3000 {
			if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","method":"$/cancel_request","Method":"session/cancel","params":{"sessionId":"m%d","requestId":1}}`+"\n", i); err != nil {
				return
			}
		}
		fmt.Fprintln(c.w, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1},"Id":null}`)
		fmt.Fprintln(c.w, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`)
	}()
	if r := c.response("1"); !contains(r["error"], `the key \"Id\"`) {
		t.Errorf("request with \"Id\":null: %v", r)
	}
	if r := c.response("2"); r["result"] == nil {
		t.Fatalf("initialize after the ambiguous lines: %s", r["error"])
	}
	// serveRaw's cleanup checks that stdin EOF still ends the agent.
}
