package lifetime

import (
	"context"
	"testing"
)

// A lifetime cancels what is bound to it when it ends, and what is bound
// after at once; a released context is forgotten, and the caller's values
// pass through.
func TestLifetime_EndCancelsBound(t *testing.T) {
	type key struct{}
	var l Lifetime
	parent := context.WithValue(t.Context(), key{}, "v")
	live, releaseLive := l.Bind(parent)
	defer releaseLive()
	done, releaseDone := l.Bind(parent)
	releaseDone()
	if done.Err() == nil {
		t.Fatal("a released context is not cancelled")
	}
	if n := len(l.cancels); n != 1 {
		t.Fatalf("the lifetime holds %d cancel funcs, want 1 (the released one forgotten)", n)
	}
	if live.Err() != nil || live.Value(key{}) != "v" {
		t.Fatalf("a bound context: err %v, value %v; want live with the caller's value", live.Err(), live.Value(key{}))
	}
	l.End()
	l.End() // idempotent
	if live.Err() == nil {
		t.Fatal("end did not cancel a bound context")
	}
	late, releaseLate := l.Bind(parent)
	defer releaseLate()
	if late.Err() == nil {
		t.Fatal("a context bound after end is live")
	}
}
