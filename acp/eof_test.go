package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// lineOut is an io.Writer that keeps the lines written until it is read.
type lineOut struct {
	mu    sync.Mutex
	lines []string
}

func (o *lineOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, strings.Split(strings.TrimRight(string(p), "\n"), "\n")...)
	return len(p), nil
}

// read returns the lines written so far.
func (o *lineOut) read() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.lines)
}

// responses returns the ids of the responses among lines, with their
// results.
func responses(lines []string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, l := range lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(l), &m) != nil || m.Method != "" || m.ID == nil {
			continue
		}
		if m.Result != nil {
			out[string(m.ID)] = m.Result
		} else {
			out[string(m.ID)] = m.Error
		}
	}
	return out
}

// Requests followed at once by the end of input are answered before Serve
// returns: initialize and session/new sent with stdin closed right after
// used to lose their answers (initialize's about a third of the time).
func TestServe_AnswersEveryRequestReadBeforeEOF(t *testing.T) {
	cwd := t.TempDir()
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n" +
		fmt.Sprintf(`{"jsonrpc":"2.0","id":"two","method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, cwd) + "\n"
	for i := range 30 {
		out := &lineOut{}
		if err := newTestAgent(nil).Serve(t.Context(), strings.NewReader(in), out); err != nil {
			t.Fatal(err)
		}
		lines := out.read() // what was written when Serve returned
		got := responses(lines)
		if _, ok := got["1"]; !ok {
			t.Fatalf("run %d: no answer to initialize; wrote %q", i, lines)
		}
		if _, ok := got[`"two"`]; !ok { // a result, or an error saying input ended
			t.Fatalf("run %d: no answer to session/new; wrote %q", i, lines)
		}
	}
}

// A prompt under way when input ends is cancelled and answered "cancelled"
// before Serve returns.
func TestServe_PromptUnderWayAtEOFAnswersCancelled(t *testing.T) {
	dial := func(ctx context.Context, spec bridge.ServerSpec) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := memServer().Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	opts := &testOptions{}
	opts.Bridge.Dial = dial
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- newTestAgent(opts).Serve(context.Background(), agentIn, agentOut)
		agentOut.Close()
	}()
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(clientIn)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(clientOut, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(30 * time.Second)
	var seen []string
	await := func(what string, ok func(string) bool) string {
		t.Helper()
		for {
			select {
			case l, open := <-lines:
				if !open {
					t.Fatalf("output ended waiting for %s; wrote %q", what, seen)
				}
				seen = append(seen, l)
				if ok(l) {
					return l
				}
			case <-deadline:
				t.Fatalf("no %s within 30s; wrote %q", what, seen)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	await("initialize response", func(l string) bool { return strings.HasPrefix(l, `{"jsonrpc":"2.0","id":1,`) })
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[{"name":"mem","command":"unused","args":[],"env":[]}]}}`, t.TempDir()))
	var res struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	l := await("session/new response", func(l string) bool { return strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,`) })
	if err := json.Unmarshal([]byte(l), &res); err != nil || res.Result.SessionID == "" {
		t.Fatalf("session/new: %s", l)
	}
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"/call mcp__mem__block"}]}}`, res.Result.SessionID))
	l = await("the permission request", func(l string) bool { return strings.Contains(l, `"method":"session/request_permission"`) })
	var ask struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(l), &ask); err != nil {
		t.Fatal(err)
	}
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`, ask.ID))
	await("the tool call in progress", func(l string) bool { return strings.Contains(l, `"status":"in_progress"`) })
	clientOut.Close() // end of input, the prompt still running
	l = await("the prompt's response", func(l string) bool { return strings.HasPrefix(l, `{"jsonrpc":"2.0","id":3,`) })
	if !strings.Contains(l, `"stopReason":"cancelled"`) {
		t.Errorf("prompt response at EOF = %s, want stopReason cancelled", l)
	}
	select {
	case <-served:
	case <-deadline:
		t.Fatal("Serve did not return after EOF")
	}
}
