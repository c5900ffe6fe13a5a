package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// gcFloor leaves a GOGC set in the environment alone; otherwise, with a
// live heap well under its headroom, it raises GOGC above the default, so
// that the heap may grow by about the headroom between collections.
func TestGCFloor(t *testing.T) {
	t.Setenv("GOGC", "100")
	debug.SetGCPercent(100)
	gcFloor(1 << 30)
	if prev := debug.SetGCPercent(100); prev != 100 {
		t.Errorf("with GOGC=100 in the environment: GOGC %d, want it left at 100", prev)
	}
	t.Setenv("GOGC", "")
	runtime.GC()     // the live heap is known after a collection
	gcFloor(1 << 30) // a test binary's live heap is a few MiB
	if prev := debug.SetGCPercent(100); prev <= 100 {
		t.Errorf("GOGC %d with a 1 GiB headroom, want more than 100", prev)
	}
}
