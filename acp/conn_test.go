package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/session"
)

func started() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// TestWithServers_HandsTheClientsOwnMCPServers: session/new's handler gets
// acp-go-sdk's type without the entries (which its decoder misreads) and
// the client's own mcpServers JSON, untouched; _meta stays the client's.
func TestWithServers_HandsTheClientsOwnMCPServers(t *testing.T) {
	var gotP acpsdk.NewSessionRequest
	var gotServers json.RawMessage
	m := withServers(func(_ context.Context, p acpsdk.NewSessionRequest, servers json.RawMessage) (any, error) {
		gotP, gotServers = p, servers
		return nil, nil
	})
	const entries = `[{"name":"fs","command":"node","args":[],"env":[]},{"type":"http","name":"h","url":"http://127.0.0.1:1/mcp","headers":[]}]`
	if _, err := m(t.Context(), json.RawMessage(`{"cwd":"/tmp","mcpServers":`+entries+`,"_meta":{"keep":1}}`)); err != nil {
		t.Fatal(err)
	}
	if string(gotServers) != entries {
		t.Errorf("mcpServers = %s, want the client's %s", gotServers, entries)
	}
	if gotP.Cwd != "/tmp" || len(gotP.McpServers) != 0 || gotP.Meta["keep"] != float64(1) {
		t.Errorf("params = %+v", gotP)
	}
	for _, params := range []string{`{"mcpServers":[]}`, `{"cwd":"/tmp"}`} {
		if _, err := m(t.Context(), json.RawMessage(params)); err == nil {
			t.Errorf("%s: want invalid params from acp-go-sdk's validation", params)
		} else if !errors.Is(err, session.ErrInvalid) || !strings.HasPrefix(err.Error(), "params.") {
			t.Errorf("%s: err = %v, want invalid params naming the member", params, err)
		}
	}
}

// TestFraming_CountsCalls: the framing layer counts exactly the messages
// the dispatch table answers (isCall): requests, but not a session/cancel
// or an mcp/message carrying an MCP notification, and it drops an
// mcp/message notification that carries an MCP request (the draft's). A
// published mcp/message (serverId, no connectionId) is always a
// notification to the agent, whatever its inner method; a request of it
// is answered -33001 by framing itself. Reads of any size see whole
// frames.
func TestFraming_CountsCalls(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"mcp/message","params":{"connectionId":"c","method":"ping"}}`,
		`{"jsonrpc":"2.0","method":"mcp/message","params":{"connectionId":"c","method":"notifications/progress"}}`,
		`{"jsonrpc":"2.0","method":"mcp/message","params":{"connectionId":"c","method":"tools/list"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"mcp/message","params":{"connectionId":"c","method":"notifications/cancelled"}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`{"jsonrpc":"2.0","method":"mcp/message","params":{"serverId":"s1","requestId":"r1","method":"notifications/progress"}}`,
		`{"jsonrpc":"2.0","method":"mcp/message","params":{"serverId":"s1","requestId":"r1","method":"subscriptions/odd"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"mcp/message","params":{"serverId":"s1","requestId":"r2","method":"tools/list"}}`,
	}, "\n") + "\n"
	c := newCalls()
	sink := &frameSink{}
	f := newFraming(NewLineStream(strings.NewReader(in), nil), started(), sink, nil, nil, 0)
	f.calls = c
	var out []byte
	buf := make([]byte, 3)
	for {
		n, err := f.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f.close()
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 8 || strings.Contains(string(out), `"method":"tools/list"`) {
		t.Errorf("forwarded %d frames, want 8 without the mcp/message of tools/list (draft notification, published request):\n%s", len(lines), out)
	}
	if r := parseReplies(t, sink.all()); len(r) != 1 || string(r[0].ID) != "5" || r[0].Error.Code != codeMCPServerUnavailable || r[0].Error.Data["serverId"] != "s1" {
		t.Errorf("replies = %+v, want -33001 naming serverId s1 for the published mcp/message request", r)
	}
	if c.open != 2 {
		t.Errorf("calls read = %d, want 2 (initialize and the mcp/message of ping)", c.open)
	}
	c.answered()
	c.answered()
	c.answered() // one too many changes nothing
	if left, err := c.wait(t.Context()); left != 0 || err != nil {
		t.Errorf("wait = %d, %v", left, err)
	}
}

