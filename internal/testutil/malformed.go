package testutil

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Malformed is one line of MalformedJSONRPC: bad or odd JSON-RPC input a
// stdio server must survive, and what it answers.
type Malformed struct {
	// Name says what is wrong with Line.
	Name string
	// Line is the line, without its newline.
	Line string
	// Code is the JSON-RPC error code of the one answer the line gets
	// (on id null unless ID is set); zero: the line gets no answer (a
	// response, a notification) or, with Result set, a result.
	Code int
	// ID is the id the answer carries, as JSON ("" for null).
	ID string
	// Result is set when the line is a request the server serves.
	Result bool
}

// MalformedJSONRPC returns the lines that an MCP server on stdio is fed
// one at a time, each followed by a ping, in the tests of its framing
// (mcpserver's, with the fuzz seeds, and the e2e suite's): broken JSON,
// ids of every wrong kind, bad members, responses to requests never sent,
// and valid but odd requests. The answers are those of an initialized
// go-sdk server behind mcpserver.NewStdioTransport, with the default line
// limit.
func MalformedJSONRPC() []Malformed {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	return []Malformed{
		{Name: "not JSON", Line: `this is not json`, Code: -32700},
		{Name: "truncated JSON", Line: `{"jsonrpc":"2.0","id":1,"method":"ping"`, Code: -32700, ID: "1"},
		{Name: "truncated JSON, id 1e400", Line: `{"jsonrpc":"2.0","id":1e400,"method":"ping"`, Code: -32700},
		{Name: "truncated before the id", Line: `{"jsonrpc":"2.0","method":"pi`, Code: -32700},
		{Name: "trailing garbage", Line: `{"jsonrpc":"2.0","id":2,"method":"ping"} x`, Code: -32700, ID: "2"},
		{Name: "id 1e400", Line: `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, Code: -32600},
		{Name: "id -1e400", Line: `{"jsonrpc":"2.0","id":-1e400,"method":"ping"}`, Code: -32600},
		{Name: "id beyond int64", Line: `{"jsonrpc":"2.0","id":99999999999999999999999,"method":"ping"}`, Code: -32600},
		{Name: "id 1e19", Line: `{"jsonrpc":"2.0","id":1e19,"method":"ping"}`, Code: -32600},
		{Name: "id 2^53+1", Line: `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, Code: -32600},
		{Name: "float id", Line: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, Code: -32600},
		{Name: "negative id", Line: `{"jsonrpc":"2.0","id":-7,"method":"ping"}`, ID: "-7", Result: true},
		{Name: "id in exponent form", Line: `{"jsonrpc":"2.0","id":1e2,"method":"ping"}`, ID: "100", Result: true},
		{Name: "nested array id", Line: `{"jsonrpc":"2.0","id":[[[1]]],"method":"ping"}`, Code: -32600},
		{Name: "object id", Line: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, Code: -32600},
		{Name: "boolean id", Line: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, Code: -32600},
		{Name: "null id with a method", Line: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, Code: -32600},
		{Name: "batch", Line: `[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]`, Code: -32600},
		{Name: "empty batch", Line: `[]`, Code: -32600},
		{Name: "JSON null", Line: `null`, Code: -32600},
		{Name: "JSON number", Line: `42`, Code: -32600},
		{Name: "JSON string", Line: `"ping"`, Code: -32600},
		{Name: "empty object", Line: `{}`, Code: -32600},
		{Name: "unknown method", Line: `{"jsonrpc":"2.0","id":5,"method":"no/such/method"}`, Code: -32601, ID: "5"},
		{Name: "result and error both", Line: `{"jsonrpc":"2.0","id":6,"result":{},"error":{"code":1,"message":"x"}}`},
		{Name: "missing jsonrpc", Line: `{"id":7,"method":"ping"}`, Code: -32600, ID: "7"},
		{Name: `jsonrpc "1.0"`, Line: `{"jsonrpc":"1.0","id":8,"method":"ping"}`, Code: -32600, ID: "8"},
		{Name: "jsonrpc as a number", Line: `{"jsonrpc":2.0,"id":9,"method":"ping"}`, Code: -32600, ID: "9"},
		{Name: "invalid UTF-8", Line: "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}", ID: `"\ufffd\ufffd"`, Result: true},
		{Name: "invalid UTF-8 outside strings", Line: "{\"jsonrpc\":\"2.0\",\xff\"id\":10}", Code: -32700},
		{Name: "1 MiB line, unterminated string", Line: `{"jsonrpc":"2.0","id":11,"method":"ping","params":{"pad":"` + strings.Repeat("x", 1<<20), Code: -32700, ID: "11"},
		{Name: "NUL bytes", Line: "\x00\x00\x00", Code: -32700},
		{Name: "NUL byte in a method", Line: "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"ping\x00\"}", Code: -32700, ID: "12"},
		{Name: "response to an id never sent (error)", Line: `{"jsonrpc":"2.0","id":919,"error":{"code":-32600,"message":"x"}}`},
		{Name: "response to an id never sent (result)", Line: `{"jsonrpc":"2.0","id":920,"result":{}}`},
		{Name: "response to a string id never sent", Line: `{"jsonrpc":"2.0","id":"919","result":{}}`},
		{Name: "response with id 1e400", Line: `{"jsonrpc":"2.0","id":1e400,"result":{}}`},
		{Name: "response with a malformed error", Line: `{"jsonrpc":"2.0","id":921,"error":{"code":"x","message":"x"}}`},
		{Name: "response with a fractional error code", Line: `{"jsonrpc":"2.0","id":922,"error":{"code":1.5,"message":7}}`},
		{Name: "response with null id", Line: `{"jsonrpc":"2.0","id":null,"result":{}}`},
		{Name: "duplicate ids (first)", Line: `{"jsonrpc":"2.0","id":"dup","method":"ping"}`, ID: `"dup"`, Result: true},
		{Name: "duplicate ids (second)", Line: `{"jsonrpc":"2.0","id":"dup","method":"ping"}`, ID: `"dup"`, Result: true},
		{Name: "duplicate id members", Line: `{"jsonrpc":"2.0","id":1e400,"id":13,"method":"ping"}`, ID: "13", Result: true},
		{Name: "notification with an id", Line: `{"jsonrpc":"2.0","id":14,"method":"notifications/initialized"}`, Code: -32600, ID: "14"},
		{Name: "unknown notification", Line: `{"jsonrpc":"2.0","method":"notifications/no-such-thing"}`},
		{Name: "cancel of a request never made", Line: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}`},
		{Name: "empty method", Line: `{"jsonrpc":"2.0","id":15,"method":""}`, Code: -32600, ID: "15"},
		{Name: "null method", Line: `{"jsonrpc":"2.0","id":16,"method":null}`, Code: -32600, ID: "16"},
		{Name: "params a string", Line: `{"jsonrpc":"2.0","id":17,"method":"tools/list","params":"x"}`, Code: -32602, ID: "17"},
		{Name: "id only", Line: `{"jsonrpc":"2.0","id":18}`, Code: -32600, ID: "18"},
		{Name: "nesting over 1000 levels", Line: `{"jsonrpc":"2.0","id":19,"method":"ping","params":{"a":` + deep(2000) + `}}`, Code: -32700, ID: "19"},
		{Name: "nesting over 10000 levels", Line: `{"jsonrpc":"2.0","id":20,"method":"ping","params":{"a":` + deep(12000) + `}}`, Code: -32700, ID: "20"},
		{Name: "keys differing in case", Line: `{"JSONRPC":"2.0","ID":21,"Method":"ping"}`, Code: -32600},
	}
}

// ScanLines returns the lines read from r, without their newlines (at most
// 16 MiB each); the channel is closed when r ends or fails, which ends the
// goroutine reading it.
func ScanLines(r io.Reader) <-chan []byte {
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	return lines
}

// FeedMalformed writes each of lines to a JSON-RPC server on stdio through
// w, each followed by a ping request, and reads what the server writes
// from out (ScanLines) until the ping is answered and the line's answer
// (Malformed) has come: the test fails on a line the server writes that
// is no JSON-RPC response, on an answer the line should not get, and if
// the server writes nothing for a minute, or ends. A reply may come before
// or after the ping's: the server handles requests concurrently.
func FeedMalformed(t testing.TB, lines []Malformed, w io.Writer, out <-chan []byte) {
	t.Helper()
	for i, m := range lines {
		pingID := fmt.Sprintf("ping-%d", i)
		written := make(chan error, 1)
		go func() { // the server may answer before it reads the ping
			_, err := io.WriteString(w, m.Line+"\n"+`{"jsonrpc":"2.0","id":"`+pingID+`","method":"ping"}`+"\n")
			written <- err
		}()
		var wantID any
		if m.ID != "" {
			if err := json.Unmarshal([]byte(m.ID), &wantID); err != nil {
				t.Fatalf("%s: ID %s: %v", m.Name, m.ID, err)
			}
		}
		pinged, answered := false, m.Code == 0 && !m.Result
		for !pinged || !answered {
			var b []byte
			select {
			case line, ok := <-out:
				if !ok {
					t.Fatalf("line %d, %s: the server ended (%d of %d lines fed)", i, m.Name, i, len(lines))
				}
				b = line
			case <-time.After(time.Minute):
				t.Fatalf("line %d, %s: no answer for a minute (ping answered: %v)", i, m.Name, pinged)
			}
			var r struct {
				JSONRPC string           `json:"jsonrpc"`
				ID      any              `json:"id"`
				Result  *json.RawMessage `json:"result"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &r); err != nil || r.JSONRPC != "2.0" || (r.Result == nil) == (r.Error == nil) {
				t.Errorf("line %d, %s: the server wrote %.200q, which is no JSON-RPC response", i, m.Name, b)
				continue
			}
			switch {
			case r.ID == pingID && r.Result != nil && !pinged:
				pinged = true
			case !answered && reflect.DeepEqual(r.ID, wantID) && (m.Result && r.Result != nil || r.Error != nil && r.Error.Code == m.Code):
				answered = true
			default:
				t.Errorf("line %d, %s: unexpected answer %.300s (want code %d, result %v, on id %s)", i, m.Name, b, m.Code, m.Result, m.ID)
			}
		}
		if err := <-written; err != nil {
			t.Fatalf("line %d, %s: writing it: %v", i, m.Name, err)
		}
	}
}
