package jsonrpcid

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

func TestExact(t *testing.T) {
	for raw, want := range map[string]bool{
		`"a"`: true, `""`: true, `7`: true, `0`: true, `-0`: true, `-1`: true, `1e3`: true, `1E+3`: true, `0.5e1`: true,
		`10.0`: true, `1152921504606846976`: true, `9007199254740992`: true, `-9223372036854775808`: true,
		`1.5`: false, `1e-1`: false, `9007199254740993`: false, `9223372036854775807`: false, `9223372036854775808`: false,
		`1e19`: false, `1e400`: false, `-1e400`: false, `1e-400`: false, `0e999999999999999999999`: true,
		`1e999999999999999999999`: false, `null`: false, `true`: false, `{}`: false, `[1]`: false, ``: false,
		`0.` + strings.Repeat("0", 500) + `1e501`: true, `1` + strings.Repeat("0", 500) + `e-500`: true,
	} {
		if got := Exact(json.RawMessage(raw)) != nil; got != want {
			t.Errorf("Exact(%.40s) = %v, want %v", raw, got, want)
		}
	}
}

// FuzzExact checks Exact against exact rational arithmetic: a number is
// accepted exactly when its value is an integer a float64 holds, in
// int64's range.
func FuzzExact(f *testing.F) {
	for _, s := range []string{"7", "-1", "1.5", "1e400", "9007199254740993", "0.5e1", "-0", "1e19", "12.50e-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n json.Number
		if len(s) > 64 || json.Unmarshal([]byte(s), &n) != nil || s != strings.TrimSpace(s) || !strings.ContainsAny(s[:1], "-0123456789") {
			return
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return
		}
		want := false
		if r.IsInt() && r.Num().IsInt64() {
			v := r.Num().Int64()
			want = float64(v) < 1<<63 && int64(float64(v)) == v
		}
		if got := Exact(json.RawMessage(s)) != nil; got != want {
			t.Errorf("Exact(%s) = %v, want %v", s, got, want)
		}
	})
}
