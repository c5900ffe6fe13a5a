package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// keepAlive is how often an SSE stream with nothing to send sends a comment,
// so that proxies do not take it for idle.
const keepAlive = 15 * time.Second

// httpState is the routing of an HTTP connection's messages: the stream of
// the connection and those of its sessions (mailboxes), the routes of the
// requests in flight both ways, and its activity for the idle timeout.
type httpState struct {
	c *connection

	// initKey is the id key of the initialize request; its response goes
	// to initResp (the POST waiting for it), not to a stream.
	initKey  string
	initResp chan []byte

	// mu guards the fields below.
	mu       sync.Mutex
	main     *mailbox            // the connection's stream
	sessions map[string]*mailbox // by sessionId
	// idle counts the session mailboxes holding messages with no receiver
	// (Limits.MaxSessionStreams).
	idle int
	// buffered is the bytes queued in every mailbox; progress is closed
	// (and replaced) whenever some are taken, or when the connection ends.
	buffered int
	progress chan struct{}
	// requests routes the responses to the client's requests in flight:
	// by id key, the session whose stream takes the response ("": the
	// connection's).
	requests map[string]string
	// asks routes the client's responses to the agent's requests in
	// flight: by id key, the session of the stream the request went to.
	asks map[string]string
	// active counts the open streams and the POSTs under way; lastActive
	// is when it last dropped to zero or a message came.
	active     int
	lastActive time.Time
	idleTimer  *time.Timer
	finished   bool
	// stalled is set once the client has read nothing for
	// Limits.OutputStall: later writes that find no room fail at once
	// (the connection is ending) instead of waiting as long again.
	stalled bool
}

// mailbox is one stream's queue of messages. Its fields are guarded by the
// httpState's mu.
type mailbox struct {
	queue    [][]byte
	bytes    int
	receiver bool
	// wake has room for one signal: a message was queued, or the
	// connection finished.
	wake chan struct{}
}

func newMailbox() *mailbox { return &mailbox{wake: make(chan struct{}, 1)} }

func (m *mailbox) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func newHTTPState(c *connection, initKey string) *httpState {
	return &httpState{
		c: c, initKey: initKey, initResp: make(chan []byte, 1),
		main: newMailbox(), sessions: make(map[string]*mailbox), progress: make(chan struct{}),
		requests: make(map[string]string), asks: make(map[string]string), lastActive: time.Now(),
	}
}

