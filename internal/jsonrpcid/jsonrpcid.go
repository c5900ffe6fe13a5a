// Package jsonrpcid reads the ids of JSON-RPC 2.0 messages
// (https://www.jsonrpc.org/specification#request_object) that the front
// ends' framing layers answer themselves: a usable id, one that a peer
// reading numbers as doubles gives back unchanged, and the id of a message
// that cannot be read whole.
package jsonrpcid

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
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

// Exact returns raw if it is a valid request id (Valid) that a peer
// reading JSON numbers as IEEE 754 doubles, as go-sdk's jsonrpc2 (an
// integer id is a float64 converted to int64) and JavaScript do, reads
// back as the id it was: a string, or a number whose value is an integer
// that a float64 holds exactly, from -2^63 to below 2^63 (7, -1, 1e3, 0.5e1,
// 2^60); else nil. A fraction (1.5), an integer a float64 rounds (2^53+1),
// and one out of range (1e19, 1e400) would come back as another id, or end
// the peer's reader.
func Exact(raw json.RawMessage) json.RawMessage {
	raw = Valid(raw)
	if raw == nil || raw[0] == '"' {
		return raw
	}
	n, ok := integer(string(raw))
	if !ok {
		return nil
	}
	if f := float64(n); f >= 1<<63 || int64(f) != n {
		return nil
	}
	return raw
}

// integer returns the value of the JSON number s (as Valid accepts it) if
// it is an integer that an int64 holds. It reads the digits and the
// exponent itself, so that a number of any length or exponent costs no
// more than its length.
func integer(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	shift := -len(frac) // the value is digits × 10^shift, times 10^exp
	trimmed := strings.TrimRight(digits, "0")
	shift += len(digits) - len(trimmed)
	digits = trimmed
	if digits == "" {
		return 0, true // zero, whatever its exponent
	}
	if exp != "" {
		// An input is shorter than 2^30 bytes, so beyond ±2^30 the value
		// is below 1 or far beyond int64.
		e, err := strconv.Atoi(exp)
		if err != nil || e < -1<<30 || e > 1<<30 {
			return 0, false
		}
		shift += e
	}
	if shift < 0 || len(digits)+shift > 19 {
		return 0, false // a fraction, or beyond int64
	}
	if neg {
		digits = "-" + digits
	}
	n, err := strconv.ParseInt(digits+strings.Repeat("0", shift), 10, 64)
	return n, err == nil
}
