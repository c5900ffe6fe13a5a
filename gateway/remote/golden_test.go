package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

var updateGolden = flag.Bool("update", false, "rewrite the gateway's frames in testdata/transcript.txt from what it writes")

// TestGolden_Transcript replays testdata/transcript.txt against a real
// Server over a raw WebSocket: each "-> " line is a frame the translator
// sends, each "<- " line the frame the gateway must write next (compared as
// JSON values). Every line must also appear verbatim in
// docs/gateway-protocol.md, so the documented frames are the ones the code
// writes.
func TestGolden_Transcript(t *testing.T) {
	lines := readTranscript(t, "testdata/transcript.txt")
	srv := NewServer(runner.NewLocal(nil), &ServerOptions{Token: "s3cret", Info: PeerInfo{Name: "acp-agent gateway", Version: "1.0.0"}})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	out := replay(t, ws, lines, "->")
	if t.Failed() {
		return
	}
	if *updateGolden {
		if err := os.WriteFile("testdata/transcript.txt", []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	doc, err := os.ReadFile("../../docs/gateway-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range lines {
		if !strings.Contains(string(doc), line) {
			t.Errorf("line %d of testdata/transcript.txt is not in docs/gateway-protocol.md:\n%s", i+1, line)
		}
	}
}

// docCallID stands for the random tool call id in the transcript.
const docCallID = "call_7f3a9c01d2e4b586"

var callIDPattern = regexp.MustCompile(`call_[0-9a-f]{16}`)

// TestGolden_ClientFrames plays the gateway's side of
// testdata/transcript.txt to a real Client: what the Client writes must be
// the transcript's "-> " frames.
func TestGolden_ClientFrames(t *testing.T) {
	lines := readTranscript(t, "testdata/transcript.txt")
	done := make(chan struct{})
	var served atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !served.CompareAndSwap(false, true) {
			http.Error(w, "the transcript is played once", http.StatusServiceUnavailable)
			return
		}
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			close(done)
			return
		}
		defer ws.Close()
		replay(t, ws, lines, "<-")
		close(done)
		// Keep the connection until the client closes it, so that it does
		// not reconnect.
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}))
	defer ts.Close()
	t.Cleanup(func() { // the handler may still report until it is done
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	})
	c, err := Dial(t.Context(), &ClientOptions{URL: "ws" + strings.TrimPrefix(ts.URL, "http"), Token: "s3cret", Info: PeerInfo{Name: "acp-agent", Version: "1.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo := &gateway.Tool{Name: "mcp__local__echo", Label: "local/echo", Description: "Echo a message",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`), Annotations: gateway.Annotations{ReadOnlyHint: true},
		Execute: func(_ context.Context, _ string, args map[string]any, onUpdate func(gateway.ToolUpdate)) (gateway.Result, error) {
			onUpdate(gateway.ToolUpdate{Progress: 1, Total: 2})
			return gateway.Result{Content: []gateway.Content{gateway.TextContent("Echo: " + args["message"].(string))}}, nil
		}}
	if err := c.SetExtraTools(t.Context(), "acp:s1", []*gateway.Tool{echo}); err != nil {
		t.Fatal(err)
	}
	stop, err := c.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:s1", RunID: "r1", Message: []gateway.Content{gateway.TextContent(`/call mcp__local__echo {"message":"hi"}`)}}, func(gateway.Event) {})
	if err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("Send = %s, %v", stop, err)
	}
	// A later turn (a model's, not the transcript's) compacted the history
	// from its own first message on: the next chat.send carries the view.
	c.opts.History.Append(t.Context(), "acp:s1", gateway.Turn{StopReason: gateway.StopEndTurn,
		Messages: []gateway.Message{
			{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("What did the tool say?")}},
			{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(`It said "Echo: hi".`)}},
		},
		Usage:      gateway.Usage{InputTokens: 1200, CacheReadTokens: 3400, OutputTokens: 80, Requests: 2, Cost: 0.0048},
		Compaction: &gateway.Compaction{Summary: `The user had local/echo echo "hi"; it answered "Echo: hi".`, From: 3},
	})
	stop, err = c.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:s1", RunID: "r2", Message: []gateway.Content{gateway.TextContent("/tools")}}, func(gateway.Event) {})
	if err != nil || stop != gateway.StopEndTurn {
		t.Fatalf("the second Send = %s, %v", stop, err)
	}
	if err := c.ClearExtraTools(t.Context(), ""); err == nil || !strings.Contains(err.Error(), "sessionKey is empty (bad_request, code -32602)") {
		t.Errorf("ClearExtraTools: %v", err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the transcript was not played to its end")
	}
}

