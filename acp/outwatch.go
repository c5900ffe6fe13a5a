package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// outWatcher is the writer acp-go-sdk sends frames through. It lets the Agent
// wait until the response to a session/new has been written, so that the
// notifications that follow it (server failures, available commands) reach
// the client after the client knows the sessionId. acp-go-sdk writes each
// frame with one Write call; the framing layer writes its error responses
// with writeFrame. Writes are serialized, so frames never interleave.
type outWatcher struct {
	wmu sync.Mutex // held for each write to w
	w   io.Writer

	mu      sync.Mutex
	waiters map[string]chan struct{} // quoted sessionId → closed once a response naming it is written

	// answers, if set before the first write, is told of every response
	// written.
	answers *unanswered
}

func newOutWatcher(w io.Writer) *outWatcher {
	return &outWatcher{w: w, waiters: make(map[string]chan struct{})}
}

// afterResponse returns a channel closed once the response whose result
// names sessionID (a session/new response: a frame with no "method" and
// result.sessionId equal to it) has been written.
func (o *outWatcher) afterResponse(sessionID string) <-chan struct{} {
	ch := make(chan struct{})
	o.mu.Lock()
	o.waiters[`"`+sessionID+`"`] = ch
	o.mu.Unlock()
	return ch
}

// forget drops a waiter that will never fire.
func (o *outWatcher) forget(sessionID string) {
	o.mu.Lock()
	delete(o.waiters, `"`+sessionID+`"`)
	o.mu.Unlock()
}

// writeFrame writes one whole frame that no waiter is looking for.
func (o *outWatcher) writeFrame(p []byte) error {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	_, err := o.w.Write(p)
	return err
}

// Write writes one frame of acp-go-sdk's (an elicitation/create with its
// session scope in place: scopeElicitation) and wakes the waiters it answers.
func (o *outWatcher) Write(p []byte) (int, error) {
	o.wmu.Lock()
	_, err := o.w.Write(scopeElicitation(p))
	o.wmu.Unlock()
	n := len(p)
	if err != nil {
		n = 0
	}
	if o.answers != nil {
		if id := responseID(p); id != nil {
			o.answers.answered(id)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.waiters) == 0 {
		return n, err
	}
	for id, ch := range o.waiters {
		// The substring test is cheap and rules out almost every frame; the
		// decode confirms the frame is the response naming the session.
		if bytes.Contains(p, []byte(id)) && answersSession(p, id) {
			close(ch)
			delete(o.waiters, id)
		}
	}
	return n, err
}

// answersSession reports whether frame is a JSON-RPC response (no method)
// whose result.sessionId is the JSON string quoted.
func answersSession(frame []byte, quoted string) bool {
	var f struct {
		Method *string `json:"method"`
		Result *struct {
			SessionID json.RawMessage `json:"sessionId"`
		} `json:"result"`
	}
	if json.Unmarshal(frame, &f) != nil || f.Method != nil || f.Result == nil {
		return false
	}
	return string(f.Result.SessionID) == quoted
}
