package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/sandbox"
)

// MaxFrameBytes is the longest JSON-RPC message the agent accepts, in bytes,
// not counting its newline: acp-go-sdk reads lines of less than 10 MiB. A
// longer request is answered with an Invalid Request error that gives its
// size and this limit; the agent keeps serving.
const MaxFrameBytes = 10<<20 - 1

// MaxPromptMediaBytes is the largest value of config limits.maxMediaBytes: an
// image or audio block of that many bytes, base64-encoded, still fits in one
// prompt of MaxFrameBytes with 64 KiB left for the rest of the request.
const MaxPromptMediaBytes = (MaxFrameBytes - 64<<10) / 4 * 3

// JSON-RPC 2.0 error codes the framing layer answers with
// (https://www.jsonrpc.org/specification#error_object).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

const (
	// maxQueuedCancels bounds the session/cancel notifications forwarded to
	// the SDK and not yet handled; it is well below the SDK's queue of 1024
	// notifications, whose overflow closes the connection.
	maxQueuedCancels = 256
	// maxQueuedReplies bounds the error responses waiting to be written;
	// when they are full, reading stdin waits for the client to read stdout.
	maxQueuedReplies = 1024
	// skeletonMax and skeletonStrMax bound what is kept of a frame over
	// MaxFrameBytes to find its id: the top level of the object, with
	// nested values left out and strings over skeletonStrMax replaced.
	skeletonMax    = 64 << 10
	skeletonStrMax = 1 << 10
	// replyDrainTimeout bounds how long close waits for queued replies to
	// be written.
	replyDrainTimeout = 5 * time.Second
)

// frameWriter writes whole frames to the client, never interleaved with the
// SDK's (outWatcher).
type frameWriter interface {
	writeFrame(p []byte) error
}

// framing sits between stdin and acp-go-sdk and enforces JSON-RPC 2.0 where
// the SDK does not, so that no client input can end the agent:
//
//   - a line that is not JSON is answered with -32700 (on its id if one can
//     be read before the fault, else on id null); a JSON array (batch), a
//     non-object, a request whose id is null, an object, an array or a
//     boolean, a request whose jsonrpc is not "2.0" and a message with
//     neither method nor result/error are answered with -32600;
//   - a request whose params are omitted or null gets params {};
//   - a line over MaxFrameBytes, which would end the SDK's reader, is never
//     held in memory: a request is answered with -32600 giving its size and
//     the limit, a notification is dropped, and a response to one of the
//     agent's requests is replaced by an error response so the request
//     does not wait forever;
//   - notifications reach the SDK only if the Agent handles them
//     (session/cancel, and $/cancel_request, which the SDK handles as it
//     reads); others are dropped, as the SDK would drop them after queueing.
//     A session/cancel repeating one that is still queued, with no request
//     in between, is dropped as a duplicate; beyond maxQueuedCancels
//     forwarded and not handled, reading waits (back-pressure), so the SDK's
//     notification queue cannot overflow.
//
// session/new, session/load and session/resume also get moveMCPServers.
// Every other valid line passes through byte for byte.
//
// Reads block until start is closed: acp-go-sdk starts reading in
// NewAgentSideConnection, before its logger can be set without a data race.
// Read is called by one goroutine (the SDK's reader); cancelHandled and close
// may be called from any goroutine.
type framing struct {
	in         *bufio.Reader
	start      <-chan struct{}
	out        frameWriter
	log        *slog.Logger
	mediaLimit int // limits.maxMediaBytes, for the oversize message

	buf []byte // forwarded output not yet read

	replies   chan []byte   // error responses for the writer goroutine
	stop      chan struct{} // closed by close
	closeOnce sync.Once
	written   chan struct{} // closed when the writer goroutine returns

	mu   sync.Mutex
	cond *sync.Cond // signalled when pending shrinks or closed is set
	// pending are the session/cancel notifications forwarded and not yet
	// handled, oldest first; len(pending) <= maxQueuedCancels.
	pending []pendingCancel
	// requests counts the requests forwarded so far.
	requests uint64
	closed   bool
}

// pendingCancel is a forwarded session/cancel: its sessionId, and the
// number of requests forwarded before it.
type pendingCancel struct {
	session  string
	requests uint64
}

// newFraming returns the framing reader over in; error responses go to out.
// mediaLimit is limits.maxMediaBytes (zero: the default). Call close once
// the connection has ended.
func newFraming(in io.Reader, start <-chan struct{}, out frameWriter, log *slog.Logger, mediaLimit int) *framing {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if mediaLimit <= 0 {
		mediaLimit = sandbox.DefaultMaxMedia
	}
	f := &framing{
		in: bufio.NewReaderSize(in, 64<<10), start: start, out: out, log: log, mediaLimit: mediaLimit,
		replies: make(chan []byte, maxQueuedReplies), stop: make(chan struct{}), written: make(chan struct{}),
	}
	f.cond = sync.NewCond(&f.mu)
	go f.writeReplies()
	return f
}

