package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/seed02d3eb6b/acp-agent/acp"
)

// postTimeout bounds one POST (the server answers at once, or after its
// client has read enough of its output: Limits.OutputStall).
const postTimeout = 2 * time.Minute

// httpLink is Streamable HTTP's client side, as the SDK's client
// (http-stream.js) does it: initialize POSTed first, then the connection's
// stream, each session's stream opened before the session's first message
// and when a response names a new session; a session refused with 409
// fails its requests until it is reattached (session/load or
// session/resume).
type httpLink struct {
	url    string
	header http.Header
	hc     *http.Client
	log    *slog.Logger

	ctx    context.Context // of every request; cancel ends them
	cancel context.CancelFunc
	in     chan []byte   // the agent's messages, for read
	done   chan struct{} // closed when the connection fails or closes
	once   sync.Once
	err    error // why done was closed; set before

	// mu guards the fields below.
	mu     sync.Mutex
	connID string
	// streams are the session streams open or opening, by sessionId; ready
	// is closed once the GET was answered (err: how).
	streams map[string]*sessionStream
	// failed are the sessions refused with 409, until reattached.
	failed map[string]error
	// pending are the client's requests of a session awaiting their
	// response: by id key, the session and the id.
	pending map[string]pendingRequest
	// asks are the agent's requests that came on a session's stream, by id
	// key: the client's response goes with that session's header.
	asks map[string]string
}

type sessionStream struct {
	ready chan struct{}
	err   error
}

type pendingRequest struct {
	session string
	id      json.RawMessage
}

func newHTTPLink(u string, header http.Header, hc *http.Client, log *slog.Logger) *httpLink {
	ctx, cancel := context.WithCancel(context.Background())
	return &httpLink{
		url: u, header: header, hc: hc, log: log, ctx: ctx, cancel: cancel,
		in: make(chan []byte, 256), done: make(chan struct{}),
		streams: make(map[string]*sessionStream), failed: make(map[string]error),
		pending: make(map[string]pendingRequest), asks: make(map[string]string),
	}
}

func (l *httpLink) read() ([]byte, error) {
	select {
	case m := <-l.in:
		return m, nil
	default:
	}
	select {
	case m := <-l.in:
		return m, nil
	case <-l.done:
		select {
		case m := <-l.in:
			return m, nil
		default:
		}
		return nil, l.err
	}
}

// fail ends the connection with err (the first error stays).
func (l *httpLink) fail(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.done)
		l.cancel()
	})
}

// deliver hands the agent's message to read, waiting while read is behind.
func (l *httpLink) deliver(msg []byte) {
	select {
	case l.in <- msg:
	case <-l.done:
	}
}

func (l *httpLink) write(msg []byte) error {
	select {
	case <-l.done:
		return l.err
	default:
	}
	f, ok := readFields(msg)
	if !ok {
		return fmt.Errorf("not a JSON-RPC message: %.64s", msg)
	}
	l.mu.Lock()
	connID := l.connID
	l.mu.Unlock()
	if connID == "" {
		return l.initialize(msg, f)
	}
	key := idKey(f.ID)
	sid := f.Params.SessionID
	if f.isResponse() {
		l.mu.Lock()
		sid = l.asks[key]
		delete(l.asks, key)
		l.mu.Unlock()
	}
	if sid != "" {
		if f.Method == "session/load" || f.Method == "session/resume" {
			l.mu.Lock()
			delete(l.failed, sid)
			l.mu.Unlock()
		}
		if err := l.openSession(sid); err != nil {
			if se, ok := err.(*StatusError); ok && se.Status == http.StatusConflict {
				l.sessionFailed(sid, err)
				if f.isRequest() {
					l.answerError(f.ID, err)
				}
				return nil
			}
			l.fail(err)
			return err
		}
		if f.isRequest() && key != "" {
			l.mu.Lock()
			l.pending[key] = pendingRequest{session: sid, id: f.ID}
			l.mu.Unlock()
		}
	}
	err := l.post(msg, connID, sid)
	if err == nil {
		return nil
	}
	stillPending := true
	if key != "" && sid != "" && f.isRequest() {
		l.mu.Lock()
		_, stillPending = l.pending[key]
		delete(l.pending, key)
		l.mu.Unlock()
	}
	se, isStatus := err.(*StatusError)
	switch {
	case isStatus && se.Status == http.StatusConflict && sid != "":
		l.sessionFailed(sid, err)
		if f.isRequest() && stillPending {
			l.answerError(f.ID, err)
		}
		return nil
	case isStatus && f.isRequest() && !connectionGone(se.Status):
		// Only this request fails; the connection goes on.
		if stillPending {
			l.answerError(f.ID, err)
		}
		return nil
	}
	l.fail(err)
	return err
}

