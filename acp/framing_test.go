package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// frameSink records the frames the framing layer writes.
type frameSink struct {
	mu     sync.Mutex
	frames []string
}

func (s *frameSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frames = append(s.frames, string(p))
	return len(p), nil
}

func (s *frameSink) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.frames...)
}

// readFramed runs in through the framing layer and returns what the SDK
// reads and the error responses written to the client.
func readFramed(t testing.TB, in string) (string, []errorReply) {
	t.Helper()
	sink := &frameSink{}
	f := newFraming(NewLineStream(strings.NewReader(in), nil), started(), sink, nil, nil, 0)
	out, err := io.ReadAll(f)
	f.close()
	if err != nil {
		t.Fatal(err)
	}
	return string(out), parseReplies(t, sink.all())
}

// errorReply is an error response as the client reads it.
type errorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

func parseReplies(t testing.TB, frames []string) []errorReply {
	t.Helper()
	var out []errorReply
	for _, fr := range frames {
		if !strings.HasSuffix(fr, "\n") || strings.Count(fr, "\n") != 1 {
			t.Errorf("reply is not one line: %q", fr)
		}
		var r errorReply
		if err := json.Unmarshal([]byte(fr), &r); err != nil || r.JSONRPC != "2.0" {
			t.Errorf("reply %q: %v", fr, err)
		}
		out = append(out, r)
	}
	return out
}