// replay plays one side of a transcript on ws: lines starting with mine
// are sent, the others read and compared as JSON values. Random tool call
// ids read are shown as docCallID, and docCallID sent is the last one read.
// It returns the transcript as seen (for -update).
func replay(t *testing.T, ws *websocket.Conn, lines []string, mine string) []string {
	t.Helper()
	var out []string
	realID := ""
	for i, line := range lines {
		dir, frame, _ := strings.Cut(line, " ")
		if dir != "->" && dir != "<-" {
			t.Errorf("line %d: starts with %q, want -> or <-", i+1, dir)
			return out
		}
		if dir == mine {
			if realID != "" {
				frame = strings.ReplaceAll(frame, docCallID, realID)
			}
			if err := ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
				t.Errorf("line %d: sending: %v", i+1, err)
				return out
			}
			out = append(out, line)
			continue
		}
		_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, got, err := ws.ReadMessage()
		if err != nil {
			t.Errorf("line %d: want %s, read: %v", i+1, frame, err)
			return out
		}
		if id := callIDPattern.Find(got); id != nil {
			realID = string(id)
		}
		got = callIDPattern.ReplaceAll(got, []byte(docCallID))
		out = append(out, dir+" "+string(got))
		if *updateGolden {
			t.Logf("%s %s", dir, got)
			continue
		}
		var g, w any
		if err := json.Unmarshal([]byte(frame), &w); err != nil {
			t.Errorf("line %d: the transcript's frame is no JSON: %v", i+1, err)
			return out
		}
		if err := json.Unmarshal(got, &g); err != nil || !reflect.DeepEqual(g, w) {
			t.Errorf("line %d: got\n%s\nwant\n%s", i+1, got, frame)
			return out
		}
	}
	return out
}

func readTranscript(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestGolden_DocumentedTurnAndEvents: the examples of a chat.send result
// with usage and a compaction, and of the compaction and usage events, in
// docs/gateway-protocol.md are what the protocol's types write (the
// transcript's direct model reports neither).
func TestGolden_DocumentedTurnAndEvents(t *testing.T) {
	doc, err := os.ReadFile("../../docs/gateway-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	summary := `The user had local/echo echo "hi"; it answered "Echo: hi".`
	for name, v := range map[string]any{
		"chat.send result": ChatSendResult{StopReason: gateway.StopEndTurn,
			Messages: []gateway.Message{
				{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("What did the tool say?")}},
				{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(`It said "Echo: hi".`)}},
			},
			Usage:      gateway.Usage{InputTokens: 1200, CacheReadTokens: 3400, OutputTokens: 80, Requests: 2, Cost: 0.0048},
			Compaction: &gateway.Compaction{Summary: summary, From: 3}},
		"compaction event": chatEvent("acp:s1", "r3", gateway.Event{Kind: gateway.EventCompaction,
			Compaction: &gateway.CompactionReport{Summary: summary, Before: 151200, After: 2300, Reason: "threshold"}}).withSeq(10),
		"usage event": chatEvent("acp:s1", "r3", gateway.Event{Kind: gateway.EventUsage, Usage: &gateway.UsageReport{
			Turn:    gateway.Usage{InputTokens: 300, CacheReadTokens: 3400, OutputTokens: 40, Requests: 1, Cost: 0.0025},
			Session: gateway.Usage{InputTokens: 1500, CacheReadTokens: 6800, OutputTokens: 120, Requests: 3, Cost: 0.0073},
			Used:    3740, Size: 200000}}).withSeq(12),
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), string(b)) {
			t.Errorf("the %s is not in docs/gateway-protocol.md as the code writes it:\n%s", name, b)
		}
	}
}

// withSeq returns e numbered n, as the peer numbers it when it sends it.
func (e *ChatEvent) withSeq(n uint64) *ChatEvent {
	e.setSeq(n)
	return e
}