// route queues the agent's message msg on the stream of its route,
// waiting while the connection holds Limits.MaxBufferedBytes; a client
// that takes nothing for Limits.OutputStall loses the connection.
func (s *httpState) route(msg []byte) error {
	f, _ := readFields(msg)
	key := idKey(f.ID)
	if f.isResponse() && key == s.initKey && s.initKey != "" {
		s.initKey = "" // only the writer goroutine (the agent's, serialized) reads it
		s.initResp <- msg
		return nil
	}
	lim := s.c.h.lim
	var stall *time.Timer
	s.mu.Lock()
	for s.buffered >= lim.MaxBufferedBytes && !s.finished {
		if s.stalled {
			s.mu.Unlock()
			return stalledError(lim.OutputStall)
		}
		progress := s.progress
		s.mu.Unlock()
		if stall == nil {
			stall = time.NewTimer(lim.OutputStall)
			defer stall.Stop()
		}
		select {
		case <-progress:
		case <-stall.C:
			s.mu.Lock()
			s.stalled = true
			buffered := s.buffered
			s.mu.Unlock()
			s.c.h.log.Warn("closing an ACP connection: its client reads none of its output", "connection", s.c.id, "buffered", buffered, "stall", lim.OutputStall)
			s.c.end(closeStalled)
			return stalledError(lim.OutputStall)
		}
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if s.finished {
		return errFinished
	}
	sid := ""
	switch {
	case f.isResponse():
		sid = s.requests[key]
		delete(s.requests, key)
	default:
		// A child session's messages (a subagent: the parent's sessionId,
		// "/" and its name; acp/subagents.go) go on its parent's stream:
		// the client reads the child there, with no stream of its own.
		sid, _, _ = strings.Cut(f.Params.SessionID, "/")
		if f.isRequest() && key != "" {
			s.asks[key] = sid
		}
	}
	mb := s.main
	if sid != "" {
		var err error
		if mb, err = s.sessionBox(sid); err != nil {
			s.c.h.log.Warn("closing an ACP connection", "connection", s.c.id, "err", err)
			s.c.end(closeLimit)
			return err
		}
	}
	mb.queue = append(mb.queue, msg)
	mb.bytes += len(msg)
	s.buffered += len(msg)
	mb.signal()
	return nil
}

// sessionBox returns session sid's mailbox, creating it; a new one without
// a receiver counts toward Limits.MaxSessionStreams. Call with mu held.
func (s *httpState) sessionBox(sid string) (*mailbox, error) {
	if mb := s.sessions[sid]; mb != nil {
		if !mb.receiver && len(mb.queue) == 0 {
			s.idle++
		}
		return mb, nil
	}
	if s.idle >= s.c.h.lim.MaxSessionStreams {
		return nil, fmt.Errorf("over %d session streams hold messages no client reads (Limits.MaxSessionStreams)", s.c.h.lim.MaxSessionStreams)
	}
	mb := newMailbox()
	s.sessions[sid] = mb
	s.idle++
	return mb, nil
}

// expect records the route of the response to the client's request f: the
// stream of its session, or the connection's. session/load's too goes to
// its session's stream (the SDK's server sends it to the connection's),
// behind the replay it answers: on two streams, the client could read the
// response before the last replayed updates.
func (s *httpState) expect(f fields) {
	key := idKey(f.ID)
	if key == "" || len(key) > maxIDLength {
		return
	}
	sid := f.Params.SessionID
	s.mu.Lock()
	s.requests[key] = sid
	s.mu.Unlock()
}

// answered forgets the agent's request id, answered by the client, and
// returns the session of the stream it went to; ok is false for an id the
// agent has no request of.
func (s *httpState) answered(id json.RawMessage) (sid string, ok bool) {
	key := idKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, ok = s.asks[key]
	delete(s.asks, key)
	return sid, ok
}

// waitRoom waits while the connection holds Limits.MaxBufferedBytes, so
// that a client reading nothing cannot make the agent produce more; after
// Limits.OutputStall without progress the connection ends.
func (s *httpState) waitRoom(ctx context.Context, c *connection) error {
	lim := c.h.lim
	var stall *time.Timer
	for {
		s.mu.Lock()
		full, progress, stalled := s.buffered >= lim.MaxBufferedBytes && !s.finished, s.progress, s.stalled
		s.mu.Unlock()
		if !full {
			return nil
		}
		if stalled {
			return stalledError(lim.OutputStall)
		}
		if stall == nil {
			stall = time.NewTimer(lim.OutputStall)
			defer stall.Stop()
		}
		select {
		case <-progress:
		case <-stall.C:
			s.mu.Lock()
			s.stalled = true
			s.mu.Unlock()
			c.end(closeStalled)
			return stalledError(lim.OutputStall)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// acquire makes the request the receiver of the connection's stream (sid
// "") or of session sid's, which it creates if needed; a stream that has a
// receiver already is an error (409).
func (s *httpState) acquire(sid string) (*mailbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return nil, errFinished
	}
	mb := s.main
	if sid != "" {
		mb = s.sessions[sid]
		if mb == nil && len(s.sessions) >= s.c.h.lim.MaxSessionStreams {
			return nil, fmt.Errorf("the connection has %d session streams, its limit (Limits.MaxSessionStreams): close some", len(s.sessions))
		}
		if mb == nil {
			mb = newMailbox()
			s.sessions[sid] = mb
		} else if !mb.receiver && len(mb.queue) > 0 {
			s.idle--
		}
	}
	if mb.receiver {
		what := "the connection's stream"
		if sid != "" {
			what = "session " + sid + "'s stream"
		}
		return nil, fmt.Errorf("%s already has a receiver: one GET at a time", what)
	}
	mb.receiver = true
	return mb, nil
}

// release ends the request's receipt of mb; a session stream left with
// nothing queued is dropped.
func (s *httpState) release(sid string, mb *mailbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mb.receiver = false
	if sid == "" || s.sessions[sid] != mb {
		return
	}
	if len(mb.queue) == 0 {
		delete(s.sessions, sid)
		return
	}
	s.idle++
	if s.idle > s.c.h.lim.MaxSessionStreams && !s.finished {
		s.c.end(closeLimit)
	}
}

// take removes what mb holds and reports whether the connection has
// finished.
func (s *httpState) take(mb *mailbox) (msgs [][]byte, finished bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs, mb.queue = mb.queue, nil
	if len(msgs) > 0 {
		s.buffered -= mb.bytes
		mb.bytes = 0
		close(s.progress)
		s.progress = make(chan struct{})
	}
	return msgs, s.finished
}

// stream writes mb's messages to w as SSE events until the connection
// finishes (what is queued is sent first) or the client goes away. Each
// write has Limits.OutputStall to go through.
func (s *httpState) stream(w http.ResponseWriter, r *http.Request, mb *mailbox) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: pass events on at once
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	stall := s.c.h.lim.OutputStall
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		msgs, finished := s.take(mb)
		if len(msgs) > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(stall))
			for _, m := range msgs {
				if _, err := fmt.Fprintf(w, "data: %s\n\n", m); err != nil {
					return
				}
			}
			if rc.Flush() != nil {
				return
			}
			continue
		}
		if finished {
			return
		}
		select {
		case <-mb.wake:
		case <-tick.C:
			_ = rc.SetWriteDeadline(time.Now().Add(stall))
			if _, err := w.Write([]byte(":\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// touch counts a stream opened or a POST begun (+1), or ended (-1).
func (s *httpState) touch(delta int) {
	s.mu.Lock()
	s.active += delta
	s.lastActive = time.Now()
	s.mu.Unlock()
}

// startIdle starts the idle check: a connection with no stream and no POST
// for Limits.IdleTimeout ends.
func (s *httpState) startIdle() {
	idle := s.c.h.lim.IdleTimeout
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	var check func()
	check = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.finished {
			return
		}
		if s.active == 0 {
			if left := idle - time.Since(s.lastActive); left > 0 {
				s.idleTimer = time.AfterFunc(left, check)
				return
			}
			s.c.h.log.Info("closing an idle ACP connection", "connection", s.c.id, "idle", idle)
			s.c.end(closeIdle)
			return
		}
		s.idleTimer = time.AfterFunc(idle, check)
	}
	s.idleTimer = time.AfterFunc(idle, check)
}

// finish marks the connection's streams finished: they send what they hold
// and end; writes waiting for room give up.
func (s *httpState) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	s.finished = true
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	close(s.progress)
	s.progress = make(chan struct{})
	s.main.signal()
	for _, mb := range s.sessions {
		mb.signal()
	}
}
