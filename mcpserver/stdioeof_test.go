package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/mcpserver"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// Lines of a client on stdio (protocol 2025-06-18).
const (
	initLine        = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// stdioRun is a server run over the stdio transport.
type stdioRun struct {
	out    *testutil.Buffer // what the server wrote
	logged *testutil.Buffer // its log
	done   chan error       // gets Run's error once it returns
}

// runStdio runs srv over NewStdioTransport on in until Run returns.
func runStdio(t *testing.T, srv *mcp.Server, in io.Reader) *stdioRun {
	t.Helper()
	r := &stdioRun{out: &testutil.Buffer{}, logged: &testutil.Buffer{}, done: make(chan error, 1)}
	log := slog.New(slog.NewTextHandler(r.logged, nil))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- srv.Run(ctx, mcpserver.NewStdioTransport(in, r.out, 0, log)) }()
	t.Cleanup(cancel)
	return r
}

// ended waits for Run to return after the end of the input.
func (r *stdioRun) ended(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(wait):
		t.Fatalf("the server did not end within %v of the end of its input; it wrote:\n%s\nlog:\n%s", wait, r.out, r.logged)
	}
}

// answers are the responses the server wrote, by id.
func (r *stdioRun) answers(t *testing.T) map[string]map[string]json.RawMessage {
	t.Helper()
	got := map[string]map[string]json.RawMessage{}
	for line := range strings.SplitSeq(strings.TrimSpace(r.out.String()), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("the server wrote %q: %v", line, err)
		}
		if _, isRequest := m["method"]; !isRequest && m["id"] != nil {
			got[string(m["id"])] = m
		}
	}
	return got
}

// TestStdioTransport_EOFAnswersEveryRequest: requests written at once and
// followed by the end of the input are all answered before the server
// ends, a model turn under way (cancelled at the end) too.
func TestStdioTransport_EOFAnswersEveryRequest(t *testing.T) {
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "Thinking at length", Hang: true})
	e := start(t, setup{fake: fake})
	in := strings.Join([]string{initLine, initializedLine,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask_agent","arguments":{"message":"/tools"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask_agent","arguments":{"message":"take your time"}}}`,
		`{"jsonrpc":"2.0","id":"last","method":"ping"}`,
	}, "\n") + "\n"
	r := runStdio(t, e.srv, strings.NewReader(in))
	r.ended(t)
	got := r.answers(t)
	for _, id := range []string{`"init"`, "1", "2", "3", "4", "5", `"last"`} {
		if got[id] == nil {
			t.Errorf("request %s was not answered; the server wrote:\n%s\nlog:\n%s", id, r.out, r.logged)
		}
	}
	if res := string(got["2"]["result"]); !strings.Contains(res, mcpserver.ToolName) {
		t.Errorf("tools/list answered %s", res)
	}
	// The turn is cancelled at the end, wherever it was (not started yet,
	// or waiting for the model): never an answer of the model's.
	if res := string(got["5"]["result"]) + string(got["5"]["error"]); !strings.Contains(res, "cancel") {
		t.Errorf("the turn under way at the end answered %s, want it cancelled", res)
	}
}

// TestStdioTransport_EOFCancelsToolCallUnderWay: an ask_agent turn whose
// tool call is running when the input ends is cancelled (its tool call
// too) and answers that it was cancelled; then the server ends.
func TestStdioTransport_EOFCancelsToolCallUnderWay(t *testing.T) {
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "mcp__kit__slow"}}})
	e := start(t, setup{fake: fake})
	inR, inW := io.Pipe()
	r := runStdio(t, e.srv, inR)
	t.Cleanup(func() { _ = inW.Close() })
	go func() {
		_, _ = io.WriteString(inW, initLine+"\n"+initializedLine+"\n"+
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask_agent","arguments":{"message":"run the slow tool"}}}`+"\n")
	}()
	select {
	case <-e.kit.slowStarted:
	case <-time.After(wait):
		t.Fatalf("the slow tool never started; the server wrote:\n%s\nlog:\n%s", r.out, r.logged)
	}
	_ = inW.Close() // the client closes stdin, the tool still running
	r.ended(t)
	select {
	case <-e.kit.slowEnded:
	case <-time.After(wait):
		t.Error("the tool call under way was not cancelled")
	}
	res := r.answers(t)["7"]
	if res == nil {
		t.Fatalf("the tools/call under way was not answered; the server wrote:\n%s\nlog:\n%s", r.out, r.logged)
	}
	if s := string(res["result"]); !strings.Contains(s, `"isError":true`) || !strings.Contains(s, "the turn was cancelled") || !strings.Contains(s, `"stopReason":"cancelled"`) {
		t.Errorf("the tools/call under way answered %s, want an isError result saying the turn was cancelled", s)
	}
}

// TestStdioTransport_EOFWaitIsBounded: a request whose handler never ends
// holds the end of the input back 30 s at most; then the end is passed
// on, the wait is logged, and the other requests have been answered.
func TestStdioTransport_EOFWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "resources/list" {
					<-release // deaf to cancellation
				}
				return next(ctx, method, req)
			}
		})
		in := strings.Join([]string{initLine, initializedLine,
			`{"jsonrpc":"2.0","id":"stuck","method":"resources/list"}`,
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		}, "\n") + "\n"
		r := runStdio(t, srv, strings.NewReader(in))
		const warning = "stdin ended and requests read before it are still unanswered"
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if strings.Contains(r.logged.String(), warning) {
			t.Fatalf("the end was passed on before 30 s:\n%s", r.logged)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if log := r.logged.String(); !strings.Contains(log, warning) || !strings.Contains(log, "stuck") {
			t.Errorf("the wait for the stuck request was not logged after 30 s:\n%s", log)
		}
		close(release)
		<-r.done
		if got := r.answers(t); got["1"] == nil {
			t.Errorf("the ping was not answered; the server wrote:\n%s", r.out)
		}
	})
}