// connectionGone reports whether a POST's status means the connection is
// unusable: credentials refused, or the connection unknown or ended.
func connectionGone(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone:
		return true
	}
	return false
}

// initialize POSTs the initialize request msg, reads its response and the
// connection id, and opens the connection's stream.
func (l *httpLink) initialize(msg []byte, f fields) error {
	if f.Method != "initialize" || !f.hasID {
		return fmt.Errorf("the first message over Streamable HTTP must be the initialize request, not %q", f.Method)
	}
	resp, err := l.do(http.MethodPost, msg, nil)
	if err != nil {
		l.fail(err)
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, acp.MaxFrameBytes+1))
	if err != nil {
		l.fail(err)
		return err
	}
	if resp.StatusCode != http.StatusOK {
		err := &StatusError{Status: resp.StatusCode, Body: truncateBody(body), URL: l.url}
		l.fail(err)
		return err
	}
	id := resp.Header.Get(HeaderConnectionID)
	if id == "" {
		err := fmt.Errorf("%s: the initialize response has no %s", l.url, HeaderConnectionID)
		l.fail(err)
		return err
	}
	l.mu.Lock()
	l.connID = id
	l.mu.Unlock()
	ready := make(chan struct{})
	var serr error
	go l.stream("", func(err error) { serr = err; close(ready) })
	select {
	case <-ready:
	case <-l.done:
		return l.err
	}
	if serr != nil {
		l.fail(serr)
		return serr
	}
	l.deliver(body)
	return nil
}

// openSession opens session sid's stream unless it is open, waiting for
// the GET's answer; a session failed with 409 stays failed until it is
// reattached.
func (l *httpLink) openSession(sid string) error {
	l.mu.Lock()
	if err := l.failed[sid]; err != nil {
		l.mu.Unlock()
		return err
	}
	st := l.streams[sid]
	if st == nil {
		st = &sessionStream{ready: make(chan struct{})}
		l.streams[sid] = st
		go l.stream(sid, func(err error) { st.err = err; close(st.ready) })
	}
	l.mu.Unlock()
	select {
	case <-st.ready:
		return st.err
	case <-l.done:
		return l.err
	}
}

// stream reads the connection's stream (sid "") or a session's until it
// ends; opened is called once the GET is answered, with its error.
func (l *httpLink) stream(sid string, opened func(error)) {
	h := http.Header{"Accept": {"text/event-stream"}}
	if sid != "" {
		h.Set(HeaderSessionID, sid)
	}
	resp, err := l.doStream(h)
	if err == nil && resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
		resp.Body.Close()
		err = &StatusError{Status: resp.StatusCode, Body: truncateBody(body), URL: l.url}
	}
	opened(err)
	if err != nil {
		if sid != "" {
			l.mu.Lock()
			delete(l.streams, sid)
			l.mu.Unlock()
		}
		return
	}
	defer resp.Body.Close()
	var rerr error
	for ev, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: acp.MaxFrameBytes + 64}) {
		if err != nil {
			rerr = err
			break
		}
		if ev.Data == "" {
			continue
		}
		msg := []byte(ev.Data)
		l.received(msg, sid)
		l.deliver(msg)
	}
	select {
	case <-l.done:
		return
	default:
	}
	if sid == "" {
		if rerr == nil {
			rerr = io.EOF
		}
		l.fail(fmt.Errorf("%s: the connection's stream ended: %w", l.url, rerr))
		return
	}
	// The session's requests in flight can no longer be answered; the
	// session's next message opens its stream again.
	l.mu.Lock()
	delete(l.streams, sid)
	l.mu.Unlock()
	l.failPending(sid, fmt.Errorf("%s: session %s's stream ended", l.url, sid))
}