// TestPromptCancels: session/cancel cancels the session's running prompt,
// a newer prompt cancels the one before, and the end of an older prompt
// does not unregister the newer one.
func TestPromptCancels(t *testing.T) {
	var p promptCancels
	first, endFirst := p.start(t.Context(), "s", 1)
	second, endSecond := p.start(t.Context(), "s", 2)
	if first.Err() == nil {
		t.Error("a newer prompt did not cancel the one before")
	}
	endFirst()
	p.cancel("s", 2)
	if second.Err() == nil {
		t.Error("session/cancel did not cancel the running prompt")
	}
	endSecond()
	other, endOther := p.start(t.Context(), "t", 3)
	defer endOther()
	p.cancel("s", 3)
	if other.Err() != nil {
		t.Error("session/cancel of s cancelled t's prompt")
	}

	// A cancel read before a prompt (ordinal 4 > 3) but handled after it
	// started leaves it running; one read after it (5) cancels it.
	later, endLater := p.start(t.Context(), "s", 4)
	defer endLater()
	p.cancel("s", 3)
	if later.Err() != nil {
		t.Error("a cancel read before the prompt cancelled it")
	}
	p.cancel("s", 5)
	if later.Err() == nil {
		t.Error("a cancel read after the prompt did not cancel it")
	}
	// A prompt read before a cancel handled already starts cancelled.
	p.cancel("u", 7)
	early, endEarly := p.start(t.Context(), "u", 6)
	defer endEarly()
	if early.Err() == nil {
		t.Error("a prompt read before a handled cancel was not cancelled")
	}
	fresh, endFresh := p.start(t.Context(), "u", 8)
	defer endFresh()
	if fresh.Err() != nil {
		t.Error("a prompt read after the cancel started cancelled")
	}
}

// TestAgent_HoldsBackUntilAnnounced: until the client knows a session (its
// opening notifications are sent), its prompts and commands updates wait,
// at most announceWait; a cancelled prompt does not wait.
func TestAgent_HoldsBackUntilAnnounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newTestAgent(nil)
		announced := make(chan struct{})
		a.announcer("s").opened(announced)
		done := make(chan struct{})
		go func() { a.announcer("s").waitAnnounced(t.Context()); close(done) }()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("a prompt went on before the session was announced")
		default:
		}
		close(announced)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("a prompt still waits after the session was announced")
		}

		never := make(chan struct{})
		a.announcer("n").opened(never)
		start := time.Now()
		a.announcer("n").waitAnnounced(t.Context())
		if waited := time.Since(start); waited != announceWait {
			t.Errorf("waited %v, want announceWait (%v)", waited, announceWait)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		start = time.Now()
		a.announcer("n").waitAnnounced(ctx)
		if waited := time.Since(start); waited != 0 {
			t.Errorf("a cancelled prompt waited %v", waited)
		}
		a.announcer("unknown").waitAnnounced(t.Context()) // a session opened elsewhere: no wait
	})
}

// TestFraming_OrdersPromptsAndCancels: the framing layer gives each prompt
// its place in the input and each cancel the number of requests read
// before it, so a cancel cancels only the prompts read before it.
func TestFraming_OrdersPromptsAndCancels(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"other","prompt":[]}}`,
	}, "\n") + "\n"
	f := newFraming(NewLineStream(strings.NewReader(in), nil), started(), &frameSink{}, nil, nil, 0)
	if _, err := io.ReadAll(f); err != nil {
		t.Fatal(err)
	}
	f.close()
	if got := f.order.claimPrompt("s"); got != 1 {
		t.Errorf("first prompt of s: ordinal %d, want 1", got)
	}
	if got := f.order.cancelHandled("s"); got != 1 {
		t.Errorf("the cancel: %d requests read before it, want 1", got)
	}
	if got := f.order.claimPrompt("s"); got != 2 {
		t.Errorf("second prompt of s: ordinal %d, want 2", got)
	}
	if got, none := f.order.claimPrompt("other"), f.order.claimPrompt("s"); got != 3 || none != 0 {
		t.Errorf("prompt of other: %d, want 3; s has none left: %d", got, none)
	}
}
