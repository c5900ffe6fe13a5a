package remote

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed02d3eb6b/acp-agent/acp"
)

// serveWebSocket upgrades r: the whole connection in text frames, one
// message each (binary frames are ignored, as the RFD says). The 101
// response carries Acp-Connection-Id and the affinity cookie. The client
// sends initialize first, as over stdio.
func (h *Handler) serveWebSocket(w http.ResponseWriter, r *http.Request, tenant string) {
	c := h.open(w, r, tenant, TransportWebSocket)
	if c == nil {
		return
	}
	header := http.Header{HeaderConnectionID: {c.id}}
	if h.cookie != "" {
		header.Add("Set-Cookie", (&http.Cookie{Name: AffinityCookie, Value: h.cookie, Path: "/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode}).String())
	}
	ws, err := h.upgrader.Upgrade(w, r, header)
	if err != nil { // the upgrader has answered the request
		h.log.Info("WebSocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		c.end(closeError)
		c.leave()
		c.cancel()
		h.serving.Done()
		if h.opts.Observer != nil {
			h.opts.Observer.Closed(TransportWebSocket, closeError)
		}
		return
	}
	// A message over four times the limit closes the socket (1009); one
	// between is read into a bounded skeleton and answered.
	ws.SetReadLimit(4 * int64(h.lim.MaxMessageBytes))
	s := &wsStream{c: c, ws: ws, done: make(chan struct{})}
	wake := func() { _ = ws.SetReadDeadline(time.Now()) } // wakes the reader
	c.onEnd.Store(&wake)
	s.alive()
	ws.SetPongHandler(func(string) error { s.alive(); return nil })
	go s.ping()
	c.serve(s)
	go func() {
		<-c.served
		s.close()
	}()
}

// wsStream is the acp.Stream of a WebSocket connection.
type wsStream struct {
	c    *connection
	ws   *websocket.Conn
	done chan struct{} // closed by close
	once sync.Once
	// warned is set once a binary frame has been logged (reader only).
	warned bool
}

// pingEvery is how often a WebSocket is pinged; a client that answers no
// ping (nor sends anything) for Limits.IdleTimeout loses the connection.
func (s *wsStream) pingEvery() time.Duration { return min(30*time.Second, s.c.h.lim.IdleTimeout/2) }

// alive extends the read deadline: the client showed it is there.
func (s *wsStream) alive() {
	_ = s.ws.SetReadDeadline(time.Now().Add(s.c.h.lim.IdleTimeout))
}

// ping pings the client until the stream closes.
func (s *wsStream) ping() {
	t := time.NewTicker(s.pingEvery())
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := s.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(10*time.Second)); err != nil {
				return
			}
		case <-s.done:
			return
		}
	}
}

// ReadMessage implements acp.Stream: the next text frame. The end of the
// input (a close frame, a broken or idle socket) ends the connection.
func (s *wsStream) ReadMessage() ([]byte, error) {
	for {
		select {
		case <-s.c.inputEnded:
			return nil, io.EOF
		default:
		}
		typ, r, err := s.ws.NextReader()
		if err != nil {
			s.c.end(s.reason(err))
			return nil, io.EOF
		}
		s.alive()
		if typ != websocket.TextMessage {
			if !s.warned {
				s.warned = true
				s.c.h.log.Info("ignoring binary WebSocket frames: ACP messages are text frames", "connection", s.c.id)
			}
			continue
		}
		msg, err := acp.ReadMessage(r)
		var tl *acp.TooLargeError
		switch {
		case errors.As(err, &tl):
			if o := s.c.h.opts.Observer; o != nil {
				o.Message(TransportWebSocket, true, tl.Size)
			}
			return nil, err
		case err != nil:
			s.c.end(s.reason(err))
			return nil, io.EOF
		}
		if o := s.c.h.opts.Observer; o != nil {
			o.Message(TransportWebSocket, true, len(msg))
		}
		return msg, nil
	}
}

// reason is why a read error ended the connection.
func (s *wsStream) reason(err error) string {
	select {
	case <-s.c.inputEnded:
		return s.c.reason
	default:
	}
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, websocket.ErrReadLimit):
		return closeLimit
	case errors.As(err, &ne) && ne.Timeout():
		return closeIdle
	}
	return closeClient
}

// WriteMessage implements acp.Stream: one text frame, which has
// Limits.OutputStall to go through; after that the connection ends.
func (s *wsStream) WriteMessage(line []byte) error {
	msg := bytes.TrimSuffix(line, []byte("\n"))
	if o := s.c.h.opts.Observer; o != nil {
		o.Message(TransportWebSocket, false, len(msg))
	}
	_ = s.ws.SetWriteDeadline(time.Now().Add(s.c.h.lim.OutputStall))
	if err := s.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
		var ne interface{ Timeout() bool }
		reason := closeClient
		if errors.As(err, &ne) && ne.Timeout() {
			reason = closeStalled
		}
		s.c.end(reason)
		return err
	}
	return nil
}

// close sends a close frame saying why the connection ended, and closes
// the socket.
func (s *wsStream) close() {
	s.once.Do(func() {
		close(s.done)
		code, text := websocket.CloseNormalClosure, ""
		switch s.c.reason {
		case closeShutdown:
			code, text = websocket.CloseGoingAway, "the gateway is shutting down"
		case closeIdle:
			code, text = websocket.CloseGoingAway, "idle: the client answered no ping"
		case closeStalled:
			code, text = websocket.ClosePolicyViolation, "the client read none of its output in time"
		case closeLimit:
			code, text = websocket.CloseMessageTooBig, "a message over the limit"
		}
		_ = s.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
		_ = s.ws.Close()
	})
}

var _ acp.Stream = (*wsStream)(nil)
