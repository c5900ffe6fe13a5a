package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/session"
)

func TestReadMessage_KeepsOnlyTheTopLevelOfATooLargeMessage(t *testing.T) {
	big := strings.Repeat("x", MaxFrameBytes)
	msg := `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"text":"` + big + `"}}`
	_, err := ReadMessage(strings.NewReader(msg))
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("err = %v, want a *TooLargeError", err)
	}
	if tl.Size != len(msg) {
		t.Errorf("Size = %d, want %d", tl.Size, len(msg))
	}
	if len(tl.Head) > skeletonMax {
		t.Errorf("Head holds %d bytes, over %d", len(tl.Head), skeletonMax)
	}
	var head struct {
		ID     int    `json:"id"`
		Method string `json:"method"`
	}
	if err := json.Unmarshal(tl.Head, &head); err != nil || head.ID != 7 || head.Method != "session/prompt" {
		t.Errorf("Head = %s (%v), want id 7 and the method", tl.Head, err)
	}

	small := `{"jsonrpc":"2.0","method":"x"}`
	got, err := ReadMessage(strings.NewReader(small))
	if err != nil || string(got) != small {
		t.Errorf("ReadMessage(%s) = %s, %v", small, got, err)
	}
}

func TestLineStream_ReadsEachLineAndTheLastOneBeforeEOF(t *testing.T) {
	s := NewLineStream(strings.NewReader("{\"a\":1}\r\n\n  \n{\"b\":2}"), io.Discard)
	var got []string
	for {
		m, err := s.ReadMessage()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		got = append(got, string(m))
	}
	if strings.Join(got, " ") != `{"a":1} {"b":2}` {
		t.Errorf("messages = %q", got)
	}
}

// Two connections on one core (a network front end's): each drives only
// the sessions it opened, ending one leaves the other's, and a reopen
// moves a session to the connection that reopened it.
func TestAgent_ConnectionsOfOneCoreKeepTheirSessions(t *testing.T) {
	core := session.NewCore(nil)
	t.Cleanup(core.Shutdown)
	a := startAgentOn(t, New(core, nil))
	bAgent := New(core, nil)
	b := startAgentOn(t, bAgent)
	cwd := t.TempDir()
	sid := a.newSessionIn(cwd)

	_, err := b.conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/help")}})
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != -32002 {
		t.Fatalf("another connection's prompt: err = %v, want -32002 (unknown session)", err)
	}
	if bAgent.HasSession(sid) || !a.agent.HasSession(sid) {
		t.Fatalf("HasSession: a %v, b %v; want only a", a.agent.HasSession(sid), bAgent.HasSession(sid))
	}
	other := b.newSessionIn(cwd)
	bAgent.Shutdown() // b's sessions end, a's goes on
	if core.Lookup(other) != nil {
		t.Error("b's session is still live after b's Shutdown")
	}
	if stop, _ := a.prompt(t.Context(), sid, "/help"); stop != acpsdk.StopReasonEndTurn {
		t.Errorf("a's prompt after b's shutdown: stop = %s", stop)
	}

	// A reopen on another connection takes the session over.
	d := startAgentOn(t, New(core, nil))
	if _, err := d.conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if a.agent.HasSession(sid) || !d.agent.HasSession(sid) {
		t.Errorf("after a reopen on d: a %v, d %v; want only d", a.agent.HasSession(sid), d.agent.HasSession(sid))
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := a.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/help")}}); !errors.As(err, &re) || re.Code != -32002 {
		t.Errorf("the former connection's prompt: err = %v, want -32002", err)
	}
}