// close stops the reply writer after writing what is queued (for at most
// replyDrainTimeout: stdout may be stuck) and releases a Read waiting for
// room among the queued cancels. It is idempotent.
func (f *framing) close() {
	f.closeOnce.Do(func() {
		f.mu.Lock()
		f.closed = true
		f.cond.Broadcast()
		f.mu.Unlock()
		close(f.stop)
	})
	select {
	case <-f.written:
	case <-time.After(replyDrainTimeout):
		f.log.Warn("error responses not written: stdout is not being read", "queued", len(f.replies))
	}
}

// writeReplies writes the queued error responses until close.
func (f *framing) writeReplies() {
	defer close(f.written)
	for {
		select {
		case b := <-f.replies:
			if err := f.out.writeFrame(b); err != nil {
				f.log.Debug("error response not written", "err", err)
			}
		case <-f.stop:
			for {
				select {
				case b := <-f.replies:
					_ = f.out.writeFrame(b)
				default:
					return
				}
			}
		}
	}
}

// Read implements io.Reader for acp-go-sdk: it yields only valid JSON-RPC
// lines, each ending in a newline.
func (f *framing) Read(p []byte) (int, error) {
	<-f.start
	for len(f.buf) == 0 {
		line, size, sk, err := f.readLine()
		switch {
		case sk != nil:
			f.buf = f.oversize(size, sk)
		case len(line) > 0:
			f.buf = f.frame(line)
		}
		if err != nil {
			if len(f.buf) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// readLine returns the next line without its line ending. A line over
// MaxFrameBytes is not kept: it is returned as its size and skeleton.
func (f *framing) readLine() (line []byte, size int, sk *skeleton, err error) {
	for {
		var chunk []byte
		chunk, err = f.in.ReadSlice('\n')
		size += len(chunk)
		if sk == nil && len(line)+len(chunk) > MaxFrameBytes+2 { // room for "\r\n"
			sk = &skeleton{}
			sk.write(line)
			line = nil
		}
		if sk != nil {
			sk.write(chunk)
		} else {
			line = append(line, chunk...)
		}
		if err != bufio.ErrBufferFull {
			break
		}
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if sk == nil && len(line) > MaxFrameBytes {
		sk = &skeleton{}
		sk.write(line)
		line = nil
	}
	if sk != nil {
		size = sk.n - trailingEOL(sk.tail)
	}
	return line, size, sk, err
}

// trailingEOL is the length of the "\n" or "\r\n" that tail ends with.
func trailingEOL(tail [2]byte) int {
	switch {
	case tail == [2]byte{'\r', '\n'}:
		return 2
	case tail[1] == '\n':
		return 1
	}
	return 0
}

// frame checks one line of at most MaxFrameBytes and returns what the SDK
// gets of it: the line with a newline, a rewrite of it, or nothing (the line
// was answered or dropped).
func (f *framing) frame(line []byte) []byte {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &msg); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case !errors.As(err, &te):
			f.reply(readableID(trimmed), codeParseError, "Parse error: the line is not valid JSON ("+err.Error()+"); send one JSON-RPC message per line", nil)
		case trimmed[0] == '[':
			f.reply(nil, codeInvalidRequest, "Invalid Request: batches (JSON arrays) are not supported; send one JSON-RPC message per line", nil)
		default:
			f.reply(nil, codeInvalidRequest, "Invalid Request: a JSON-RPC message must be a JSON object", nil)
		}
		return nil
	}
	if msg == nil { // the line is null
		f.reply(nil, codeInvalidRequest, "Invalid Request: a JSON-RPC message must be a JSON object", nil)
		return nil
	}
	idRaw, hasID := msg["id"]
	id := validID(idRaw)
	methodRaw, hasMethod := msg["method"]
	if !hasMethod {
		_, hasResult := msg["result"]
		_, hasError := msg["error"]
		if hasID && (hasResult || hasError) {
			return withNewline(trimmed) // a response to one of the agent's requests
		}
		f.reply(id, codeInvalidRequest, "Invalid Request: the message has no method (and is no response: it has no id with a result or an error)", nil)
		return nil
	}
	var method string
	if json.Unmarshal(methodRaw, &method) != nil || method == "" {
		if hasID {
			f.reply(id, codeInvalidRequest, "Invalid Request: method must be a non-empty string", nil)
		} else {
			f.log.Warn("notification dropped: method must be a non-empty string", "method", truncate(methodRaw))
		}
		return nil
	}
	var version string
	_ = json.Unmarshal(msg["jsonrpc"], &version)
	if !hasID {
		if version != "2.0" {
			f.log.Warn(`notification dropped: jsonrpc must be "2.0"`, "method", method)
			return nil
		}
		return f.notification(method, msg["params"], trimmed)
	}
	if id == nil {
		f.reply(nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: %s: id must be a string or a number, not %s", method, truncate(idRaw)), nil)
		return nil
	}
	if version != "2.0" {
		f.reply(id, codeInvalidRequest, fmt.Sprintf(`Invalid Request: %s: jsonrpc must be "2.0"`, method), nil)
		return nil
	}
	changed := false
	if p, ok := msg["params"]; !ok || string(bytes.TrimSpace(p)) == "null" {
		msg["params"] = json.RawMessage("{}")
		changed = true
	}
	switch method {
	case acpsdk.AgentMethodSessionNew, acpsdk.AgentMethodSessionLoad, acpsdk.AgentMethodSessionResume:
		changed = moveMCPServers(msg) || changed
	}
	out := trimmed
	if changed {
		b, err := json.Marshal(msg)
		if err != nil { // not reached: every value was read as JSON
			f.reply(id, codeInvalidRequest, "Invalid Request: "+err.Error(), nil)
			return nil
		}
		out = b
	}
	if len(out) > MaxFrameBytes {
		f.replyTooLarge(id, method, len(out))
		return nil
	}
	f.mu.Lock()
	f.requests++
	f.mu.Unlock()
	return withNewline(out)
}

// notification decides what becomes of a notification (see framing).
func (f *framing) notification(method string, params json.RawMessage, line []byte) []byte {
	switch method {
	case "$/cancel_request": // handled by the SDK's reader, not queued
		return withNewline(line)
	case acpsdk.AgentMethodSessionCancel:
	default:
		f.log.Debug("notification dropped: the agent handles no such notification", "method", method)
		return nil
	}
	// Forward only what reaches Agent.Cancel (which calls cancelHandled):
	// the SDK refuses the rest after queueing it.
	var p acpsdk.CancelNotification
	if err := json.Unmarshal(params, &p); err != nil {
		f.log.Warn("session/cancel dropped: invalid params", "err", err)
		return nil
	}
	if err := p.Validate(); err != nil {
		f.log.Warn("session/cancel dropped: invalid params", "err", err)
		return nil
	}
	sid := string(p.SessionId)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.pending {
		if c.session == sid && c.requests == f.requests {
			f.log.Debug("session/cancel dropped: the same cancel is still queued", "session", sid)
			return nil
		}
	}
	for len(f.pending) >= maxQueuedCancels && !f.closed {
		f.cond.Wait()
	}
	f.pending = append(f.pending, pendingCancel{session: sid, requests: f.requests})
	return withNewline(line)
}

// cancelHandled records that Agent.Cancel has run for sessionID. The SDK
// handles notifications one at a time in order, so every cancel forwarded
// before it is done too (those the SDK refused never reach Agent.Cancel).
func (f *framing) cancelHandled(sessionID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.pending {
		if c.session == sessionID {
			f.pending = append(f.pending[:0], f.pending[i+1:]...)
			f.cond.Broadcast()
			return
		}
	}
}

// oversize handles a line over MaxFrameBytes of size bytes (see framing).
func (f *framing) oversize(size int, sk *skeleton) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(sk.out, &msg) != nil || msg == nil {
		f.replyTooLarge(readableID(sk.out), "", size)
		return nil
	}
	id := validID(msg["id"])
	var method string
	_ = json.Unmarshal(msg["method"], &method)
	_, hasID := msg["id"]
	_, hasMethod := msg["method"]
	switch {
	case hasMethod && !hasID:
		f.log.Warn("notification dropped: over the frame limit", "method", method, "bytes", size, "limit", MaxFrameBytes)
		return nil
	case !hasMethod && id != nil:
		// The client's response to one of the agent's requests: fail that
		// request rather than let it wait forever.
		f.log.Warn("response dropped: over the frame limit", "id", string(id), "bytes", size, "limit", MaxFrameBytes)
		b, err := json.Marshal(errorResponse{JSONRPC: "2.0", ID: id, Error: acpsdk.RequestError{
			Code:    codeInvalidRequest,
			Message: fmt.Sprintf("the client's response of %d bytes is over the limit of %d bytes per JSON-RPC message", size, MaxFrameBytes),
		}})
		if err != nil {
			return nil
		}
		return withNewline(b)
	}
	f.replyTooLarge(id, method, size)
	return nil
}

// replyTooLarge answers a request over MaxFrameBytes.
func (f *framing) replyTooLarge(id json.RawMessage, method string, size int) {
	what := "message"
	if method != "" {
		what = method + " request"
	}
	msg := fmt.Sprintf("Invalid Request: the %s of %s (%d bytes) is over the limit of %d bytes per JSON-RPC message; "+
		"each image or audio block of a prompt may be at most %s (limits.maxMediaBytes): send smaller media, or a resource_link instead of embedded data",
		what, sandbox.Size(size), size, MaxFrameBytes, sandbox.Size(f.mediaLimit))
	f.reply(id, codeInvalidRequest, msg, map[string]any{"bytes": size, "limit": MaxFrameBytes, "maxMediaBytes": f.mediaLimit})
}

// errorResponse is a JSON-RPC error response.
type errorResponse struct {
	JSONRPC string              `json:"jsonrpc"`
	ID      json.RawMessage     `json:"id"` // nil is written as null
	Error   acpsdk.RequestError `json:"error"`
}

// reply queues an error response on id (nil: id null) for the writer
// goroutine; when maxQueuedReplies are queued it waits.
func (f *framing) reply(id json.RawMessage, code int, message string, data any) {
	f.log.Warn("refused a client message", "id", string(id), "code", code, "error", message)
	b, err := json.Marshal(errorResponse{JSONRPC: "2.0", ID: id, Error: acpsdk.RequestError{Code: code, Message: message, Data: data}})
	if err != nil {
		return
	}
	select {
	case f.replies <- withNewline(b):
	case <-f.stop:
	}
}

// validID returns raw if it is a valid request id (a string or a number),
// else nil.
func validID(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return raw
		}
	case c == '-' || c >= '0' && c <= '9':
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			return raw
		}
	}
	return nil
}

