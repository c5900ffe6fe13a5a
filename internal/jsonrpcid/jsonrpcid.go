// Package jsonrpcid reads the ids of JSON-RPC 2.0 messages
// (https://www.jsonrpc.org/specification#request_object) that the front
// ends' framing layers answer themselves: a usable id, and the id of a
// message that cannot be read whole.
package jsonrpcid

import (
	"bytes"
	"encoding/json"
)

// Valid returns raw if it is a valid request id (a string or a number),
// else nil.
func Valid(raw json.RawMessage) json.RawMessage {
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

// Readable returns the top-level id of a JSON object that may be invalid
// or cut short, if it can be read before the first fault, else nil.
func Readable(b []byte) json.RawMessage {
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
			return Valid(value)
		}
	}
	return nil
}
