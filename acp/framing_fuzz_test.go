package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/jsonrpcid"
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
	`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"},"error":1}`,
	`{"jsonrpc":"2.0","method":"$/cancel_request","Method":"session/cancel","params":{"sessionId":"s"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{},"Id":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
	`{"jsonrpc":"2.0","id":5,"error":{"code":1.5,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"m"}}`,
	`"s"`, `null`, `{}`, `{"id":1e999,"method":"x","jsonrpc":"2.0"}`,
}

// sdkMessage is how acp-go-sdk v0.13.5 decodes each line it reads
// (anyMessage in its connection.go), with encoding/json.
type sdkMessage struct {
	JSONRPC string               `json:"jsonrpc"`
	ID      *json.RawMessage     `json:"id,omitempty"`
	Method  string               `json:"method,omitempty"`
	Params  json.RawMessage      `json:"params,omitempty"`
	Result  json.RawMessage      `json:"result,omitempty"`
	Error   *acpsdk.RequestError `json:"error,omitempty"`
}

// FuzzFraming: whatever the client sends, the framing layer does not panic;
// the SDK gets only JSON objects, one a line, that its own decoding reads
// as the same method and id framing checked; every session/cancel framing
// counts as pending reaches Agent.Cancel (so reading never waits forever);
// and the client gets only JSON-RPC error responses.
func FuzzFraming(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sink := &frameSink{}
		fr := newFraming(NewLineStream(strings.NewReader(in), nil), started(), sink, nil, nil, 0)
		defer fr.close()
		data := make([]byte, 0, len(in)+64)
		buf := make([]byte, 512)
		for {
			n, err := fr.Read(buf)
			data = append(data, buf[:n]...)
			for {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					break
				}
				checkForwarded(t, fr, data[:i])
				data = data[i+1:]
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(data) > 0 {
			t.Fatalf("output does not end a line: %q", data)
		}
		for _, r := range parseReplies(t, sink.all()) {
			if r.Error.Code != codeParseError && r.Error.Code != codeInvalidRequest {
				t.Fatalf("reply %+v", r)
			}
		}
	})
}

// checkForwarded checks one line the SDK reads, and plays Agent.Cancel for
// a session/cancel the SDK would hand to it.
func checkForwarded(t *testing.T, fr *framing, line []byte) {
	t.Helper()
	members, bad, err := decodeMembers(line, jsonrpcKeys[:])
	if err != nil || bad != "" {
		t.Fatalf("the SDK got %q: %v, ambiguous key %q", line, err, bad)
	}
	var sdk sdkMessage
	if err := json.Unmarshal(line, &sdk); err != nil {
		t.Fatalf("the SDK refuses %q: %v", line, err)
	}
	var method string
	if raw, ok := members["method"]; ok {
		if err := json.Unmarshal(raw, &method); err != nil || method == "" {
			t.Fatalf("forwarded method %s in %q", raw, line)
		}
	}
	id, hasID := members["id"]
	switch {
	case sdk.Method != method:
		t.Fatalf("the SDK reads method %q in %q, framing %q", sdk.Method, line, method)
	case hasID != (sdk.ID != nil) || hasID && string(*sdk.ID) != string(id) || hasID && jsonrpcid.Valid(id) == nil:
		t.Fatalf("the SDK reads id %v in %q, framing %s", sdk.ID, line, id)
	case method == "" && (sdk.Result == nil) == (sdk.Error == nil):
		t.Fatalf("response %q has not exactly one of result and error", line)
	}
	if sdk.ID == nil && sdk.Method == acpsdk.AgentMethodSessionCancel {
		var p acpsdk.CancelNotification
		if json.Unmarshal(sdk.Params, &p) == nil && p.Validate() == nil {
			fr.order.cancelHandled(string(p.SessionId))
		}
	}
	fr.order.mu.Lock()
	pending := len(fr.order.pending)
	fr.order.mu.Unlock()
	if pending != 0 {
		t.Fatalf("after %q: %d cancels pending that the SDK never hands to Agent.Cancel", line, pending)
	}
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
			if len(w) <= skeletonStrMax && jsonrpcid.Valid(w) != nil && string(jsonrpcid.Valid(w)) != string(jsonrpcid.Valid(g)) {
				t.Fatalf("%s: skeleton has %s, want %s", k, g, w)
			}
		}
	})
}

// FuzzDecodeMembers: decodeMembers reads every line as encoding/json's
// Decoder reads it, token by token (decodeMembersReference): the same
// members, byte for byte, the same ambiguous key, and an error exactly
// when the Decoder has one.
func FuzzDecodeMembers(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	for _, s := range []string{
		`{"method":"a","METHOD":"b"}`, `{"id":1,"id":2}`, `{"\u006dethod":"x","method":"y"}`,
		`{"params":{"a":[1,{"b":"}"}]},"id":"x"}`, `{"Id":1}`, `{"ſ":1}`, "{\"meth\xffod\":1}",
		`{"a":[]}`, `{"a":{}}`, `{}`, `[1]`, `"x"`, `{"a":1}{"b":2}`, `{"a":1} x`, `{"id":1,}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		msg, bad, err := decodeMembers([]byte(line), jsonrpcKeys[:])
		want, wantBad, wantErr := decodeMembersReference([]byte(line), jsonrpcKeys[:])
		if (err != nil) != (wantErr != nil) || errors.Is(err, errNotObject) != errors.Is(wantErr, errNotObject) {
			t.Fatalf("%q: error %v, the Decoder's %v", line, err, wantErr)
		}
		if err != nil {
			return
		}
		if bad != wantBad || len(msg) != len(want) {
			t.Fatalf("%q: %d members, ambiguous %q; the Decoder's %d, %q", line, len(msg), bad, len(want), wantBad)
		}
		for k, v := range want {
			if got, ok := msg[k]; !ok || !bytes.Equal(got, v) {
				t.Fatalf("%q: member %q is %q, the Decoder's %q", line, k, got, v)
			}
		}
	})
}

// decodeMembersReference is decodeMembers built on encoding/json's
// Decoder, token by token (what framing ran before, at four times the
// cost): the oracle of FuzzDecodeMembers.
func decodeMembersReference(b []byte, keys []string) (msg map[string]json.RawMessage, bad string, err error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if !json.Valid(b) {
			return nil, "", json.Unmarshal(b, new(any))
		}
		return nil, "", errNotObject
	}
	msg = make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", err
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, "", err
		}
		if bad == "" {
			for _, k := range keys {
				_, dup := msg[k]
				if key == k && dup || key != k && strings.EqualFold(key, k) {
					bad = key
				}
			}
		}
		msg[key] = value
	}
	if _, err := dec.Token(); err != nil {
		return nil, "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("invalid character after top-level value")
		}
		return nil, "", err
	}
	return msg, bad, nil
}
