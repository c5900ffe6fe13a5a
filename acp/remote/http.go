package remote

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/seed02d3eb6b/acp-agent/acp"
)

// post serves a POST: one client message. initialize (without
// Acp-Connection-Id) opens a connection and is answered 200 with the
// agent's response; every other message is checked, routed and handed to
// its connection's agent, answered 202.
func (h *Handler) post(w http.ResponseWriter, r *http.Request, tenant string) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		h.refuse(w, r, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: a message is POSTed as application/json", r.Header.Get("Content-Type")))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(h.lim.MaxMessageBytes)+1))
	if err != nil {
		h.refuse(w, r, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	if len(body) > h.lim.MaxMessageBytes {
		h.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the message is over the limit of %d bytes per ACP message: send smaller media, or a resource_link instead of embedded data", h.lim.MaxMessageBytes))
		return
	}
	if h.opts.Observer != nil {
		h.opts.Observer.Message(TransportHTTP, true, len(body))
	}
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		h.jsonError(w, r, http.StatusBadRequest, -32600, "Invalid Request: batches (JSON arrays) are not supported; POST one JSON-RPC message at a time")
		return
	case !json.Valid(trimmed):
		h.jsonError(w, r, http.StatusBadRequest, -32700, "Parse error: the body is not valid JSON")
		return
	}
	f, ok := readFields(trimmed)
	if !ok {
		h.jsonError(w, r, http.StatusBadRequest, -32600, "Invalid Request: a JSON-RPC message must be a JSON object")
		return
	}
	if f.Method == "initialize" && f.hasID {
		if r.Header.Get(HeaderConnectionID) != "" {
			h.refuse(w, r, http.StatusBadRequest, "initialize opens a connection: POST it without "+HeaderConnectionID)
			return
		}
		h.initialize(w, r, tenant, trimmed, f)
		return
	}
	c := h.connection(w, r, tenant, "POST initialize first, then send its connection id with every message")
	if c == nil {
		return
	}
	c.http.touch(+1)
	defer c.http.touch(-1)
	if status, reason := c.checkRoute(r, f); status != 0 {
		h.refuse(w, r, status, reason)
		return
	}
	if f.isRequest() {
		// A request makes the agent answer: wait while the client has not
		// read enough of the connection's output.
		if err := c.http.waitRoom(r.Context(), c); err != nil {
			h.refuse(w, r, http.StatusServiceUnavailable, err.Error())
			return
		}
		c.http.expect(f)
	}
	select {
	case c.in <- trimmed:
		w.WriteHeader(http.StatusAccepted)
	case <-c.inputEnded:
		h.refuse(w, r, http.StatusGone, fmt.Sprintf("ACP connection %s has ended (%s): initialize a new one", c.id, c.reason))
	case <-r.Context().Done():
	}
}

// connection returns tenant's open connection r names in
// Acp-Connection-Id, or answers why not (400 saying hint, 404, 410) and
// returns nil.
func (h *Handler) connection(w http.ResponseWriter, r *http.Request, tenant, hint string) *connection {
	id := r.Header.Get(HeaderConnectionID)
	if id == "" {
		h.refuse(w, r, http.StatusBadRequest, "missing "+HeaderConnectionID+": "+hint)
		return nil
	}
	return h.lookup(w, r, tenant, id)
}

// jsonError answers r with status and a JSON-RPC error response (id null),
// for a body that is not one JSON-RPC message.
func (h *Handler) jsonError(w http.ResponseWriter, r *http.Request, status, code int, message string) {
	h.log.Info("refused an ACP message", "status", status, "remote", r.RemoteAddr, "error", message)
	if h.opts.Observer != nil {
		h.opts.Observer.Refused(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": message}})
}

// initialize opens a connection with the initialize request msg and answers
// 200 with the agent's response, Acp-Connection-Id and the affinity
// cookie; an error response is answered 400 and the connection ends.
func (h *Handler) initialize(w http.ResponseWriter, r *http.Request, tenant string, msg []byte, f fields) {
	c := h.open(w, r, tenant, TransportHTTP)
	if c == nil {
		return
	}
	c.in = make(chan []byte, h.lim.MaxPendingMessages)
	c.http = newHTTPState(c, idKey(f.ID))
	c.serve(&httpStream{c: c})
	c.in <- msg // the channel is empty: this does not wait
	var resp []byte
	select {
	case resp = <-c.http.initResp:
	case <-c.served:
		h.refuse(w, r, http.StatusInternalServerError, "the agent ended before it answered initialize")
		return
	case <-r.Context().Done():
		c.end(closeClient)
		return
	}
	var answer struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(resp, &answer)
	w.Header().Set("Content-Type", "application/json")
	if len(answer.Error) > 0 && string(answer.Error) != "null" {
		c.end(closeError)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(resp)
		return
	}
	w.Header().Set(HeaderConnectionID, c.id)
	h.setCookie(w, r)
	_, _ = w.Write(resp)
	c.http.startIdle()
}

// setCookie sets the AffinityCookie, if the Handler has a replica name.
func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request) {
	if h.cookie == "" {
		return
	}
	http.SetCookie(w, &http.Cookie{Name: AffinityCookie, Value: h.cookie, Path: "/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
}

// checkRoute checks the session headers of a POSTed message against its
// params, as the RFD asks: a session-scoped message carries
// Acp-Session-Id, equal to params.sessionId; a response to one of the
// agent's requests on a session's stream carries that session's. A
// request that drives a session not live on the connection is 409. It
// returns 0 when the message may go on.
func (c *connection) checkRoute(r *http.Request, f fields) (int, string) {
	header := r.Header.Get(HeaderSessionID)
	if f.isResponse() {
		want, ok := c.http.answered(f.ID)
		switch {
		case !ok || want == "":
		case header == "":
			return http.StatusBadRequest, fmt.Sprintf("missing %s: this is the answer to a request of session %s", HeaderSessionID, want)
		case header != want:
			return http.StatusBadRequest, fmt.Sprintf("mismatched %s %q: this is the answer to a request of session %s", HeaderSessionID, header, want)
		}
		return 0, ""
	}
	sid := f.Params.SessionID
	switch {
	case (sessionScoped[f.Method] || sid != "") && header == "":
		return http.StatusBadRequest, fmt.Sprintf("missing %s: %s is scoped to a session", HeaderSessionID, f.Method)
	case header != "" && sid != "" && header != sid:
		return http.StatusBadRequest, fmt.Sprintf("mismatched %s %q: params.sessionId is %q", HeaderSessionID, header, sid)
	case len(header) > maxIDLength:
		return http.StatusBadRequest, fmt.Sprintf("%s is over %d characters", HeaderSessionID, maxIDLength)
	case needsLive[f.Method] && !c.agent.HasSession(header):
		return http.StatusConflict, fmt.Sprintf("session %s is not live on this connection: reattach it with session/load or session/resume", header)
	}
	return 0, ""
}

// maxIDLength bounds a session id or request id the transport keeps.
const maxIDLength = 1024

// get serves a GET without Upgrade: an SSE stream of the connection's
// messages (Acp-Connection-Id), or of one session's (and Acp-Session-Id).
func (h *Handler) get(w http.ResponseWriter, r *http.Request, tenant string) {
	if !strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/event-stream") {
		h.refuse(w, r, http.StatusNotAcceptable, "a GET opens a stream of the agent's messages: send Accept: text/event-stream (or Upgrade: websocket)")
		return
	}
	c := h.connection(w, r, tenant, "POST initialize first")
	if c == nil {
		return
	}
	if c.http == nil {
		h.refuse(w, r, http.StatusConflict, "ACP connection "+c.id+" is a WebSocket: its messages are on the socket")
		return
	}
	sid := r.Header.Get(HeaderSessionID)
	if len(sid) > maxIDLength {
		h.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("%s is over %d characters", HeaderSessionID, maxIDLength))
		return
	}
	mb, err := c.http.acquire(sid)
	if err != nil {
		h.refuse(w, r, http.StatusConflict, err.Error())
		return
	}
	c.http.touch(+1)
	defer c.http.touch(-1)
	defer c.http.release(sid, mb)
	c.http.stream(w, r, mb)
}

// delete serves a DELETE: the connection ends (its agent answers what is
// under way and ends its sessions), answered 202.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request, tenant string) {
	c := h.connection(w, r, tenant, "name the connection to end")
	if c == nil {
		return
	}
	c.end(closeClient)
	w.WriteHeader(http.StatusAccepted)
}

// httpStream is the acp.Stream of an HTTP connection: messages POSTed in,
// routed out to SSE streams.
type httpStream struct{ c *connection }

// ReadMessage implements acp.Stream: the next message POSTed, in order.
func (s *httpStream) ReadMessage() ([]byte, error) {
	select {
	case m := <-s.c.in:
		return m, nil
	default:
	}
	select {
	case m := <-s.c.in:
		return m, nil
	case <-s.c.inputEnded:
		return nil, io.EOF
	}
}

// WriteMessage implements acp.Stream: the message goes to the stream its
// route names (see package doc), waiting while the connection holds
// Limits.MaxBufferedBytes its client has not read.
func (s *httpStream) WriteMessage(line []byte) error {
	msg := bytes.Clone(bytes.TrimSuffix(line, []byte("\n")))
	if o := s.c.h.opts.Observer; o != nil {
		o.Message(TransportHTTP, false, len(msg))
	}
	return s.c.http.route(msg)
}

// errStalled is the reason a connection ends when its client reads none of
// its output in time.
func stalledError(d time.Duration) error {
	return fmt.Errorf("the client read none of the connection's output for %v: the connection is closed", d)
}

var errFinished = errors.New("the ACP connection has ended")

var _ acp.Stream = (*httpStream)(nil)
