package fakemodel

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestStripMember(t *testing.T) {
	for _, tc := range []struct{ in, rest, value string }{
		{`{"cache_control":{"type":"ephemeral"},"type":"text","text":"a"}`, `{"type":"text","text":"a"}`, `{"type":"ephemeral"}`},
		{`{"text":"a","cache_control":{"type":"ephemeral"},"type":"text"}`, `{"text":"a","type":"text"}`, `{"type":"ephemeral"}`},
		{`{"text":"a","cache_control":null}`, `{"text":"a"}`, `null`},
		{`{"cache_control":{}}`, `{}`, `{}`},
		{`{"text":"\"cache_control\":1","x":{"cache_control":1}}`, `{"text":"\"cache_control\":1","x":{"cache_control":1}}`, ``},
		{`"cache_control"`, `"cache_control"`, ``},
	} {
		rest, value := stripMember([]byte(tc.in), "cache_control")
		if string(rest) != tc.rest || string(value) != tc.value {
			t.Errorf("stripMember(%s) = %s, %s; want %s, %s", tc.in, rest, value, tc.rest, tc.value)
		}
	}
}

// FuzzStripMember checks that stripping a member of a compact object leaves
// the other members, in order, as valid compact JSON.
func FuzzStripMember(f *testing.F) {
	f.Add(`{"a":1,"cache_control":{"type":"ephemeral"},"b":[1,2]}`)
	f.Add(`{"cache_control":1}`)
	f.Add(`[1]`)
	f.Fuzz(func(t *testing.T, in string) {
		var c bytes.Buffer
		if json.Compact(&c, []byte(in)) != nil {
			return
		}
		obj := c.Bytes()
		rest, value := stripMember(obj, "cache_control")
		var m map[string]json.RawMessage
		if json.Unmarshal(obj, &m) != nil || bytes.Count(obj, []byte(`"cache_control":`)) > 1 {
			return // not an object, or a duplicate or nested key: anything goes
		}
		if !json.Valid(rest) {
			t.Fatalf("stripMember(%s) = %s, not JSON", obj, rest)
		}
		_, had := m["cache_control"]
		delete(m, "cache_control")
		var got map[string]json.RawMessage
		if err := json.Unmarshal(rest, &got); err != nil || len(got) != len(m) || had != (value != nil) {
			t.Fatalf("stripMember(%s) = %s, %s", obj, rest, value)
		}
	})
}
