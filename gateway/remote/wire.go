package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// ProtocolVersion is the version of the gateway WebSocket protocol
// (docs/gateway-protocol.md). Both ends must speak the same one.
const ProtocolVersion = 1

// Frame is one message of the gateway protocol, a JSON text frame. Type is
// "req" (ID, Method, Params), "res" (ID, OK, Result or Error) or "event"
// (Event, Payload, Seq).
type Frame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	OK      bool            `json:"ok,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *WireError      `json:"error,omitempty"`
	Event   string          `json:"event,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Seq     uint64          `json:"seq,omitempty"`
}

// WireError is the error of a failed request.
type WireError struct {
	// Code is one of "bad_request", "unauthorized", "forbidden",
	// "not_found", "unavailable", "internal".
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *WireError) Error() string { return e.Code + ": " + e.Message }

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

// peer is one end of a gateway WebSocket: request/response correlation, a
// bounded write queue drained by one writer goroutine, a reader goroutine,
// and ping/pong keepalive. handle serves the requests the other end sends
// (in a goroutine each); onEvent receives its events (in order, on the
// reader goroutine).
type peer struct {
	ws      *websocket.Conn
	log     *slog.Logger
	handle  func(ctx context.Context, method string, params json.RawMessage) (any, error)
	onEvent func(event string, payload json.RawMessage)
	// authed, when set, reports whether the other end has authenticated.
	// Until it has, frames are limited to MaxPreAuthFrameBytes and each
	// request is served on the reader goroutine before the next frame is
	// read, so the limit rises exactly when connect succeeds. Set before
	// start; read on the reader goroutine only.
	authed func() bool

	out     chan []byte   // the write queue
	done    chan struct{} // closed when the peer is closed
	ctx     context.Context
	cancel  context.CancelCauseFunc
	closeMu sync.Once
	wg      sync.WaitGroup // reader, writer, handlers

	mu      sync.Mutex
	nextID  uint64
	seq     uint64
	pending map[string]chan Frame // request id → its response
	serving map[string]context.CancelFunc
}

func newPeer(ws *websocket.Conn, log *slog.Logger) *peer {
	ctx, cancel := context.WithCancelCause(context.Background())
	p := &peer{ws: ws, log: log, out: make(chan []byte, WriteQueueFrames), done: make(chan struct{}),
		ctx: ctx, cancel: cancel, pending: make(map[string]chan Frame), serving: make(map[string]context.CancelFunc)}
	return p
}

// start runs the reader and writer goroutines.
func (p *peer) start() {
	p.wg.Add(2)
	go p.readLoop()
	go p.writeLoop()
}

// Done is closed when the connection is gone; Err says why.
func (p *peer) Done() <-chan struct{} { return p.done }

// Err returns why the connection closed.
func (p *peer) Err() error { return context.Cause(p.ctx) }

// close ends the connection with a close frame carrying reason, fails the
// pending requests and cancels the requests being served. It does not wait.
func (p *peer) close(code int, reason string) {
	p.closeMu.Do(func() {
		p.cancel(fmt.Errorf("%w: %s", errConnClosed, reason))
		_ = p.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, truncate(reason, 120)), time.Now().Add(time.Second))
		_ = p.ws.Close()
		close(p.done)
	})
}

// wait waits for the peer's goroutines after close.
func (p *peer) wait() { p.wg.Wait() }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// send queues a frame; a full queue disconnects the peer as too slow.
func (p *peer) send(f Frame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	select {
	case <-p.done:
		return p.Err()
	default:
	}
	select {
	case p.out <- b:
		return nil
	case <-p.done:
		return p.Err()
	default:
		p.log.Warn("gateway peer too slow: disconnecting", "queued", WriteQueueFrames)
		p.close(websocket.ClosePolicyViolation, fmt.Sprintf("too slow: more than %d frames waiting", WriteQueueFrames))
		return p.Err()
	}
}

// event sends an event with the next sequence number.
func (p *peer) event(name string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.seq++
	seq := p.seq
	p.mu.Unlock()
	return p.send(Frame{Type: "event", Event: name, Payload: b, Seq: seq})
}

