// Package testutil holds the helpers acp-agent's tests share: waiting on
// events, polling with a deadline, process checks, a buffer safe for
// concurrent use and pseudo-terminals. It is for tests only.
//
// # Waiting
//
// A test waits on the event it expects, never for a time. What happens in
// the test's own process has an event: a channel the code closes, a
// callback or Observer, a notification the test's client receives, a log
// line written to a [Buffer] ([Buffer.Await]), a change its own fakes
// announce through a [Signal] ([Signal.Await]); or the test runs in a
// testing/synctest bubble and waits with synctest.Wait. Only what happens
// outside the process (a child process exiting, a file another process
// writes, the kernel's state) has none: [Eventually] polls a condition
// every [Poll] until it holds or a deadline passes, and [WaitFor] fails
// the test when it does not. Deadlines are generous: the tests run on
// loaded machines, and a deadline only bounds a failing test; nothing
// asserts on how long a wait took.
//
// # Processes
//
// [Alive] reports whether a process exists and is not a zombie; [WaitGone]
// waits until it does not.
//
// # Ports
//
// There is no helper that picks a free port: a test server listens on port
// 0 and reports the port it got (a log line, or the listener itself), since
// a port found free and then closed can be taken by anyone before it is
// listened on again. [RefusedAddr] is an address where connections are
// refused, held for the test.
package testutil

import (
	"fmt"
	"testing"
	"time"
)

// Poll is how often Eventually checks its condition.
const Poll = 10 * time.Millisecond

// Eventually calls cond every Poll until it returns true, and reports
// whether it did before d passed. cond is called at least once. It is for
// conditions outside the process (see the package doc): in-process state
// has an event to wait on.
func Eventually(d time.Duration, cond func() bool) bool {
	return EventuallyEvery(d, Poll, cond)
}

// EventuallyEvery is Eventually checking every interval rather than every
// Poll: for a condition whose check costs the process observed enough that
// Poll would change what it observes (its allocations, say).
func EventuallyEvery(d, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// WaitFor waits like Eventually and, when cond never holds within d, fails
// the test at once with the message format, args and the time waited.
func WaitFor(t testing.TB, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Eventually(d, cond) {
		t.Fatalf("%s (waited %v)", fmt.Sprintf(format, args...), d)
	}
}
