// Package testutil holds the helpers acp-agent's tests share: polling with a
// deadline, process checks and loopback listeners. It is for tests only.
//
// # Waiting
//
// [Eventually] polls a condition until it holds or a deadline passes, and
// [WaitFor] fails the test when it does not. Deadlines are generous: the
// tests run on loaded machines, and a deadline only bounds a failing test;
// nothing asserts on how long a wait took.
//
// # Processes
//
// [Alive] reports whether a process exists and is not a zombie; [WaitGone]
// waits until it does not.
//
// # Listeners
//
// [FreePort] finds a free loopback port and [WaitListening] waits until an
// address accepts TCP connections.
package testutil

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// Poll is how often Eventually checks its condition.
const Poll = 10 * time.Millisecond

// Eventually calls cond every Poll until it returns true, and reports
// whether it did before d passed. cond is called at least once.
func Eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(Poll)
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

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// WaitListening reports whether addr ("host:port") accepted a TCP
// connection before d passed; each attempt is bounded by a second.
func WaitListening(addr string, d time.Duration) bool {
	return Eventually(d, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}