// bigPrompt is a session/prompt line with an image of n base64 bytes; the
// id goes first, last, or nowhere ("").
func bigPrompt(id string, n int, idLast bool) string {
	data := strings.Repeat("A", n)
	params := `{"sessionId":"s","prompt":[{"type":"image","mimeType":"image/png","data":"` + data + `"}]}`
	switch {
	case id == "":
		return `{"jsonrpc":"2.0","method":"session/prompt","params":` + params + `}`
	case idLast:
		return `{"jsonrpc":"2.0","method":"session/prompt","params":` + params + `,"id":` + id + `}`
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":` + params + `}`
}

func TestFraming_HostileLines(t *testing.T) {
	const huge = MaxFrameBytes + 1<<20
	hugeResponse := `{"jsonrpc":"2.0","id":12,"result":{"x":"` + strings.Repeat("b", huge) + `"}}`
	tests := []struct {
		name    string
		line    string
		forward string // what the SDK gets ("" nothing)
		id      string // the id of the error reply ("" no reply)
		code    int
		message string // part of the error message
	}{
		{name: "not JSON", line: `hello`, id: "null", code: -32700, message: "not valid JSON"},
		{name: "truncated JSON, id readable", line: `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":`, id: "7", code: -32700},
		{name: "trailing garbage", line: `{"jsonrpc":"2.0","id":"x","method":"initialize","params":{}} garbage`, id: `"x"`, code: -32700},
		{name: "batch", line: `[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]`, id: "null", code: -32600, message: "batches"},
		{name: "empty batch", line: `[]`, id: "null", code: -32600},
		{name: "string", line: `"session/new"`, id: "null", code: -32600, message: "JSON object"},
		{name: "null", line: `null`, id: "null", code: -32600},
		{name: "id null", line: `{"jsonrpc":"2.0","id":null,"method":"initialize","params":{}}`, id: "null", code: -32600, message: "id must be a string or a number"},
		{name: "id object", line: `{"jsonrpc":"2.0","id":{"a":1},"method":"initialize","params":{}}`, id: "null", code: -32600},
		{name: "id array", line: `{"jsonrpc":"2.0","id":[1],"method":"initialize","params":{}}`, id: "null", code: -32600},
		{name: "id bool", line: `{"jsonrpc":"2.0","id":true,"method":"initialize","params":{}}`, id: "null", code: -32600},
		{name: "missing jsonrpc", line: `{"id":4,"method":"initialize","params":{}}`, id: "4", code: -32600, message: `jsonrpc must be "2.0"`},
		{name: "jsonrpc 1.0", line: `{"jsonrpc":"1.0","id":4,"method":"initialize","params":{}}`, id: "4", code: -32600},
		{name: "method not a string", line: `{"jsonrpc":"2.0","id":6,"method":5}`, id: "6", code: -32600, message: "method"},
		{name: "no method, no result", line: `{"jsonrpc":"2.0","id":5}`, id: "5", code: -32600},
		{name: "nothing", line: `{}`, id: "null", code: -32600},
		{name: "missing params", line: `{"jsonrpc":"2.0","id":3,"method":"session/list"}`, forward: `{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}`},
		{name: "null params", line: `{"jsonrpc":"2.0","id":3,"method":"session/list","params":null}`, forward: `{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}`},
		{name: "valid request", line: `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":1}}`, forward: `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":1}}`},
		{name: "CRLF", line: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\r", forward: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		{name: "response", line: `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`, forward: `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`},
		{name: "$/cancel_request", line: `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`, forward: `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`},
		{name: "session/cancel", line: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`, forward: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`},
		{name: "session/cancel without params", line: `{"jsonrpc":"2.0","method":"session/cancel"}`},
		{name: "extension notification", line: `{"jsonrpc":"2.0","method":"_zed/ping","params":{}}`},
		{name: "request sent as notification", line: `{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`},
		{name: "notification without jsonrpc", line: `{"method":"session/cancel","params":{"sessionId":"s"}}`},
		{name: "blank", line: "  \t"},
		{name: "huge, id first", line: bigPrompt("8", huge, false), id: "8", code: -32600, message: fmt.Sprintf("is over the limit of %d bytes", MaxFrameBytes)},
		{name: "huge, id last", line: bigPrompt(`"end"`, huge, true), id: `"end"`, code: -32600, message: "session/prompt request of 11"},
		{name: "huge notification", line: bigPrompt("", huge, false)},
		{name: "huge, not JSON", line: strings.Repeat("x", huge), id: "null", code: -32600, message: "limits.maxMediaBytes"},
		{name: "huge top-level string", line: `{"jsonrpc":"2.0","id":9,"method":"x","big":"` + strings.Repeat("b", huge) + `"}`, id: "9", code: -32600},
		// Framing forwards only what it checked, never the line: the SDK
		// would refuse, or read differently, the members it ignores.
		{name: "cancel with a bad error member", line: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"},"error":1}`, forward: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`},
		{name: "request with result and error", line: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{},"result":1,"error":"x","extra":[1]}`, forward: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		{name: "spaced request", line: ` { "jsonrpc" : "2.0" , "id" : 1 , "method" : "initialize" , "params" : { "a" : 1 } } `, forward: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{ "a" : 1 }}`},
		{name: "escaped key", line: `{"jsonrpc":"2.0","id":1,"\u006dethod":"initialize","params":{}}`, forward: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		{name: "error response", line: `{"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"no","data":{"a":1},"x":2}}`, forward: `{"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"no","data":{"a":1}}}`},
		{name: "response, error not an object", line: `{"jsonrpc":"2.0","id":5,"error":1}`, forward: `{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"the client's response is invalid: error must be an object with an integer code and a string message, not 1"}}`},
		{name: "response, error code not an integer", line: `{"jsonrpc":"2.0","id":"r","error":{"code":1.5,"message":"m"}}`, forward: `{"jsonrpc":"2.0","id":"r","error":{"code":-32600,"message":"the client's response is invalid: error must be an object with an integer code and a string message, not {\"code\":1.5,\"message\":\"m\"}"}}`},
		{name: "response, error without message", line: `{"jsonrpc":"2.0","id":5,"error":{"code":1}}`, forward: `{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"the client's response is invalid: error must be an object with an integer code and a string message, not {\"code\":1}"}}`},
		{name: "response, error null", line: `{"jsonrpc":"2.0","id":5,"error":null}`, forward: `{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"the client's response is invalid: error must be an object with an integer code and a string message, not null"}}`},
		{name: "response, result and error", line: `{"jsonrpc":"2.0","id":5,"result":{},"error":{"code":1,"message":"m"}}`, forward: `{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"the client's response is invalid: it has both result and error"}}`},
		{name: "response, null result", line: `{"jsonrpc":"2.0","id":5,"result":null}`, forward: `{"jsonrpc":"2.0","id":5,"result":null}`},
		{name: "response, id null", line: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}`},
		{name: "response, id object", line: `{"jsonrpc":"2.0","id":{},"result":{}}`},
		// encoding/json matches keys case-insensitively and keeps the last
		// duplicate: such keys are refused, not guessed.
		{name: "Method beside method", line: `{"jsonrpc":"2.0","method":"$/cancel_request","Method":"session/cancel","params":{"sessionId":"s"}}`, id: "null", code: -32600, message: `the key "Method"`},
		{name: "Id null beside id", line: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{},"Id":null}`, id: "1", code: -32600, message: `the key "Id"`},
		{name: "ID alone", line: `{"jsonrpc":"2.0","ID":1,"method":"initialize","params":{}}`, id: "null", code: -32600, message: `the key "ID"`},
		{name: "PARAMS", line: `{"jsonrpc":"2.0","id":2,"method":"initialize","PARAMS":{}}`, id: "2", code: -32600, message: `"PARAMS"`},
		{name: "long s folds to s", line: `{"j\u017Fonrpc":"2.0","id":2,"method":"initialize","params":{}}`, id: "2", code: -32600, message: `"jſonrpc"`},
		{name: "duplicate method", line: `{"jsonrpc":"2.0","id":3,"method":"initialize","method":"session/list","params":{}}`, id: "3", code: -32600, message: `the key "method"`},
		{name: "duplicate params", line: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"a"},"params":{"sessionId":"b"}}`, id: "null", code: -32600, message: `"params"`},
		{name: "response with Result", line: `{"jsonrpc":"2.0","id":7,"result":{},"Result":1}`, forward: `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"the client's response is invalid: the key \"Result\" is a duplicate of, or differs only in case from, a JSON-RPC member (jsonrpc, id, method, params, result, error)"}}`},
		{name: "other keys in any case", line: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{},"Meta":1,"meta":2,"x":1,"x":2}`, forward: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		{name: "session/new with McpServers", line: `{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/","mcpServers":[],"McpServers":[{"name":"x","command":"y"}]}}`, id: "4", code: -32600, message: `params."McpServers"`},
		{name: "session/load with _Meta", line: `{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"cwd":"/","sessionId":"s","_Meta":{"acp-agent/rawMcpServers":[]}}}`, id: "4", code: -32600, message: `params."_Meta"`},
		{name: "session/resume with two _meta", line: `{"jsonrpc":"2.0","id":4,"method":"session/resume","params":{"_meta":{},"_meta":{}}}`, id: "4", code: -32600, message: `params."_meta"`},
		// A session method without its sessionId, and a prompt block of a
		// type ACP does not have, are invalid params naming the field.
		{name: "prompt without sessionId", line: `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"prompt":[]}}`, id: "5", code: -32602, message: `session/prompt: params.sessionId is required`},
		{name: "close with empty sessionId", line: `{"jsonrpc":"2.0","id":5,"method":"session/close","params":{"sessionId":""}}`, id: "5", code: -32602, message: `params.sessionId must be a non-empty string, not ""`},
		{name: "load with numeric sessionId", line: `{"jsonrpc":"2.0","id":5,"method":"session/load","params":{"sessionId":7,"cwd":"/","mcpServers":[]}}`, id: "5", code: -32602, message: `params.sessionId must be a non-empty string, not 7`},
		{name: "prompt block of unknown type", line: `{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"},{"type":"video","uri":"x"}]}}`, id: "6", code: -32602, message: `params.prompt[1] has type "video"`},
		{name: "prompt block without type", line: `{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"text":"hi"}]}}`, id: "6", code: -32602, message: `params.prompt[0] has no type`},
		{name: "huge response", line: hugeResponse, forward: fmt.Sprintf(
			`{"jsonrpc":"2.0","id":12,"error":{"code":-32600,"message":"the client's response of %d bytes is over the limit of %d bytes per JSON-RPC message"}}`, len(hugeResponse), MaxFrameBytes)},
	}
	const next = `{"jsonrpc":"2.0","id":99,"method":"initialize","params":{}}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, replies := readFramed(t, tt.line+"\n"+next+"\n")
			want := next + "\n"
			if tt.forward != "" {
				want = tt.forward + "\n" + want
			}
			if out != want {
				t.Errorf("forwarded:\n%.300s\nwant:\n%.300s", out, want)
			}
			if tt.id == "" {
				if len(replies) != 0 {
					t.Errorf("replies = %+v, want none", replies)
				}
				return
			}
			if len(replies) != 1 {
				t.Fatalf("replies = %+v, want one", replies)
			}
			r := replies[0]
			if string(r.ID) != tt.id || r.Error.Code != tt.code || !strings.Contains(r.Error.Message, tt.message) {
				t.Errorf("reply = id %s, %d %q; want id %s, %d, message with %q", r.ID, r.Error.Code, r.Error.Message, tt.id, tt.code, tt.message)
			}
		})
	}
}

func TestFraming_TooLargeGivesSizeAndLimit(t *testing.T) {
	line := bigPrompt("1", MaxFrameBytes, false)
	_, replies := readFramed(t, line)
	if len(replies) != 1 {
		t.Fatalf("replies = %+v", replies)
	}
	d := replies[0].Error.Data
	if d["bytes"] != float64(len(line)) || d["limit"] != float64(MaxFrameBytes) || d["maxMediaBytes"] != float64(5<<20) {
		t.Errorf("data = %v, want bytes %d, limit %d, maxMediaBytes %d", d, len(line), MaxFrameBytes, 5<<20)
	}
}

func TestFraming_LargestFramePasses(t *testing.T) {
	line := bigPrompt("1", 0, false)
	line = bigPrompt("1", MaxFrameBytes-len(line), false)
	if len(line) != MaxFrameBytes {
		t.Fatalf("line of %d bytes", len(line))
	}
	out, replies := readFramed(t, line+"\r\n")
	if out != line+"\n" || len(replies) != 0 {
		t.Errorf("a line of MaxFrameBytes: forwarded %d bytes, replies %+v", len(out), replies)
	}
}

func TestFraming_MediaLimitFits(t *testing.T) {
	line := bigPrompt("1", (MaxPromptMediaBytes+2)/3*4, false)
	if len(line) > MaxFrameBytes-60<<10 {
		t.Errorf("a prompt with one image of MaxPromptMediaBytes is %d bytes, too close to MaxFrameBytes", len(line))
	}
}

func TestFraming_CancelBurstCoalesced(t *testing.T) {
	var in strings.Builder
	cancel := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`
	for range 5000 {
		in.WriteString(cancel + "\n")
	}
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}` + "\n")
	in.WriteString(cancel + "\n")
	in.WriteString(cancel + "\n")
	out, replies := readFramed(t, in.String())
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{cancel, `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`, cancel}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") || len(replies) != 0 {
		t.Errorf("forwarded %d lines:\n%.500s\nwant the first cancel, the prompt, one cancel after it", len(lines), out)
	}
}

// TestFraming_CancelBackPressure: cancels of distinct sessions are forwarded
// up to maxQueuedCancels; then reading waits until Agent.Cancel has handled
// one, so the SDK's queue of 1024 can never overflow.
func TestFraming_CancelBackPressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var in strings.Builder
		const n = maxQueuedCancels + 50
		for i := range n {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s%d"}}`+"\n", i)
		}
		f := newFraming(NewLineStream(strings.NewReader(in.String()), nil), started(), &frameSink{}, nil, nil, 0)
		var mu sync.Mutex
		var got []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := bufioLines(f)
			for line := range r {
				mu.Lock()
				got = append(got, line)
				mu.Unlock()
			}
		}()
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(got)
		}
		synctest.Wait()
		if c := count(); c != maxQueuedCancels {
			t.Fatalf("forwarded %d cancels before any was handled, want %d", c, maxQueuedCancels)
		}
		f.order.cancelHandled("s0")
		synctest.Wait()
		if c := count(); c != maxQueuedCancels+1 {
			t.Fatalf("after one handled: forwarded %d, want %d", c, maxQueuedCancels+1)
		}
		f.order.cancelHandled("s100") // s1..s99 were refused by the SDK: done too
		synctest.Wait()
		if c := count(); c != n {
			t.Fatalf("after s100 handled: forwarded %d, want %d", c, n)
		}
		<-done
		f.close()
	})
}

