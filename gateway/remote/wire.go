package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/sourcegraph/jsonrpc2"
)

// ProtocolVersion is the version of the gateway WebSocket protocol
// (docs/gateway-protocol.md). Both ends must speak the same one. Version 2
// carries JSON-RPC 2.0 messages.
const ProtocolVersion = 2

// Error codes of the gateway protocol, sent in JSON-RPC error responses.
// Codes -32001 to -32007 are in JSON-RPC's range for implementation-defined server
// errors; the others are JSON-RPC's own.
const (
	// CodeUnauthorized: no or a failed connect (wrong token).
	CodeUnauthorized int64 = -32001
	// CodeForbidden: the stored session is another tenant's (chat.send).
	CodeForbidden int64 = -32002
	// CodeNotFound: no such tool in the session; no such stored session
	// (or one of another tenant: the same answer).
	CodeNotFound int64 = -32003
	// CodeUnavailable: the work was cut short (the gateway is shutting
	// down, the connection was lost).
	CodeUnavailable int64 = -32004
	// CodeBusy: another holder (a replica, or another connection) runs a
	// turn of the session: its lease is taken. The message names the
	// session (its id, or the wire session key) and the replica that runs
	// the turn, as store.LeasedError says it, the same on every replica,
	// then what to do ("wait for it to end (or cancel it there), then
	// prompt again").
	CodeBusy int64 = -32005
	// CodeConflict: a turn write fenced with a lease token that a later
	// turn of the session has superseded (sessions.appendTurn).
	CodeConflict int64 = -32006
	// CodeBadCursor: a sessions.list cursor the store did not issue.
	CodeBadCursor int64 = -32007
	// CodeBadRequest: the params are malformed or break a rule (wrong
	// protocol version, empty sessionKey, duplicate runId).
	CodeBadRequest int64 = jsonrpc2.CodeInvalidParams
	// CodeMethodNotFound: no such method.
	CodeMethodNotFound int64 = jsonrpc2.CodeMethodNotFound
	// CodeInternal: the handler failed. From the gateway, the message
	// names what failed and a reference to the gateway's log, which holds
	// the details ("sessions.get: the session store failed (ref 5c1f0e9a);
	// see the gateway's log").
	CodeInternal int64 = jsonrpc2.CodeInternalError
)

// codeNames name the error codes in Go error texts.
var codeNames = map[int64]string{
	CodeUnauthorized: "unauthorized", CodeForbidden: "forbidden", CodeNotFound: "not_found",
	CodeUnavailable: "unavailable", CodeBadRequest: "bad_request", CodeMethodNotFound: "method_not_found",
	CodeInternal: "internal", CodeBusy: "busy", CodeConflict: "conflict", CodeBadCursor: "bad_cursor",
}

// Methods of notifications the peer itself handles.
const (
	// methodCancel asks the other end to cancel a request it serves:
	// params {"id": <the request's id>}.
	methodCancel = "$/cancelRequest"
)