// call sends a request and waits for its response, the end of ctx, or the
// end of the connection. When ctx ends first, the other end is told with a
// "request.cancel" event.
func (p *peer) call(ctx context.Context, method string, params, result any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	ch := make(chan Frame, 1)
	p.mu.Lock()
	p.nextID++
	id := strconv.FormatUint(p.nextID, 10)
	p.pending[id] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()
	if err := p.send(Frame{Type: "req", ID: id, Method: method, Params: b}); err != nil {
		return err
	}
	select {
	case f := <-ch:
		if !f.OK {
			if f.Error == nil {
				return &WireError{Code: "internal", Message: "failed without an error"}
			}
			return f.Error
		}
		if result != nil && len(f.Result) > 0 {
			return json.Unmarshal(f.Result, result)
		}
		return nil
	case <-ctx.Done():
		_ = p.event("request.cancel", map[string]string{"id": id})
		return context.Cause(ctx)
	case <-p.done:
		return p.Err()
	}
}

func (p *peer) readLoop() {
	defer p.wg.Done()
	defer p.close(websocket.CloseNormalClosure, "reader ended")
	_ = p.ws.SetReadDeadline(time.Now().Add(pongWait))
	p.ws.SetPongHandler(func(string) error { return p.ws.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		preAuth := p.authed != nil && !p.authed()
		if preAuth {
			p.ws.SetReadLimit(MaxPreAuthFrameBytes)
		} else {
			p.ws.SetReadLimit(MaxFrameBytes)
		}
		var f Frame
		if err := p.ws.ReadJSON(&f); err != nil {
			if errors.Is(err, websocket.ErrReadLimit) && preAuth {
				p.log.Warn("gateway peer sent an oversized frame before connect: disconnecting", "limit", MaxPreAuthFrameBytes)
			}
			reason := "connection lost"
			if ce, ok := err.(*websocket.CloseError); ok && ce.Text != "" {
				reason = ce.Text
			}
			p.cancel(fmt.Errorf("%w: %s", errConnClosed, reason))
			return
		}
		_ = p.ws.SetReadDeadline(time.Now().Add(pongWait))
		switch f.Type {
		case "res":
			p.mu.Lock()
			ch := p.pending[f.ID]
			p.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		case "req":
			if preAuth {
				p.serveSync(f)
			} else {
				p.serve(f)
			}
		case "event":
			if f.Event == "request.cancel" {
				var c struct{ ID string }
				if json.Unmarshal(f.Payload, &c) == nil {
					p.mu.Lock()
					cancel := p.serving[c.ID]
					p.mu.Unlock()
					if cancel != nil {
						cancel()
					}
				}
				continue
			}
			if p.onEvent != nil {
				p.onEvent(f.Event, f.Payload)
			}
		}
	}
}

// serve runs one request of the other end in its own goroutine.
func (p *peer) serve(f Frame) {
	ctx, cancel := context.WithCancel(p.ctx)
	p.mu.Lock()
	p.serving[f.ID] = cancel
	p.mu.Unlock()
	p.wg.Go(func() {
		defer func() {
			p.mu.Lock()
			delete(p.serving, f.ID)
			p.mu.Unlock()
			cancel()
		}()
		p.respond(ctx, f)
	})
}

// serveSync runs one request on the reader goroutine (before
// authentication: the only valid request then is connect, which is quick).
func (p *peer) serveSync(f Frame) {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	p.respond(ctx, f)
}

// respond handles request f and sends its response.
func (p *peer) respond(ctx context.Context, f Frame) {
	res := Frame{Type: "res", ID: f.ID}
	out, err := p.handle(ctx, f.Method, f.Params)
	if err != nil {
		var we *WireError
		if !errors.As(err, &we) {
			we = &WireError{Code: "internal", Message: err.Error()}
		}
		res.Error = we
	} else {
		res.OK = true
		if res.Result, err = json.Marshal(out); err != nil {
			res.OK, res.Result, res.Error = false, nil, &WireError{Code: "internal", Message: err.Error()}
		}
	}
	_ = p.send(res)
}

func (p *peer) writeLoop() {
	defer p.wg.Done()
	ping := time.NewTicker(pingInterval)
	defer ping.Stop()
	for {
		select {
		case b := <-p.out:
			_ = p.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := p.ws.WriteMessage(websocket.TextMessage, b); err != nil {
				p.close(websocket.CloseAbnormalClosure, "write failed: "+err.Error())
				return
			}
		case <-ping.C:
			if err := p.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				p.close(websocket.CloseAbnormalClosure, "ping failed")
				return
			}
		case <-p.done:
			return
		}
	}
}

// badRequest returns a bad_request WireError.
func badRequest(format string, args ...any) error {
	return &WireError{Code: "bad_request", Message: fmt.Sprintf(format, args...)}
}
