package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// freeHeap is the free heap not yet returned to the OS, in bytes.
func freeHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

var sink [][]byte

// An idle process's free heap goes back to the OS.
func TestReleaseWhenIdle(t *testing.T) {
	for range 64 { // 64 MiB, then garbage: free heap once collected
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	runtime.GC()
	if free := freeHeap(); free < idleFreeBytes {
		t.Fatalf("only %d bytes of free heap after freeing 64 MiB: the test has nothing to see released", free)
	}
	stop := releaseWhenIdle(10 * time.Millisecond)
	defer stop()
	testutil.WaitFor(t, 30*time.Second, func() bool { return freeHeap() < idleFreeBytes },
		"30 s idle, the process still holds %d MiB or more of free heap", idleFreeBytes>>20)
}