// wireError returns a JSON-RPC error with code and a formatted message.
func wireError(code int64, format string, args ...any) *jsonrpc2.Error {
	return &jsonrpc2.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// badRequest returns a CodeBadRequest error.
func badRequest(format string, args ...any) error {
	return wireError(CodeBadRequest, format, args...)
}

// RemoteError is a JSON-RPC error response the other end sent to a
// request: its method, code (one of the Code constants) and message.
type RemoteError struct {
	Method  string
	Code    int64
	Message string
}

func (e *RemoteError) Error() string {
	name := codeNames[e.Code]
	if name == "" {
		name = "error"
	}
	return fmt.Sprintf("%s: %s (%s, code %d)", e.Method, e.Message, name, e.Code)
}

// fatalError is a handler error after which the connection closes with
// closeCode, once the error response has been written.
type fatalError struct {
	err       *jsonrpc2.Error
	closeCode int
}

func (e *fatalError) Error() string { return e.err.Message }

// Wire limits and timings (sent in hello as limits).
const (
	// MaxFrameBytes is the largest frame either end reads.
	MaxFrameBytes = 32 << 20
	// MaxPreAuthFrameBytes is the largest frame the gateway reads from a
	// connection before its connect request has succeeded, so that an
	// unauthenticated client cannot make it buffer megabytes.
	MaxPreAuthFrameBytes = 64 << 10
	// WriteQueueFrames is how many frames may wait to be written to one
	// connection; a peer slower than that is disconnected.
	WriteQueueFrames = 1024
	pingInterval     = 20 * time.Second
	pongWait         = 60 * time.Second
	writeWait        = 10 * time.Second
)

// errConnClosed is returned for requests on (or cut short by) a closed
// connection.
var errConnClosed = errors.New("gateway connection closed")

// peer is one end of a gateway WebSocket: a jsonrpc2.Conn over the socket
// (request ids, response matching, message framing), plus what the
// protocol adds around it: a bounded write queue drained by one writer
// goroutine, ping/pong keepalive, the pre-authentication frame limit,
// cancellation of served requests ($/cancelRequest) and a close frame
// written after the frames queued before it. handle serves the requests the
// other end sends (in a goroutine each once authenticated); onEvent
// receives its notifications (in order, on the reader goroutine).
type peer struct {
	ws      *websocket.Conn
	log     *slog.Logger
	handle  func(ctx context.Context, method string, params json.RawMessage) (any, error)
	onEvent func(method string, params json.RawMessage)
	// authed, when set, reports whether the other end has authenticated.
	// Until it has, frames are limited to MaxPreAuthFrameBytes and each
	// request is served on the reader goroutine before the next frame is
	// read, so the limit rises exactly when connect succeeds. Set before
	// start; read on the reader goroutine only.
	authed func() bool

	conn *jsonrpc2.Conn
	out  chan []byte // the write queue
	// ctx is the connection's life: the values of the context newPeer was
	// given, without its cancellation; cancel ends it.
	ctx    context.Context
	cancel context.CancelCauseFunc // called first by close or a failed read

	closeOnce sync.Once
	closing   chan struct{} // closed by close: the writer flushes, says goodbye and closes
	closeCode int           // set before closing is closed
	closeText string
	flush     bool

	started    chan struct{} // closed by start once conn is set; the reader waits for it
	readerDone chan struct{} // closed when the reader has read its last frame
	wg         sync.WaitGroup
	nextID     atomic.Uint64

	// mu guards seq and serving. event holds it while the notification is
	// queued, so seq order is wire order; lock order: mu, then jsonrpc2's
	// send lock (WriteObject takes no lock of ours).
	mu      sync.Mutex
	seq     uint64
	serving map[jsonrpc2.ID]context.CancelFunc
}

// newPeer returns the peer of ws. The connection keeps ctx's values but not
// its cancellation (a dial's timeout, an HTTP handler's request): it lives
// until close or a failed read.
func newPeer(ctx context.Context, ws *websocket.Conn, log *slog.Logger) *peer {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	return &peer{ws: ws, log: log, out: make(chan []byte, WriteQueueFrames), ctx: ctx, cancel: cancel,
		closing: make(chan struct{}), started: make(chan struct{}), readerDone: make(chan struct{}), serving: make(map[jsonrpc2.ID]context.CancelFunc)}
}

// start runs the writer goroutine and the jsonrpc2 connection (its reader).
func (p *peer) start() {
	p.ws.SetPongHandler(func(string) error { return p.ws.SetReadDeadline(time.Now().Add(pongWait)) })
	p.wg.Add(1)
	go p.writeLoop()
	// NewConn closes the connection when its context ends: the peer closes
	// it through close (which flushes the queue first), never through p.ctx.
	p.conn = jsonrpc2.NewConn(context.WithoutCancel(p.ctx), (*peerStream)(p), p, jsonrpc2.SetLogger(slogPrintf{p.log}))
	close(p.started) // p.conn is set: the reader may serve frames that use it
}

// Done is closed when the connection is gone or closing; Err says why.
func (p *peer) Done() <-chan struct{} { return p.ctx.Done() }

// Err returns why the connection closed.
func (p *peer) Err() error { return context.Cause(p.ctx) }

// close ends the connection: the frames already queued are written (unless
// the peer is too slow for that), then a close frame carrying code and
// reason. Pending calls fail and served requests are cancelled at once. It
// does not wait.
func (p *peer) close(code int, reason string) { p.shutdown(code, reason, true) }

// shutdown is close; without flush (a write failed, the queue is full) the
// close frame is written at once and the socket closed.
func (p *peer) shutdown(code int, reason string, flush bool) {
	p.closeOnce.Do(func() {
		p.cancel(fmt.Errorf("%w: %s", errConnClosed, reason))
		p.closeCode, p.closeText, p.flush = code, truncate(reason, 120), flush
		if !flush {
			_ = p.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, p.closeText), time.Now().Add(time.Second))
			_ = p.ws.Close()
		}
		close(p.closing)
	})
}

