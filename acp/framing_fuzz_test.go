package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[{"name":"fs","command":"node"}],"_meta":{"acp-agent/rawMcpServers":1}}}`,
	`{"jsonrpc":"2.0","id":3,"method":"session/list"}`,
	`{"jsonrpc":"2.0","id":null,"method":"initialize","params":{}}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`,
	`{"jsonrpc":"2.0","id":[1],"method":"x"}`,
	`{"id":4,"method":"initialize","params":{}}`,
	`{"jsonrpc":"2.0","id":"cut","method":"session/prompt","params":{"sessionId":`,
	`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
	`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}` + "\n" + `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
	`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`,
	`{"jsonrpc":"2.0","id":0,"result":{}}`,
	`{"jsonrpc":"2.0","method":"_x","params":{}}`,
	"not json\r\n\n  \n",
	`"s"`, `null`, `{}`, `{"id":1e999,"method":"x","jsonrpc":"2.0"}`,
}

// FuzzFraming: whatever the client sends, the framing layer does not panic,
// the SDK gets only JSON objects, one a line, and the client only JSON-RPC
// error responses.
func FuzzFraming(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sink := &frameSink{}
		fr := newFraming(strings.NewReader(in), started(), sink, nil, 0)
		out, err := io.ReadAll(fr)
		fr.close()
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > 0 && out[len(out)-1] != '\n' {
			t.Fatalf("output does not end a line: %q", out)
		}
		for line := range bytes.SplitSeq(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
			if len(out) == 0 {
				break
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(line, &m); err != nil || m == nil {
				t.Fatalf("the SDK got %q: %v", line, err)
			}
		}
		for _, r := range parseReplies(t, sink.all()) {
			if r.Error.Code != codeParseError && r.Error.Code != codeInvalidRequest {
				t.Fatalf("reply %+v", r)
			}
		}
	})
}

// FuzzSkeleton: the skeleton of a JSON object is valid JSON with the same
// id and method, however the text is cut into pieces.
func FuzzSkeleton(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint8(3))
	}
	f.Add(`{"a":"`+strings.Repeat(`x\"`, 2000)+`","id":"end","method":"m"}`, uint8(7))
	f.Fuzz(func(t *testing.T, in string, cut uint8) {
		var sk skeleton
		step := int(cut) + 1
		for i := 0; i < len(in); i += step {
			sk.write([]byte(in[i:min(i+step, len(in))]))
		}
		if sk.n != len(in) {
			t.Fatalf("n = %d, want %d", sk.n, len(in))
		}
		var want map[string]json.RawMessage
		if json.Unmarshal([]byte(in), &want) != nil || want == nil || len(sk.out) >= skeletonMax {
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(sk.out, &got); err != nil {
			t.Fatalf("skeleton %q of %q: %v", sk.out, in, err)
		}
		for _, k := range []string{"id", "method"} {
			w, g := want[k], got[k]
			if len(w) <= skeletonStrMax && validID(w) != nil && string(validID(w)) != string(validID(g)) {
				t.Fatalf("%s: skeleton has %s, want %s", k, g, w)
			}
		}
	})
}
