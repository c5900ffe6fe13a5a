package main

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The idle release (releaseWhenIdle): every idleCheck, an agent that
// allocated less than idleAllocBytes since the last check, and holds at
// least idleFreeBytes of free heap it has not returned, returns it.
const (
	idleCheck      = 5 * time.Second
	idleAllocBytes = 1 << 20 // a few /call turns' worth: the agent's own timers and logs stay below it
	idleFreeBytes  = 4 << 20
)

// releaseWhenIdle returns the Go heap's free pages to the OS
// (debug.FreeOSMemory: a collection, then every free page released) once
// the agent has gone idle, checking every period. Go keeps freed pages
// resident up to about the heap goal, which gcFloor and GOGC set at twice
// the live heap or more: an agent that opened many sessions and went idle
// kept RSS at 2.5 times its live heap. A busy agent is left alone (the
// release costs a collection), as is an idle one with less than
// idleFreeBytes to give back; so it runs once per idle spell. stop ends
// its goroutine (main never does: it lives as long as the process).
func releaseWhenIdle(period time.Duration) (stop func()) {
	t := time.NewTicker(period)
	done := make(chan struct{})
	go func() {
		samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
		metrics.Read(samples)
		last := samples[0].Value.Uint64()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(samples)
			allocs, free := samples[0].Value.Uint64(), samples[1].Value.Uint64()
			idle := allocs-last < idleAllocBytes
			last = allocs
			if idle && free >= idleFreeBytes {
				debug.FreeOSMemory()
			}
		}
	}()
	return func() {
		t.Stop()
		close(done)
	}
}