// wait waits for the peer's goroutines after close.
func (p *peer) wait() {
	<-p.readerDone
	if p.conn != nil {
		<-p.conn.DisconnectNotify()
	}
	p.wg.Wait()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// sequenced is the params of an event: setSeq numbers it.
type sequenced interface{ setSeq(uint64) }

// event sends a notification whose params carry the sender's next sequence
// number.
func (p *peer) event(method string, params sequenced) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	params.setSeq(p.seq)
	if err := p.conn.Notify(p.ctx, method, params); err != nil {
		return p.connErr(err)
	}
	return nil
}

// connErr maps the failure of a send on a closed connection to the
// reason it closed.
func (p *peer) connErr(err error) error {
	if p.ctx.Err() != nil {
		return p.Err()
	}
	if errors.Is(err, jsonrpc2.ErrClosed) {
		return errConnClosed
	}
	return err
}

// call sends a request and waits for its response, the end of ctx, or the
// end of the connection. When ctx ends first, the other end is told with a
// $/cancelRequest notification. An error response is a *RemoteError.
func (p *peer) call(ctx context.Context, method string, params, result any) error {
	id := jsonrpc2.ID{Num: p.nextID.Add(1)}
	w, err := p.conn.DispatchCall(ctx, method, params, jsonrpc2.PickID(id))
	if err != nil {
		return p.connErr(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(p.ctx, stop)()
	err = w.Wait(wctx, result)
	if errors.Is(err, context.Canceled) && ctx.Err() == nil && p.ctx.Err() != nil {
		// The connection is closing. A response read before its end is
		// delivered already, and the wait above may have seen the end
		// first: wait again, for that response or for the jsonrpc2
		// connection to fail the call as it closes.
		err = w.Wait(ctx, result)
	}
	var je *jsonrpc2.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &je):
		return &RemoteError{Method: method, Code: je.Code, Message: je.Message}
	case ctx.Err() != nil:
		_ = p.conn.Notify(context.WithoutCancel(ctx), methodCancel, map[string]jsonrpc2.ID{"id": id})
		return context.Cause(ctx)
	case p.ctx.Err() != nil || errors.Is(err, jsonrpc2.ErrClosed):
		return p.connErr(err)
	}
	return err
}

// Handle implements jsonrpc2.Handler; the jsonrpc2 reader calls it for
// every request and notification, in order.
func (p *peer) Handle(_ context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	if req.Notif {
		if req.Method == methodCancel {
			var c struct {
				ID jsonrpc2.ID `json:"id"`
			}
			if json.Unmarshal(params, &c) == nil {
				p.mu.Lock()
				cancel := p.serving[c.ID]
				p.mu.Unlock()
				if cancel != nil {
					cancel()
				}
			}
			return
		}
		if p.onEvent != nil {
			p.onEvent(req.Method, params)
		}
		return
	}
	if p.authed != nil && !p.authed() {
		ctx, cancel := context.WithCancel(p.ctx)
		defer cancel()
		p.respond(ctx, conn, req.ID, req.Method, params)
		return
	}
	ctx, cancel := context.WithCancel(p.ctx)
	p.mu.Lock()
	p.serving[req.ID] = cancel
	p.mu.Unlock()
	p.wg.Go(func() {
		defer func() {
			p.mu.Lock()
			delete(p.serving, req.ID)
			p.mu.Unlock()
			cancel()
		}()
		p.respond(ctx, conn, req.ID, req.Method, params)
	})
}

// respond serves one request and sends its response; a fatalError then
// closes the connection, after the response.
func (p *peer) respond(ctx context.Context, conn *jsonrpc2.Conn, id jsonrpc2.ID, method string, params json.RawMessage) {
	out, err := p.handle(ctx, method, params)
	resp := &jsonrpc2.Response{ID: id}
	if err == nil {
		if err = resp.SetResult(out); err != nil {
			err = wireError(CodeInternal, "%s: encoding the result: %v", method, err)
		}
	}
	var fatal *fatalError
	var je *jsonrpc2.Error
	switch {
	case err == nil:
	case errors.As(err, &fatal):
		resp.Error = fatal.err
	case errors.As(err, &je):
		resp.Error = je
	default:
		resp.Error = wireError(CodeInternal, "%s", err.Error())
	}
	if resp.Error != nil {
		resp.Result = nil
	}
	if err := conn.SendResponse(ctx, resp); err != nil && p.ctx.Err() == nil {
		p.log.Debug("gateway response not sent", "method", method, "err", err)
	}
	if fatal != nil {
		p.close(fatal.closeCode, fatal.err.Message)
	}
}

