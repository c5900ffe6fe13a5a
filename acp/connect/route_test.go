package connect_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed02d3eb6b/acp-agent/acp/connect"
)

const (
	initReq       = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"ed","version":"1"}}}`
	initResResume = `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{"sessionCapabilities":{"resume":{}}}}}`
	permissionReq = `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"c1"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`
)

// ownID matches the ids a proxy makes: "acp-agent-connect-<nonce>-…".
var ownID = regexp.MustCompile(`^"acp-agent-connect-[a-z0-9]{8}-`)

// fillID puts id in the place of %s in format.
func fillID(format, arg string) string { return strings.Replace(format, "%s", arg, 1) }

// open initializes the proxy's first link and opens sessions s1 and s2.
func open(t *testing.T, e *rawEditor, l *fakeLink) {
	t.Helper()
	e.send(initReq)
	if m := l.next(); m.Method != "initialize" || string(m.ID) != "1" {
		t.Fatalf("the gateway got %s, want the editor's initialize", m.raw)
	}
	l.say(fillID(initResResume, "1"))
	e.next()
	for i, sid := range []string{"s1", "s2"} {
		id := []string{"2", "3"}[i]
		e.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
		l.next()
		l.say(`{"jsonrpc":"2.0","id":` + id + `,"result":{"sessionId":"` + sid + `"}}`)
		if m := e.next(); string(m.ID) != id {
			t.Fatalf("the editor got %s, want the response to %s", m.raw, id)
		}
	}
}