// gateSink is a client that reads one frame from stdout each time gate
// gets a value.
type gateSink struct {
	gate chan struct{}
	frameSink
}

func (s *gateSink) Write(p []byte) (int, error) {
	<-s.gate
	return s.frameSink.Write(p)
}

// warnings records the messages of the warnings logged.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}

func (w *warnings) count(part string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.msgs {
		if strings.Contains(m, part) {
			n++
		}
	}
	return n
}

// TestFraming_RepliesFullWarnsOnce: when the client does not read stdout,
// the reader waits for room among the queued error responses and says so
// once per episode, not once per line.
func TestFraming_RepliesFullWarnsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = maxQueuedReplies + 20
		in := strings.Repeat("not json\n", n)
		sink := &gateSink{gate: make(chan struct{})}
		logs := &warnings{}
		f := newFraming(NewLineStream(strings.NewReader(in), nil), started(), sink, nil, slog.New(logs), 0)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = io.ReadAll(f)
		}()
		synctest.Wait() // the writer holds one reply, the queue is full
		const warning = "not being read from stdout"
		if c := logs.count(warning); c != 1 {
			t.Fatalf("%d warnings while the queue is full, want 1", c)
		}
		for range 10 { // the client reads one frame at a time: still full
			sink.gate <- struct{}{}
			synctest.Wait()
		}
		if c := logs.count(warning); c != 1 {
			t.Fatalf("%d warnings after reading 10 frames one by one, want 1", c)
		}
		close(sink.gate)
		<-done
		f.close()
		if got := len(sink.all()); got != n {
			t.Errorf("%d replies written, want %d", got, n)
		}
	})
}

// bufioLines yields the lines read from r until EOF.
func bufioLines(r io.Reader) func(func(string) bool) {
	return func(yield func(string) bool) {
		data := make([]byte, 0, 1<<16)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			data = append(data, buf[:n]...)
			for {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					break
				}
				if !yield(string(data[:i])) {
					return
				}
				data = data[i+1:]
			}
			if err != nil {
				return
			}
		}
	}
}

// BenchmarkFraming measures the framing layer on a small request and on a
// prompt with an image of the default limits.maxMediaBytes.
func BenchmarkFraming(b *testing.B) {
	for _, bc := range []struct {
		name string
		line string
	}{
		{"small", `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`},
		{"image5MiB", bigPrompt("1", (5<<20+2)/3*4, false)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFraming(NewLineStream(strings.NewReader(""), nil), started(), &frameSink{}, nil, nil, 0)
			defer f.close()
			b.SetBytes(int64(len(bc.line)))
			for b.Loop() {
				if out := f.frame([]byte(bc.line)); len(out) != len(bc.line)+1 {
					b.Fatal("not forwarded")
				}
			}
		})
	}
}
