package acp

import (
	"bytes"
	"testing"
)

// TestOutWatcher_WakesOnTheSessionNewResponseOnly: a notification or a
// response that merely mentions the sessionId does not count as the
// session/new response; the response whose result names it does.
func TestOutWatcher_WakesOnTheSessionNewResponseOnly(t *testing.T) {
	var out bytes.Buffer
	o := newOutWatcher(&out)
	ch := o.afterResponse("sess_A")
	fired := func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	for _, frame := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_A","update":{}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","_meta":{"note":"\"sess_A\" was mentioned"}}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"x","data":{"sessionId":"sess_A"}}}`,
		`{"jsonrpc":"2.0","id":5,"result":{"sessionId":"sess_AB"}}`,
	} {
		if _, err := o.Write([]byte(frame + "\n")); err != nil {
			t.Fatal(err)
		}
		if fired() {
			t.Fatalf("woke on %s", frame)
		}
	}
	if _, err := o.Write([]byte(`{"jsonrpc":"2.0","id":6,"result":{"configOptions":[],"sessionId":"sess_A"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if !fired() {
		t.Fatal("did not wake on the session/new response")
	}
}