func (p *peer) writeLoop() {
	defer p.wg.Done()
	ping := time.NewTicker(pingInterval)
	defer ping.Stop()
	for {
		select {
		case b := <-p.out:
			if err := p.write(b); err != nil {
				p.shutdown(websocket.CloseAbnormalClosure, "write failed: "+err.Error(), false)
				return
			}
		case <-ping.C:
			if err := p.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				p.shutdown(websocket.CloseAbnormalClosure, "ping failed", false)
				return
			}
		case <-p.closing:
			if !p.flush {
				return
			}
			for flushed := false; !flushed; {
				select {
				case b := <-p.out:
					if p.write(b) != nil {
						flushed = true
					}
				default:
					flushed = true
				}
			}
			_ = p.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(p.closeCode, p.closeText), time.Now().Add(time.Second))
			_ = p.ws.Close()
			return
		}
	}
}

func (p *peer) write(b []byte) error {
	_ = p.ws.SetWriteDeadline(time.Now().Add(writeWait))
	return p.ws.WriteMessage(websocket.TextMessage, b)
}

// peerStream is the jsonrpc2.ObjectStream of a peer over its WebSocket:
// one JSON-RPC message per text frame, written through the bounded queue,
// read under the frame limit of the moment.
type peerStream peer

// WriteObject queues one message; a full queue disconnects the peer as too
// slow.
func (s *peerStream) WriteObject(obj any) error {
	p := (*peer)(s)
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if p.ctx.Err() != nil {
		return p.Err()
	}
	select {
	case p.out <- b:
		return nil
	default:
		p.log.Warn("gateway peer too slow: disconnecting", "queued", WriteQueueFrames)
		p.shutdown(websocket.ClosePolicyViolation, fmt.Sprintf("too slow: more than %d frames waiting", WriteQueueFrames), false)
		return p.Err()
	}
}

// ReadObject reads one message under MaxPreAuthFrameBytes until the other
// end has authenticated, MaxFrameBytes after.
func (s *peerStream) ReadObject(v any) error {
	p := (*peer)(s)
	<-p.started
	preAuth := p.authed != nil && !p.authed()
	if preAuth {
		p.ws.SetReadLimit(MaxPreAuthFrameBytes)
	} else {
		p.ws.SetReadLimit(MaxFrameBytes)
	}
	_ = p.ws.SetReadDeadline(time.Now().Add(pongWait))
	_, r, err := p.ws.NextReader()
	if err == nil {
		fr := &frameReader{r: r}
		if err = json.NewDecoder(fr).Decode(v); err == nil {
			return nil
		}
		if fr.err != nil {
			err = fr.err // the socket failed mid-frame
		} else {
			// The frame was read but holds no JSON-RPC message: end the
			// connection with the reason rather than silently.
			p.close(websocket.CloseUnsupportedData, "not a JSON-RPC 2.0 message: "+err.Error())
		}
	}
	if errors.Is(err, websocket.ErrReadLimit) && preAuth {
		p.log.Warn("gateway peer sent an oversized frame before connect: disconnecting", "limit", MaxPreAuthFrameBytes)
	}
	reason := "connection lost"
	if ce, ok := err.(*websocket.CloseError); ok && ce.Text != "" {
		reason = ce.Text
	}
	p.cancel(fmt.Errorf("%w: %s", errConnClosed, reason))
	close(p.readerDone)
	return err
}

// frameReader reads one frame and keeps the socket's error, to tell a
// failed read from a frame that is no JSON-RPC message.
type frameReader struct {
	r   io.Reader
	err error
}

func (f *frameReader) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	if err != nil && err != io.EOF {
		f.err = err
	}
	return n, err
}

// Close implements jsonrpc2.ObjectStream: jsonrpc2 calls it when the
// connection ends.
func (s *peerStream) Close() error {
	(*peer)(s).close(websocket.CloseNormalClosure, "connection closed")
	return nil
}

// slogPrintf routes jsonrpc2's log lines to slog at debug level.
type slogPrintf struct{ log *slog.Logger }

func (l slogPrintf) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}
