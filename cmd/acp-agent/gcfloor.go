package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// gcHeadroom is the least the Go heap may grow between collections (see
// gcFloor): 16 MiB, against the 4 MiB to 10 MiB an agent with a few
// sessions has live.
const gcHeadroom = 16 << 20

// gcFloor makes the collector let the heap grow by at least headroom
// bytes between collections, and by GOGC's default 100 % of the live heap
// once that is more: after each collection it sets GOGC to
// max(100, 100 * headroom / live). An agent allocates about 160 KiB per
// tool call, most of it go-sdk's decoder buffers (32 KiB per message), so
// with a small live heap the default collected every few dozen calls, a
// quarter of the agent's CPU on a /call turn; many sessions (a large live
// heap) keep the default's memory bound. The live heap is known from the
// first collection on (the runtime's default until then). A GOGC set in
// the environment is left alone.
func gcFloor(headroom uint64) {
	if os.Getenv("GOGC") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	last := 100
	var tune func()
	tune = func() {
		metrics.Read(sample)
		percent := 100
		if live := sample[0].Value.Uint64(); live > 0 && live < headroom {
			percent = int(min(headroom*100/live, 1000))
		}
		if percent != last {
			last = percent
			debug.SetGCPercent(percent)
		}
		armAfterGC(tune)
	}
	tune()
}

// gcSentinel is the object whose finalizer runs once per collection
// (armAfterGC); it holds a pointer so the tiny allocator does not batch it
// with others.
type gcSentinel struct{ _ *byte }

// armAfterGC runs f on the finalizer goroutine after the next collection.
func armAfterGC(f func()) {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) { f() })
}