// readableID returns the top-level id of a JSON object that may be invalid
// or cut short, if it can be read before the first fault, else nil.
func readableID(b []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if tok == "id" {
			return validID(value)
		}
	}
	return nil
}

// truncate renders raw JSON for an error message, at most 64 bytes.
func truncate(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if s == "" {
		return "missing"
	}
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func withNewline(b []byte) []byte {
	out := make([]byte, len(b)+1)
	copy(out, b)
	out[len(b)] = '\n'
	return out
}

// skeleton keeps, in bounded memory, the top level of a JSON text read in
// pieces: nested objects and arrays become 0, top-level strings over
// skeletonStrMax become "", and nothing beyond skeletonMax bytes is kept.
// The result is valid JSON if the text was, and names the same top-level
// keys with the same short values (id, method).
type skeleton struct {
	out      []byte
	n        int     // bytes written
	tail     [2]byte // the last two bytes written
	depth    int     // of nested objects and arrays; 1 inside the top level
	inStr    bool
	esc      bool
	skip     bool // the current top-level string is too long: dropping the rest
	strStart int  // offset in out of the current top-level string
}

func (s *skeleton) write(p []byte) {
	s.n += len(p)
	for _, c := range p {
		s.tail = [2]byte{s.tail[1], c}
		top := s.depth <= 1
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
			}
			if top && !s.skip {
				s.add(c)
				if s.inStr && len(s.out)-s.strStart > skeletonStrMax {
					s.out = append(s.out[:s.strStart], '"', '"')
					s.skip = true
				}
			}
			if !s.inStr {
				s.skip = false
			}
			continue
		}
		switch c {
		case '"':
			s.inStr = true
			if top {
				s.strStart = len(s.out)
				s.add(c)
			}
		case '{', '[':
			s.depth++
			if s.depth == 2 {
				s.add('0')
			} else if top {
				s.add(c)
			}
		case '}', ']':
			if top {
				s.add(c)
			}
			s.depth--
		default:
			if top {
				s.add(c)
			}
		}
	}
}

func (s *skeleton) add(c byte) {
	if len(s.out) < skeletonMax {
		s.out = append(s.out, c)
	}
}

// framedAgent is the Agent as acp-go-sdk sees it: Cancel also tells the
// framing layer that a forwarded session/cancel has been handled.
type framedAgent struct {
	*Agent
	frames *framing
}

// Cancel implements acpsdk.Agent.
func (f framedAgent) Cancel(ctx context.Context, p acpsdk.CancelNotification) error {
	defer f.frames.cancelHandled(string(p.SessionId))
	return f.Agent.Cancel(ctx, p)
}