// received notes what an agent's message means for routing: a response
// settles its request; a response naming a session opens its stream; a
// request on a session's stream is answered with that session's header.
func (l *httpLink) received(msg []byte, streamSession string) {
	f, ok := readFields(msg)
	if !ok {
		return
	}
	key := idKey(f.ID)
	switch {
	case f.isResponse():
		l.mu.Lock()
		delete(l.pending, key)
		l.mu.Unlock()
		if sid := f.Result.SessionID; sid != "" {
			go func() { _ = l.openSession(sid) }()
		}
	case f.isRequest() && streamSession != "" && key != "":
		l.mu.Lock()
		l.asks[key] = streamSession
		l.mu.Unlock()
	}
}

// sessionFailed marks session sid failed by err (a 409) until it is
// reattached, and fails its requests in flight.
func (l *httpLink) sessionFailed(sid string, err error) {
	l.mu.Lock()
	l.failed[sid] = err
	l.mu.Unlock()
	l.failPending(sid, err)
}

// failPending answers session sid's requests in flight with err.
func (l *httpLink) failPending(sid string, err error) {
	l.mu.Lock()
	var ids []json.RawMessage
	for k, p := range l.pending {
		if p.session == sid {
			ids = append(ids, p.id)
			delete(l.pending, k)
		}
	}
	l.mu.Unlock()
	for _, id := range ids {
		l.answerError(id, err)
	}
}

// answerError gives read a JSON-RPC error response to the client's request
// id, carrying the HTTP status and body when err has them.
func (l *httpLink) answerError(id json.RawMessage, err error) {
	e := map[string]any{"code": -32603, "message": err.Error()}
	if se, ok := err.(*StatusError); ok {
		var body any = se.Body
		if json.Valid([]byte(se.Body)) {
			body = json.RawMessage(se.Body)
		}
		e["data"] = map[string]any{"status": se.Status, "body": body}
	}
	b, merr := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
	if merr != nil {
		return
	}
	l.deliver(b)
}

// post POSTs one message of the connection (and session sid).
func (l *httpLink) post(msg []byte, connID, sid string) error {
	h := http.Header{HeaderConnectionID: {connID}}
	if sid != "" {
		h.Set(HeaderSessionID, sid)
	}
	resp, err := l.do(http.MethodPost, msg, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 8<<10))
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	return &StatusError{Status: resp.StatusCode, Body: truncateBody(body), URL: l.url}
}

// do sends one request of the connection, bounded by postTimeout.
func (l *httpLink) do(method string, body []byte, h http.Header) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(l.ctx, postTimeout)
	req, err := http.NewRequestWithContext(ctx, method, l.url, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, err
	}
	l.headers(req, h)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s %s: %w", method, l.url, err)
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// doStream sends a GET for a stream, which lasts as long as the connection.
func (l *httpLink) doStream(h http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(l.ctx, http.MethodGet, l.url, nil)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	h.Set(HeaderConnectionID, l.connID)
	l.mu.Unlock()
	l.headers(req, h)
	resp, err := l.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", l.url, err)
	}
	return resp, nil
}

func (l *httpLink) headers(req *http.Request, h http.Header) {
	for k, v := range l.header {
		req.Header[k] = v
	}
	for k, v := range h {
		req.Header[k] = v
	}
}

// close DELETEs the connection (bounded: 5 s) and ends its streams.
func (l *httpLink) close() error {
	l.mu.Lock()
	connID := l.connID
	l.mu.Unlock()
	select {
	case <-l.done:
		return nil
	default:
	}
	var err error
	if connID != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, rerr := http.NewRequestWithContext(ctx, http.MethodDelete, l.url, nil)
		if rerr == nil {
			l.headers(req, http.Header{HeaderConnectionID: {connID}})
			var resp *http.Response
			if resp, err = l.hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		cancel()
	}
	l.fail(io.EOF)
	return err
}

// cancelBody cancels its request's context once the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// truncateBody is an error body as a reason: at most 8 KiB, trimmed.
func truncateBody(b []byte) string {
	if len(b) > 8<<10 {
		b = b[:8<<10]
	}
	return strings.TrimSpace(string(b))
}
