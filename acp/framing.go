package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	sjson "github.com/segmentio/encoding/json"

	"github.com/seed02d3eb6b/acp-agent/internal/jsonrpcid"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
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
//     notification queue cannot overflow;
//   - a key that encoding/json (the SDK's decoder: keys match
//     case-insensitively, the last duplicate wins) could read as another
//     member, such as "Method" or "Id" beside or instead of "method" or
//     "id", or a JSON-RPC member given twice, is answered with -32600
//     naming the key;
//   - a response to one of the agent's requests that is not exactly one of
//     result and an error object with an integer code and a string message
//     is replaced by an error response on its id, so the request does not
//     wait forever; a response whose id is not a string or a number is
//     dropped;
//   - the SDK never gets the client's line: it gets a re-encoding of
//     exactly the members checked ({"jsonrpc","id","method","params"} for a
//     request, {"jsonrpc","method","params"} for a notification,
//     {"jsonrpc","id","result"|"error"} for a response), so it cannot read
//     a line differently from framing; the values of id, params and result
//     are copied as read.
//
// In session/new, session/load and session/resume params, a key that
// encoding/json could read as mcpServers or _meta is refused too (the
// dispatch table reads them by exact key: withServers). An mcp/message
// notification carrying an MCP request is dropped (isCall); a request of
// the published MCP-over-ACP binding (serverId, no connectionId) is
// answered -33001 here, as the agent provides no servers.
// When maxQueuedReplies error responses wait to be written, reading waits
// too, with one warning per episode.
//
// Reads block until start is closed: acp-go-sdk starts reading in
// NewConnection, before its logger can be set without a data race.
// The prompts and cancels forwarded are recorded in order (readOrder) for
// the handlers, which never call framing: see order.go.
//
// Read is called by one goroutine (the SDK's reader); close may be called
// from any goroutine.
type framing struct {
	src        Stream
	start      <-chan struct{}
	out        io.Writer // the connection's one writer (msgwriter.Writer): one Write a whole frame
	log        *slog.Logger
	mediaLimit int // limits.maxMediaBytes, for the oversize message
	// calls, if set (before reads start), counts every call (isCall)
	// forwarded to the engine.
	calls *calls
	// order records every request and session/cancel forwarded, in the
	// order read (order.go).
	order *readOrder

	buf []byte // forwarded output not yet read
	// repliesFull is set while replies has been full since it last had
	// room (for one warning per episode); used by the reader only.
	repliesFull bool

	replies   chan []byte   // error responses for the writer goroutine
	stop      chan struct{} // closed by close
	closeOnce sync.Once
	written   chan struct{} // closed when the writer goroutine returns

	// ended is closed when the input ends (EOF or a read error). With
	// holdEnd set (before reads start), the end reaches the engine only
	// once release is closed (endInput, close), so that the calls under way
	// are answered on a connection still open.
	holdEnd bool
	// requireInit, if set (before reads start), refuses every request read
	// before the first initialize (-32600) and drops such notifications:
	// ACP's client initializes the connection first. initRead is set once
	// an initialize request has been read; the reader alone uses both.
	requireInit, initRead bool
	ended                 chan struct{}
	endOnce               sync.Once
	release               chan struct{}
	releaseOnce           sync.Once
}

// newFraming returns the framing reader over src's messages; error
// responses go to out, and the requests and cancels forwarded are recorded
// in order (nil: in a readOrder of its own). mediaLimit is
// limits.maxMediaBytes (zero: the default). Call close once the
// connection has ended.
func newFraming(src Stream, start <-chan struct{}, out io.Writer, order *readOrder, log *slog.Logger, mediaLimit int) *framing {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if mediaLimit <= 0 {
		mediaLimit = quota.DefaultMaxMedia
	}
	if order == nil {
		order = newReadOrder()
	}
	f := &framing{
		src: src, start: start, out: out, order: order, log: log, mediaLimit: mediaLimit,
		replies: make(chan []byte, maxQueuedReplies), stop: make(chan struct{}), written: make(chan struct{}),
		ended: make(chan struct{}), release: make(chan struct{}),
	}
	go f.writeReplies()
	return f
}

