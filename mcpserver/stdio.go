package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/jsonrpcid"
	"github.com/seed02d3eb6b/acp-agent/internal/msgwriter"
)

// JSON-RPC 2.0 error codes of malformed input
// (https://www.jsonrpc.org/specification#error_object).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// headBytes is how much of a line over the limit is kept, to find its id.
const headBytes = 64 << 10

// NewStdioTransport returns the transport of the MCP front end on stdio:
// go-sdk's IOTransport over in and out (newline-delimited JSON-RPC), behind
// a framing layer that answers or drops what the SDK would end the
// connection on, and goes on reading; the SDK never reads a client's line
// itself, only a re-encoding of the members checked.
//
// Requests and notifications: a line that is not JSON, or nests deeper
// than the SDK reads (maxDepth), is answered -32700; a batch (a JSON array:
// MCP since 2025-06-18 has none), a value that is not an object, a jsonrpc
// other than "2.0", an id that is not a string or an integer the SDK gives
// back unchanged (jsonrpcid.Exact: not 1.5, 2^53+1, 1e19 or 1e400), a
// method that is not a non-empty string, or an object that is neither a
// request, a notification nor a response is answered -32600 (on its id
// when it is one of those, else null; a parse error too, when the id comes
// before the fault); a line over maxLine bytes (zero:
// mcp.DefaultMaxLineLength) is answered -32600 with its size and the
// limit, and skipped without being held whole. A malformed notification is
// answered too, on id null, as JSON-RPC asks for unreadable messages. The
// SDK gets {"jsonrpc","id","method","params"} as read.
//
// Responses are never answered (a response gets no response): one whose
// id is not such an id is dropped; one that is not exactly one of result
// and an error object with an integer code and a string message, or that
// has a bad jsonrpc, reaches the SDK as an error response on its id, so
// the server's request does not wait forever; and one to an id the server
// has no request under way with (never sent, answered, or cancelled) is
// dropped. Each drop is logged (warn).
//
// The end of in (the client closed stdin) reaches the SDK only once every
// request read before it has been answered, so that a client that writes
// requests and closes stdin at once gets every answer: a tools/call under
// way (an ask_agent turn) is cancelled first, as if the client had sent
// notifications/cancelled, and answers that the turn was cancelled; every
// other request is answered as usual. After 30 s without every answer the
// end is passed on anyway, and logged (warn).
//
// The replies and the SDK's messages are written to out one whole line at
// a time. log may be nil.
func NewStdioTransport(in io.Reader, out io.Writer, maxLine int, log *slog.Logger) mcp.Transport {
	if maxLine <= 0 {
		maxLine = mcp.DefaultMaxLineLength
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := msgwriter.New(out) // the SDK writes each message as one line in one Write, the framing layer its replies
	f := &lineFilter{r: bufio.NewReaderSize(in, 64<<10), out: w, max: maxLine, log: log}
	// The re-encoding of a line is no longer than the line, but for the
	// error response that replaces an invalid response: slack for it.
	return &stdioTransport{io: &mcp.IOTransport{Reader: io.NopCloser(f), Writer: w, MaxLineLength: maxLine + 1 + 4<<10}, log: log, drain: eofDrainTimeout}
}

// lineFilter reads lines from r and passes on the well-formed ones,
// answering the others on out. Read is called by one goroutine at a time
// (the SDK's reader).
type lineFilter struct {
	r       *bufio.Reader
	out     *msgwriter.Writer
	max     int
	log     *slog.Logger
	pending []byte // a checked line and its newline, not yet read
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.readLine()
		if line != nil {
			if msg := f.check(line); msg != nil {
				f.pending = append(msg, '\n')
			}
		}
		if err != nil && len(f.pending) == 0 {
			return 0, err
		}
		if err != nil {
			break // deliver the last line, then the error on the next Read
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine returns the next line without its newline, or nil for a line
// over the limit (answered here) or a blank one. It returns the reader's
// error at the end of the input.
func (f *lineFilter) readLine() ([]byte, error) {
	var line []byte
	size := 0
	for {
		chunk, err := f.r.ReadSlice('\n')
		size += len(chunk)
		if size <= f.max+1 {
			line = append(line, chunk...)
		} else if len(line) < headBytes {
			line = append(line, chunk[:min(len(chunk), headBytes-len(line))]...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && size == 0:
			return nil, err
		}
		n := size // the line's length without its end of line
		if bytes.HasSuffix(chunk, []byte("\n")) {
			n--
			if bytes.HasSuffix(chunk, []byte("\r\n")) {
				n--
			}
		}
		if n > f.max {
			f.reply(readableID(line), codeInvalidRequest, fmt.Sprintf("Invalid Request: the line of %d bytes is over the limit of %d bytes per JSON-RPC message; it was skipped", n, f.max))
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return nil, err
		}
		return line, err
	}
}

// maxDepth is the deepest nesting of objects and arrays the SDK reads
// (go-sdk's internal/json: 1000 levels); a deeper message would end its
// reader.
const maxDepth = 1000

// check returns the message the SDK gets for line: a re-encoding of the
// members checked, or nil when line was answered or dropped.
func (f *lineFilter) check(line []byte) []byte {
	if !json.Valid(line) {
		f.reply(readableID(line), codeParseError, "Parse error: the line is not valid JSON (or nests deeper than a JSON decoder reads); send one JSON-RPC message per line")
		return nil
	}
	if d := depth(line); d > maxDepth {
		f.reply(readableID(line), codeParseError, fmt.Sprintf("Parse error: the message nests %d levels deep, over the limit of %d", d, maxDepth))
		return nil
	}
	switch line[0] {
	case '[':
		f.reply(nil, codeInvalidRequest, "Invalid Request: batches (JSON arrays) are not supported; send one JSON-RPC message per line")
		return nil
	case '{':
	default:
		f.reply(nil, codeInvalidRequest, "Invalid Request: a JSON-RPC message must be a JSON object")
		return nil
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		f.reply(nil, codeParseError, "Parse error: "+err.Error())
		return nil
	}
	idRaw, hasID := msg["id"]
	id := jsonrpcid.Exact(idRaw)
	var version string
	okVersion := json.Unmarshal(msg["jsonrpc"], &version) == nil && version == "2.0"
	methodRaw, hasMethod := msg["method"]
	_, hasResult := msg["result"]
	_, hasError := msg["error"]
	if !hasMethod && hasID && (hasResult || hasError) {
		return f.response(msg, idRaw, id, okVersion)
	}
	if !okVersion {
		f.reply(id, codeInvalidRequest, `Invalid Request: jsonrpc must be "2.0"`)
		return nil
	}
	if hasID && id == nil {
		f.reply(nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: id must be a string or an integer that a double holds exactly (any up to 2^53 in magnitude), not %s", short(idRaw)))
		return nil
	}
	if !hasMethod {
		f.reply(id, codeInvalidRequest, "Invalid Request: the message has no method, and is no response (an id with a result or an error)")
		return nil
	}
	var method string
	if json.Unmarshal(methodRaw, &method) != nil || method == "" {
		f.reply(id, codeInvalidRequest, fmt.Sprintf("Invalid Request: method must be a non-empty string, not %s", short(methodRaw)))
		return nil
	}
	out := []byte(`{"jsonrpc":"2.0"`)
	if hasID {
		out = append(append(out, `,"id":`...), id...)
	}
	out = append(append(out, `,"method":`...), methodRaw...)
	if params, ok := msg["params"]; ok {
		out = append(append(out, `,"params":`...), params...)
	}
	return append(out, '}')
}

// response returns the message the SDK gets for a client's response (an
// id, no method, a result or an error): the response re-encoded when it is
// well-formed; an error response on its id when it is not, so that the
// server's request does not wait forever; nil (dropped) when its id
// (jsonrpcid.Exact) can match no request.
func (f *lineFilter) response(msg map[string]json.RawMessage, idRaw, id json.RawMessage, okVersion bool) []byte {
	if id == nil {
		f.log.Warn("dropped a response whose id can match no request", "id", short(idRaw))
		return nil
	}
	result, hasResult := msg["result"]
	errRaw, hasError := msg["error"]
	fault := ""
	switch {
	case !okVersion:
		fault = `jsonrpc must be "2.0"`
	case hasResult && hasError:
		fault = "it has both result and error"
	case hasError:
		if errRaw = wireError(errRaw); errRaw == nil {
			fault = "error must be an object with an integer code and a string message, not " + short(msg["error"])
		}
	}
	out := append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), ',')
	switch {
	case fault != "":
		f.log.Warn("the client's response is invalid: failing the request", "id", string(id), "fault", fault)
		e, _ := json.Marshal(map[string]any{"code": codeInvalidRequest, "message": "the client's response is invalid: " + fault})
		out = append(append(out, `"error":`...), e...)
	case hasError:
		out = append(append(out, `"error":`...), errRaw...)
	default:
		out = append(append(out, `"result":`...), result...)
	}
	return append(out, '}')
}

// wireError returns the error object raw re-encoded as the SDK reads it,
// {"code","message"[,"data"]}, or nil unless raw is an object whose code is
// an integer (an int64) and whose message is a string.
func wireError(raw json.RawMessage) json.RawMessage {
	var e map[string]json.RawMessage
	if json.Unmarshal(raw, &e) != nil {
		return nil
	}
	code, message := e["code"], e["message"]
	var s string
	if _, err := strconv.ParseInt(string(code), 10, 64); err != nil || json.Unmarshal(message, &s) != nil || message[0] != '"' {
		return nil
	}
	out := append(append(append([]byte(`{"code":`), code...), `,"message":`...), message...)
	if data, ok := e["data"]; ok {
		out = append(append(out, `,"data":`...), data...)
	}
	return append(out, '}')
}

// depth is how deep the objects and arrays of the JSON value b nest.
func depth(b []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// reply writes a JSON-RPC error response on id (nil: null).
func (f *lineFilter) reply(id json.RawMessage, code int, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
	if err != nil {
		return
	}
	f.log.Warn("malformed MCP message answered", "code", code, "message", message)
	if _, err := f.out.Write(append(b, '\n')); err != nil {
		f.log.Warn("writing an error reply failed", "err", err)
	}
}

// short is raw for a message, cut at 40 bytes.
func short(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "…"
	}
	return string(raw)
}

// readableID is the id of a line that cannot be read whole
// (jsonrpcid.Readable), if a client reads it back unchanged
// (jsonrpcid.Exact), else nil: the answer goes on id null rather than on
// one the client's decoder may fail on, such as 1e400.
func readableID(line []byte) json.RawMessage {
	return jsonrpcid.Exact(jsonrpcid.Readable(line))
}
