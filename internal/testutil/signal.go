package testutil

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Signal wakes a test that waits for state its own code changes: the fake,
// callback or handler that changes the state calls Notify, and Await
// checks the test's condition again after each Notify, instead of every
// Poll. The zero value is ready to use; a Signal is safe for concurrent
// use and must not be copied after first use.
type Signal struct {
	mu sync.Mutex
	ch chan struct{} // closed by the next Notify; nil until a waiter asks for one
}

// Notify wakes every Await under way and closes the channels C returned.
// It never blocks.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// C returns a channel closed at the next Notify, for a select that waits on
// other channels too. Take it before checking the condition: a Notify
// after the check still closes it, so no change is missed.
func (s *Signal) C() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Await waits until cond holds, checking it at once and after each Notify,
// and reports whether it held before d passed. cond runs on the caller's
// goroutine. Inside a testing/synctest bubble d is fake time.
func (s *Signal) Await(d time.Duration, cond func() bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		changed := s.C()
		if cond() {
			return true
		}
		select {
		case <-changed:
		case <-timer.C:
			return cond()
		}
	}
}

// WaitFor waits like Await and, when cond never holds within d, fails the
// test at once with the message format, args and the time waited.
func (s *Signal) WaitFor(t testing.TB, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !s.Await(d, cond) {
		t.Fatalf("%s (waited %v)", fmt.Sprintf(format, args...), d)
	}
}

// Ended reports whether every one of waits returned before d passed: each
// is a call that blocks until something in the process has ended, such as
// an mcp.ServerSession's Wait or a WaitGroup's. Each runs on a goroutine
// of its own, which outlives Ended when its wait never returns.
func Ended(d time.Duration, waits ...func() error) bool {
	done := make(chan struct{}, len(waits))
	for _, wait := range waits {
		go func() {
			_ = wait()
			done <- struct{}{}
		}()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for range waits {
		select {
		case <-done:
		case <-timer.C:
			return false
		}
	}
	return true
}