// TestProxy_Drop: at a drop, the editor's requests under way are answered
// (an error saying so; a session/close with success, its session is not
// re-attached), the gateway's request waiting at the editor is withdrawn,
// each open session is told; the new link is initialized with the
// editor's params under the proxy's id and the session resumed. A new
// request of the gateway with the id the editor still holds from the old
// link reaches it under another id; the late answer to the old one is
// dropped, and the answer to the new one gets the gateway's id back.
func TestProxy_Drop(t *testing.T) {
	links := make(chan connect.Link, 2)
	l1, l2 := newFakeLink(t), newFakeLink(t)
	links <- l1
	e := startRaw(t, dialer(links, errRefused), &connect.Options{URL: "wss://gw.example/acp?token=secret"})
	open(t, e, l1)

	l1.say(permissionReq)
	if m := e.next(); string(m.ID) != "0" || m.Method != "session/request_permission" {
		t.Fatalf("the editor got %s, want the permission request as the gateway sent it", m.raw)
	}
	e.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	l1.next()
	e.send(`{"jsonrpc":"2.0","id":5,"method":"session/close","params":{"sessionId":"s2"}}`)
	l1.next()
	links <- l2
	l1.cut(errors.New("read wss://gw.example/acp?token=secret: connection reset"))

	var prompted, closed, withdrawn, told bool
	for range 4 {
		m := e.next()
		switch {
		case string(m.ID) == "4":
			prompted = m.Error != nil && m.Error.Code == -32603 && strings.Contains(m.Error.Message, "lost the connection to the gateway wss://gw.example/acp?REDACTED (read wss://gw.example/acp?REDACTED: connection reset) while session/prompt was under way") && !strings.Contains(m.raw, "secret")
		case string(m.ID) == "5":
			closed = m.Error == nil && string(m.Result) == "{}"
		case m.Method == "$/cancel_request":
			withdrawn = string(m.Params) == `{"requestId":0}`
		case m.Method == "session/update":
			told = strings.Contains(string(m.Params), `"sessionId":"s1"`) && strings.Contains(string(m.Params), "Lost the connection to the gateway wss://gw.example/acp?REDACTED (read wss://gw.example/acp?REDACTED: connection reset); reconnecting.")
		default:
			t.Errorf("unexpected at the drop: %s", m.raw)
		}
	}
	if !prompted || !closed || !withdrawn || !told {
		t.Fatalf("at the drop: prompt answered %v, close answered %v, permission withdrawn %v, session told %v; want all", prompted, closed, withdrawn, told)
	}

	m := l2.next()
	if m.Method != "initialize" || !ownID.MatchString(string(m.ID)) || !strings.HasSuffix(string(m.ID), `-1"`) || !strings.Contains(string(m.Params), `"clientInfo":{"name":"ed","version":"1"}`) {
		t.Fatalf("the new link got %s, want the editor's initialize under the proxy's id", m.raw)
	}
	l2.say(fillID(initResResume, string(m.ID)))
	m = l2.next()
	if m.Method != "session/resume" || !strings.Contains(string(m.Params), `"sessionId":"s1"`) || !strings.Contains(string(m.Params), `"cwd":"/w"`) {
		t.Fatalf("the new link got %s, want session/resume of s1", m.raw)
	}
	l2.say(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`)
	if m := e.next(); m.Method != "session/update" || !strings.Contains(string(m.Params), "Reconnected to the gateway wss://gw.example/acp?REDACTED; the session is re-attached.") {
		t.Fatalf("the editor got %s, want to hear it reconnected", m.raw)
	}

	l2.say(permissionReq)
	m = e.next()
	if !ownID.MatchString(string(m.ID)) || !strings.HasSuffix(string(m.ID), `-req-1"`) {
		t.Fatalf("the editor got %s, want the new request under the proxy's id (0 is still the old one's)", m.raw)
	}
	e.send(`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`)
	e.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
	m = l2.next()
	if string(m.ID) != "0" || !strings.Contains(string(m.Result), "selected") {
		t.Fatalf("the gateway got %s, want the answer to its request 0 (and not the old one's)", m.raw)
	}
	e.send(`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	if m := l2.next(); string(m.ID) != "6" {
		t.Fatalf("the gateway got %s, want the editor's next prompt", m.raw)
	}
	l2.say(`{"jsonrpc":"2.0","id":6,"result":{"stopReason":"end_turn"}}`)
	e.next()
	if err := e.end(); err != nil {
		t.Errorf("Run = %v", err)
	}
	<-l2.closedByProxy()
}

// TestProxy_HoldsWhileDialing: what the editor sends before the gateway
// answers waits, in order, up to MaxHeld; a request beyond that is
// answered at once.
func TestProxy_HoldsWhileDialing(t *testing.T) {
	links := make(chan connect.Link)
	e := startRaw(t, dialer(links, errRefused), &connect.Options{MaxHeld: 2})
	e.send(initReq)
	e.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s0"}}`)
	e.send(`{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}`)
	m := e.next()
	if string(m.ID) != "2" || m.Error == nil || !strings.Contains(m.Error.Message, "2 messages already wait") {
		t.Fatalf("the editor got %s, want its third message refused", m.raw)
	}
	l := newFakeLink(t)
	links <- l
	if m := l.next(); m.Method != "initialize" || string(m.ID) != "1" {
		t.Fatalf("the gateway got %s first, want the editor's initialize", m.raw)
	}
	if m := l.next(); m.Method != "session/cancel" {
		t.Fatalf("the gateway got %s second, want the editor's session/cancel", m.raw)
	}
	l.say(fillID(initResResume, "1"))
	e.next()
	if err := e.end(); err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestProxy_GivesUp: with the gateway gone for good, the proxy tries for
// MaxElapsed (5 min, in a synctest bubble's time), then answers what
// waits, tells each open session and ends with ErrGaveUp.
func TestProxy_GivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		links := make(chan connect.Link, 1)
		l := newFakeLink(t)
		links <- l
		tries := 0
		dial := dialer(links, errRefused)
		e := startRaw(t, func(ctx context.Context) (connect.Link, error) { tries++; return dial(ctx) }, &connect.Options{URL: "wss://gw.example/acp"})
		open(t, e, l)
		start := time.Now()
		close(links)
		l.cut(errors.New("test: cut"))
		for range 2 { // s1, s2 told
			if m := e.next(); m.Method != "session/update" || !strings.Contains(string(m.Params), "Lost the connection") {
				t.Fatalf("the editor got %s, want to hear the connection was lost", m.raw)
			}
		}
		e.send(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
		m := e.next()
		if string(m.ID) != "7" || m.Error == nil || !strings.Contains(m.Error.Message, "gave up connecting to the gateway wss://gw.example/acp after ") || !strings.Contains(m.Error.Message, "connection refused") {
			t.Fatalf("the editor got %s, want the held prompt answered: gave up", m.raw)
		}
		if waited := time.Since(start); waited > connect.DefaultMaxElapsed || waited < 4*time.Minute {
			t.Errorf("gave up after %v, want about %v", waited, connect.DefaultMaxElapsed)
		}
		for range 2 {
			if m := e.next(); m.Method != "session/update" || !strings.Contains(string(m.Params), "acp-agent connect has ended") {
				t.Fatalf("the editor got %s, want to hear the proxy gave up", m.raw)
			}
		}
		err := e.end()
		if !errors.Is(err, connect.ErrGaveUp) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("Run = %v, want ErrGaveUp with the cause", err)
		}
		if tries < 10 {
			t.Errorf("%d dials in 5 minutes, want the backoff's (about 15)", tries)
		}
	})
}

// TestProxy_PermanentDialErrorEndsAtOnce: a dial error marked Permanent
// (a refused token) is not tried again.
func TestProxy_PermanentDialErrorEndsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tries := 0
		release := make(chan struct{})
		e := startRaw(t, func(context.Context) (connect.Link, error) {
			<-release
			tries++
			return nil, connect.Permanent(errors.New("401 Unauthorized: the token is not the gateway's"))
		}, nil)
		start := time.Now()
		e.send(initReq)
		synctest.Wait() // the initialize is held
		close(release)
		m := e.next()
		if string(m.ID) != "1" || m.Error == nil || !strings.Contains(m.Error.Message, "401 Unauthorized") {
			t.Fatalf("the editor got %s, want its initialize answered with the dial's error", m.raw)
		}
		err := e.end()
		if !errors.Is(err, connect.ErrGaveUp) || tries != 1 || time.Since(start) > time.Second {
			t.Errorf("Run = %v after %d tries and %v, want ErrGaveUp at once", err, tries, time.Since(start))
		}
	})
}
