package warmstack

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// goid is the calling goroutine's id, from its stack trace's first line.
func goid() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

func TestDo_RunsOnOneWarmGoroutine(t *testing.T) {
	p := New(1, time.Hour)
	caller := goid()
	var first, second string
	p.Do(func() { first = goid() })
	if first == "" || first == caller {
		t.Fatalf("Do ran f on goroutine %q, the caller is %q: want another", first, caller)
	}
	if got := p.Idle(); got != 1 {
		t.Fatalf("after one Do: Idle() = %d, want 1", got)
	}
	// The goroutine may not be waiting yet: then a second one runs f.
	for range 100 {
		if p.Do(func() { second = goid() }); second == first {
			return
		}
	}
	t.Fatalf("100 calls in a row ran on goroutines other than the first one (%s), last %s", first, second)
}

func TestDo_ConcurrentCallsAllRunAndAtMostMaxIdleStay(t *testing.T) {
	const n, maxIdle = 8, 2
	p := New(maxIdle, time.Hour)
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	var calls sync.WaitGroup
	for range n {
		calls.Go(func() {
			p.Do(func() {
				started.Done()
				<-release // every call blocks until all n have started
			})
		})
	}
	started.Wait()
	close(release)
	calls.Wait()
	if got := p.Idle(); got != maxIdle {
		t.Fatalf("after %d concurrent calls: Idle() = %d, want maxIdle %d", n, got, maxIdle)
	}
}

func TestGo_RunsOnAWarmGoroutineWithoutWaiting(t *testing.T) {
	p := New(1, time.Hour)
	var first string
	p.Do(func() { first = goid() })
	release, ran := make(chan struct{}), make(chan string)
	for range 100 { // the goroutine may not be waiting yet
		p.Go(func() { <-release; ran <- goid() })
		release <- struct{}{} // Go returned before f could run this far
		if got := <-ran; got == first {
			return
		}
	}
	t.Fatalf("100 calls of Go ran on goroutines other than the one Do used (%s)", first)
}

func TestDo_IdleGoroutineExitsAfterTimeout(t *testing.T) {
	p := New(4, time.Millisecond)
	p.Do(func() {})
	testutil.WaitFor(t, 10*time.Second, func() bool { return p.Idle() == 0 }, "an idle goroutine still waits long after its timeout")
	ran := false
	p.Do(func() { ran = true }) // a new goroutine takes the call
	if !ran {
		t.Fatal("Do after the idle goroutine exited did not run f")
	}
}

func TestClose_EndsIdleGoroutinesAndLaterCallsStillRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, time.Hour)
		p.Do(func() {})
		p.Close()
		synctest.Wait() // the idle goroutine has exited: the bubble would not end with it waiting
		if got := p.Idle(); got != 0 {
			t.Fatalf("after Close: Idle() = %d, want 0", got)
		}
		ran := false
		p.Do(func() { ran = true })
		if !ran {
			t.Fatal("Do after Close did not run f")
		}
		if got := p.Idle(); got != 0 {
			t.Fatalf("a call after Close left %d idle goroutines, want 0", got)
		}
		p.Close() // again: nothing
	})
}

// deep recurses depth frames of about 1 KiB each: a call that needs a
// stack of depth KiB.
//
//go:noinline
func deep(depth int) byte {
	var pad [1000]byte
	pad[depth%len(pad)] = byte(depth)
	if depth == 0 {
		return pad[0]
	}
	return deep(depth-1) + pad[depth%len(pad)]
}

// BenchmarkDeepCall is a call needing a 64 KiB stack, on a new goroutine
// each time (as per request in a JSON-RPC engine) and on a Pool's.
func BenchmarkDeepCall(b *testing.B) {
	b.Run("new-goroutine", func(b *testing.B) {
		for b.Loop() {
			done := make(chan struct{})
			go func() { deep(64); close(done) }()
			<-done
		}
	})
	b.Run("pool", func(b *testing.B) {
		p := New(1, time.Minute)
		for b.Loop() {
			p.Do(func() { deep(64) })
		}
	})
}