// close stops the reply writer after writing what is queued (for at most
// replyDrainTimeout: stdout may be stuck) and releases a Read waiting for
// room among the queued cancels. It is idempotent.
func (f *framing) close() {
	f.endInput()
	f.closeOnce.Do(func() {
		f.order.close()
		close(f.stop)
	})
	select {
	case <-f.written:
	case <-time.After(replyDrainTimeout):
		f.log.Warn("error responses not written: stdout is not being read", "queued", len(f.replies))
	}
}

// inputEnded is closed when the input has ended; Read then holds the end
// back from the engine until endInput.
func (f *framing) inputEnded() <-chan struct{} { return f.ended }

// endInput lets Read return the end of input to the engine, which then
// closes the connection. It is idempotent.
func (f *framing) endInput() {
	f.releaseOnce.Do(func() { close(f.release) })
}

// writeReplies writes the queued error responses until close.
func (f *framing) writeReplies() {
	defer close(f.written)
	for {
		select {
		case b := <-f.replies:
			if _, err := f.out.Write(b); err != nil {
				f.log.Debug("error response not written", "err", err)
			}
		case <-f.stop:
			for {
				select {
				case b := <-f.replies:
					_, _ = f.out.Write(b)
				default:
					return
				}
			}
		}
	}
}

// Read implements io.Reader for acp-go-sdk: it yields only valid JSON-RPC
// messages, each on a line of its own.
func (f *framing) Read(p []byte) (int, error) {
	<-f.start
	for len(f.buf) == 0 {
		msg, err := f.src.ReadMessage()
		var tl *TooLargeError
		switch {
		case errors.As(err, &tl):
			f.buf = f.oversize(tl.Size, tl.Head)
			continue
		case err != nil:
			f.endOnce.Do(func() { close(f.ended) })
			if f.holdEnd {
				<-f.release
			}
			return 0, err
		}
		f.buf = f.frame(msg)
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
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
// gets of it: a re-encoding of exactly the members that were checked, with
// a newline, or nothing (the line was answered or dropped). The line itself
// is never forwarded, so the SDK (encoding/json, case-insensitive keys, the
// last duplicate wins) cannot read it differently from framing.
func (f *framing) frame(line []byte) []byte {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil
	}
	msg, bad, err := decodeMembers(trimmed, jsonrpcKeys[:])
	switch {
	case errors.Is(err, errNotObject) && trimmed[0] == '[':
		f.reply(nil, codeInvalidRequest, "Invalid Request: batches (JSON arrays) are not supported; send one JSON-RPC message per line", nil)
		return nil
	case errors.Is(err, errNotObject):
		f.reply(nil, codeInvalidRequest, "Invalid Request: a JSON-RPC message must be a JSON object", nil)
		return nil
	case err != nil:
		f.reply(jsonrpcid.Readable(trimmed), codeParseError, "Parse error: the line is not valid JSON ("+err.Error()+"); send one JSON-RPC message per line", nil)
		return nil
	}
	idRaw, hasID := msg["id"]
	id := jsonrpcid.Valid(idRaw)
	methodRaw, hasMethod := msg["method"]
	if bad != "" {
		return f.ambiguous(msg, id, bad)
	}
	if !hasMethod {
		_, hasResult := msg["result"]
		_, hasError := msg["error"]
		if hasID && (hasResult || hasError) {
			return f.response(msg, idRaw)
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
		if f.requireInit && !f.initRead && method != "$/cancel_request" {
			f.log.Warn("notification dropped: the connection is not initialized", "method", method)
			return nil
		}
		return f.notification(method, msg["params"])
	}
	if id == nil {
		f.reply(nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: %s: id must be a string or a number, not %s", method, truncate(idRaw)), nil)
		return nil
	}
	if version != "2.0" {
		f.reply(id, codeInvalidRequest, fmt.Sprintf(`Invalid Request: %s: jsonrpc must be "2.0"`, method), nil)
		return nil
	}
	if method == acpsdk.AgentMethodInitialize {
		f.initRead = true
	} else if f.requireInit && !f.initRead {
		f.reply(id, codeInvalidRequest, fmt.Sprintf("Invalid Request: %s: the connection is not initialized: send initialize first", method), nil)
		return nil
	}
	if p, ok := msg["params"]; !ok || string(bytes.TrimSpace(p)) == "null" {
		msg["params"] = json.RawMessage("{}")
	}
	switch method {
	case acpsdk.AgentMethodSessionNew, acpsdk.AgentMethodSessionLoad, acpsdk.AgentMethodSessionResume, acpsdk.AgentMethodSessionFork, methodSetMCPServers:
		// The dispatch table reads mcpServers by exact key, the SDK's
		// types by any spelling: refuse the keys they could read
		// differently.
		if _, bad, err := decodeMembers(msg["params"], sessionParamKeys[:]); err == nil && bad != "" {
			f.reply(id, codeInvalidRequest, fmt.Sprintf("Invalid Request: %s: the key params.%q is a duplicate of, or differs only in case from, mcpServers or _meta", method, bad), nil)
			return nil
		}
	}
	if method == methodMCPMessage {
		// The published binding's mcp/message request asks the agent for a
		// server it provides: it provides none (mcpacp.go).
		if serverID, published := mcpacp.Published(msg["params"]); published {
			f.reply(id, codeMCPServerUnavailable, "MCP server registration unavailable: the agent provides no MCP servers over ACP", map[string]any{"serverId": serverID})
			return nil
		}
	}
	why, sessionID := checkParams(method, msg["params"])
	if why != "" {
		f.reply(id, codeInvalidParams, why, nil)
		return nil
	}
	out, err := wireMessage{ID: id, Method: method, Params: msg["params"]}.line()
	if err != nil { // not reached: every value was read as JSON
		f.reply(id, codeInvalidRequest, "Invalid Request: "+err.Error(), nil)
		return nil
	}
	if len(out)-1 > MaxFrameBytes {
		f.replyTooLarge(id, method, len(out)-1)
		return nil
	}
	f.order.request(method == acpsdk.AgentMethodSessionPrompt, sessionID)
	if f.calls != nil && isCall(method, msg["params"]) {
		f.calls.read()
	}
	return out
}

// jsonrpcKeys are the top-level members of a JSON-RPC 2.0 message.
var jsonrpcKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// sessionParamKeys are the members of session/new, session/load and
// session/resume params that the dispatch table reads by exact key
// (withServers, dispatch.go).
var sessionParamKeys = [...]string{"mcpServers", "_meta"}

// errNotObject is decodeMembers' error for valid JSON that is not an object.
var errNotObject = errors.New("not a JSON object")

// decodeMembers reads the top-level members of the JSON object b by their
// exact keys, without decoding their values: each value is a slice of b,
// which the caller must not change. bad names the first key that makes the
// object ambiguous to encoding/json, which matches keys case-insensitively
// and keeps the last duplicate: a member of keys given twice, or a key
// equal to one of them case-insensitively (Unicode simple folding, as
// encoding/json does) but not exactly. It returns errNotObject if b is
// valid JSON but not an object, and the syntax error if b is not valid
// JSON. b is checked by encoding/json, then walked once with segmentio's
// tokenizer (already go-sdk's decoder), which allocates nothing per token:
// this runs on every message a client sends.
func decodeMembers(b []byte, keys []string) (msg map[string]json.RawMessage, bad string, err error) {
	if !json.Valid(b) {
		return nil, "", json.Unmarshal(b, new(any))
	}
	t := sjson.NewTokenizer(b)
	if !t.Next() || t.Delim != '{' {
		return nil, "", errNotObject
	}
	msg = make(map[string]json.RawMessage, 4)
	for t.Next() {
		if t.Depth != 1 || !t.IsKey { // the closing brace, or a ',' between members
			continue
		}
		key, err := memberKey(t)
		if err != nil {
			return nil, "", err
		}
		if !t.Next() || t.Delim != ':' || !t.Next() {
			return nil, "", errTokenizer(t)
		}
		start := len(b) - t.Remaining() - len(t.Value)
		if t.Delim == '{' || t.Delim == '[' { // to its closing delimiter, at the member's depth
			for t.Next() && (t.Depth > 1 || t.Delim != '}' && t.Delim != ']') {
			}
			if t.Err != nil {
				return nil, "", t.Err
			}
		}
		if bad == "" {
			for _, k := range keys {
				_, dup := msg[k]
				if key == k && dup || key != k && strings.EqualFold(key, k) {
					bad = key
				}
			}
		}
		msg[key] = b[start : len(b)-t.Remaining() : len(b)-t.Remaining()]
	}
	if t.Err != nil {
		return nil, "", t.Err
	}
	return msg, bad, nil
}

// memberKey is the key t is on, as encoding/json reads it: a plain ASCII
// key as it is; one with escapes or other bytes (invalid UTF-8 becomes
// U+FFFD) through encoding/json itself.
func memberKey(t *sjson.Tokenizer) (string, error) {
	raw := t.Value[1 : len(t.Value)-1]
	plain := true
	for _, c := range raw {
		plain = plain && c >= 0x20 && c < 0x80 && c != '\\'
	}
	if plain {
		return string(raw), nil
	}
	var key string
	err := json.Unmarshal(t.Value, &key)
	return key, err
}

// errTokenizer is the tokenizer's error, or one saying the input ended
// (not reached for input json.Valid accepts).
func errTokenizer(t *sjson.Tokenizer) error {
	if t.Err != nil {
		return t.Err
	}
	return io.ErrUnexpectedEOF
}

// ambiguous refuses a message with a key that encoding/json could read as
// another (see decodeMembers): a response to one of the agent's requests
// becomes an error response on its id, so the request does not wait
// forever; anything else is answered with -32600 naming the key.
func (f *framing) ambiguous(msg map[string]json.RawMessage, id json.RawMessage, key string) []byte {
	rule := fmt.Sprintf("the key %q is a duplicate of, or differs only in case from, a JSON-RPC member (jsonrpc, id, method, params, result, error)", key)
	hasMethod := false
	for k := range msg {
		if strings.EqualFold(k, "method") {
			hasMethod = true
		}
	}
	if !hasMethod && id != nil {
		return f.failResponse(id, "the client's response is invalid: "+rule)
	}
	f.reply(id, codeInvalidRequest, "Invalid Request: "+rule, nil)
	return nil
}

// response checks the client's response to one of the agent's requests. A
// response that can be matched to a request (its id is a string or a
// number) but is not exactly one of result or an error object with an
// integer code and a string message is replaced by an error response on
// that id, so the request does not wait forever. A response with no valid
// id matches no request and is dropped.
func (f *framing) response(msg map[string]json.RawMessage, idRaw json.RawMessage) []byte {
	id := jsonrpcid.Valid(idRaw)
	if id == nil {
		f.log.Warn("response dropped: id must be a string or a number", "id", truncate(idRaw), "error", truncate(msg["error"]))
		return nil
	}
	result, hasResult := msg["result"]
	errRaw, hasError := msg["error"]
	if hasResult && hasError {
		return f.failResponse(id, "the client's response is invalid: it has both result and error")
	}
	out := wireMessage{ID: id, Result: result}
	if hasError {
		var e wireError
		if err := json.Unmarshal(errRaw, &e); err != nil || e.Code == nil || e.Message == nil {
			return f.failResponse(id, "the client's response is invalid: error must be an object with an integer code and a string message, not "+truncate(errRaw))
		}
		out = wireMessage{ID: id, Error: &e}
	}
	b, err := out.line()
	if err != nil { // not reached: every value was read as JSON
		return f.failResponse(id, "the client's response is invalid: "+err.Error())
	}
	return b
}

// failResponse returns an error response on id, for the SDK, in place of
// the client's response that broke a rule.
func (f *framing) failResponse(id json.RawMessage, message string) []byte {
	f.log.Warn("response replaced by an error", "id", string(id), "error", message)
	b, err := json.Marshal(errorResponse{JSONRPC: "2.0", ID: id, Error: acpsdk.RequestError{Code: codeInvalidRequest, Message: message}})
	if err != nil {
		return nil
	}
	return withNewline(b)
}

// wireMessage is what framing forwards to the SDK: a request (ID, Method,
// Params), a notification (Method, Params) or a response (ID, and Result or
// Error). ID, Params and Result are single JSON values as decodeMembers
// read and checked them.
type wireMessage struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *wireError
}

// wireError is a JSON-RPC error object; Code and Message are required.
type wireError struct {
	Code    *int            `json:"code"`
	Message *string         `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// line encodes m as {"jsonrpc":"2.0","id","method","params"|"result"|"error"}
// (members left out when empty) and a newline. The raw values are copied as
// they are: re-compacting a prompt of MaxFrameBytes would cost as much as
// decoding it, and they hold no newline (they come from one line).
func (m wireMessage) line() ([]byte, error) {
	var method, errObj []byte
	var err error
	if m.Method != "" {
		if method, err = json.Marshal(m.Method); err != nil {
			return nil, err
		}
	}
	if m.Error != nil {
		if errObj, err = json.Marshal(m.Error); err != nil {
			return nil, err
		}
	}
	b := make([]byte, 0, 64+len(m.ID)+len(method)+len(m.Params)+len(m.Result)+len(errObj))
	b = append(b, `{"jsonrpc":"2.0"`...)
	for _, mem := range [...]struct {
		key   string
		value []byte
	}{{"id", m.ID}, {"method", method}, {"params", m.Params}, {"result", m.Result}, {"error", errObj}} {
		if len(mem.value) > 0 {
			b = append(b, `,"`+mem.key+`":`...)
			b = append(b, mem.value...)
		}
	}
	return append(b, "}\n"...), nil
}

// notification decides what becomes of a notification (see framing).
func (f *framing) notification(method string, params json.RawMessage) []byte {
	line, err := wireMessage{Method: method, Params: params}.line()
	if err != nil { // not reached: every value was read as JSON
		return nil
	}
	switch method {
	case "$/cancel_request": // handled by the SDK's reader, not queued
		return line
	case methodMCPMessage:
		// An MCP notification to a server the client hosts; an mcp/message
		// carrying an MCP request must be an ACP request (isCall).
		if isCall(method, params) {
			f.log.Warn("notification dropped: an mcp/message carrying an MCP request must be a request (with an id)")
			return nil
		}
		return line
	case acpsdk.AgentMethodSessionCancel:
	default:
		f.log.Debug("notification dropped: the agent handles no such notification", "method", method)
		return nil
	}
	// Forward only what reaches the session/cancel handler (which tells
	// order it is handled): the SDK refuses the rest after queueing it.
	var p acpsdk.CancelNotification
	if err := json.Unmarshal(params, &p); err != nil {
		f.log.Warn("session/cancel dropped: invalid params", "err", err)
		return nil
	}
	if err := p.Validate(); err != nil {
		f.log.Warn("session/cancel dropped: invalid params", "err", err)
		return nil
	}
	if !f.order.cancel(string(p.SessionId)) {
		f.log.Debug("session/cancel dropped: the same cancel is still queued", "session", string(p.SessionId))
		return nil
	}
	return line
}

// oversize handles a message over MaxFrameBytes of size bytes, of which
// head is the top level (see framing).
func (f *framing) oversize(size int, head []byte) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(head, &msg) != nil || msg == nil {
		f.replyTooLarge(jsonrpcid.Readable(head), "", size)
		return nil
	}
	id := jsonrpcid.Valid(msg["id"])
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
		what, quota.Size(size), size, MaxFrameBytes, quota.Size(f.mediaLimit))
	f.reply(id, codeInvalidRequest, msg, map[string]any{"bytes": size, "limit": MaxFrameBytes, "maxMediaBytes": f.mediaLimit})
}

// errorResponse is a JSON-RPC error response.
type errorResponse struct {
	JSONRPC string              `json:"jsonrpc"`
	ID      json.RawMessage     `json:"id"` // nil is written as null
	Error   acpsdk.RequestError `json:"error"`
}

// reply queues an error response on id (nil: id null) for the writer
// goroutine; when maxQueuedReplies are queued it waits (back-pressure: the
// client is not reading stdout), and logs a warning the first time it waits
// since the queue last had room. Only the reader goroutine calls it.
func (f *framing) reply(id json.RawMessage, code int, message string, data any) {
	f.log.Warn("refused a client message", "id", string(id), "code", code, "error", message)
	b, err := json.Marshal(errorResponse{JSONRPC: "2.0", ID: id, Error: acpsdk.RequestError{Code: code, Message: message, Data: data}})
	if err != nil {
		return
	}
	line := withNewline(b)
	select {
	case f.replies <- line:
		f.repliesFull = false
		return
	default:
	}
	if !f.repliesFull {
		f.repliesFull = true
		f.log.Warn("reading stdin waits: the error responses queued for the client are not being read from stdout", "queued", len(f.replies))
	}
	select {
	case f.replies <- line:
	case <-f.stop:
	}
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
