package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/jsonrpcid"
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
// a framing layer that answers what the SDK would end the connection on,
// and goes on reading. A line that is not JSON is answered -32700; a batch
// (a JSON array: MCP since 2025-06-18 has none), a value that is not an
// object, a jsonrpc other than "2.0", an id that is not a string or a
// number, a method that is not a non-empty string, or an object that is
// neither a request, a notification nor a response is answered -32600 (on
// its id when it has a valid one, else null; a parse error too, when the id
// comes before the fault); a line over maxLine bytes
// (zero: mcp.DefaultMaxLineLength) is answered -32600 with its size and the
// limit, and skipped without being held whole. A malformed notification is
// answered too, on id null, as JSON-RPC asks for unreadable messages. The
// replies and the SDK's messages are written to out one whole line at a
// time. log may be nil.
func NewStdioTransport(in io.Reader, out io.Writer, maxLine int, log *slog.Logger) mcp.Transport {
	if maxLine <= 0 {
		maxLine = mcp.DefaultMaxLineLength
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &lineWriter{w: out}
	f := &lineFilter{r: bufio.NewReaderSize(in, 64<<10), out: w, max: maxLine, log: log}
	return &mcp.IOTransport{Reader: io.NopCloser(f), Writer: w, MaxLineLength: maxLine + 1}
}

// lineWriter serializes whole-line writes to w: the SDK writes each
// message as one line in one Write, and the framing layer its replies.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close implements io.Closer; the writer outlives the connection.
func (l *lineWriter) Close() error { return nil }

// lineFilter reads lines from r and passes on the well-formed ones,
// answering the others on out. Read is called by one goroutine at a time
// (the SDK's reader).
type lineFilter struct {
	r       *bufio.Reader
	out     *lineWriter
	max     int
	log     *slog.Logger
	pending []byte // a checked line and its newline, not yet read
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.readLine()
		if line != nil && f.check(line) {
			f.pending = append(line, '\n')
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
			f.reply(jsonrpcid.Readable(line), codeInvalidRequest, fmt.Sprintf("Invalid Request: the line of %d bytes is over the limit of %d bytes per JSON-RPC message; it was skipped", n, f.max))
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return nil, err
		}
		return line, err
	}
}

// check reports whether line is a well-formed JSON-RPC 2.0 message the SDK
// can take; otherwise it answers it and reports false.
func (f *lineFilter) check(line []byte) bool {
	if !json.Valid(line) {
		f.reply(jsonrpcid.Readable(line), codeParseError, "Parse error: the line is not valid JSON (or nests deeper than a JSON decoder reads); send one JSON-RPC message per line")
		return false
	}
	switch line[0] {
	case '[':
		f.reply(nil, codeInvalidRequest, "Invalid Request: batches (JSON arrays) are not supported; send one JSON-RPC message per line")
		return false
	case '{':
	default:
		f.reply(nil, codeInvalidRequest, "Invalid Request: a JSON-RPC message must be a JSON object")
		return false
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		f.reply(nil, codeParseError, "Parse error: "+err.Error())
		return false
	}
	idRaw, hasID := msg["id"]
	id := jsonrpcid.Valid(idRaw)
	var version string
	if json.Unmarshal(msg["jsonrpc"], &version) != nil || version != "2.0" {
		f.reply(id, codeInvalidRequest, `Invalid Request: jsonrpc must be "2.0"`)
		return false
	}
	if hasID && id == nil {
		f.reply(nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: id must be a string or a number, not %s", short(idRaw)))
		return false
	}
	if methodRaw, ok := msg["method"]; ok {
		var method string
		if json.Unmarshal(methodRaw, &method) != nil || method == "" {
			f.reply(id, codeInvalidRequest, fmt.Sprintf("Invalid Request: method must be a non-empty string, not %s", short(methodRaw)))
			return false
		}
		return true
	}
	_, hasResult := msg["result"]
	_, hasError := msg["error"]
	if !hasID || hasResult == hasError {
		f.reply(id, codeInvalidRequest, "Invalid Request: the message has no method, and is no response (an id with a result or an error)")
		return false
	}
	return true
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
