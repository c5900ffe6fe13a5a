package testutil

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads: the stderr
// of a child process or the output of a slog handler that a test reads while
// others write. A test waits for what is written with Await or WaitFor,
// which check the contents after each Write. The zero value is an empty
// buffer; a Buffer must not be copied after first use.
type Buffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written Signal // notified after each Write
}

// Write appends p to the buffer and wakes the waiters of Await.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.buf.Write(p)
	b.mu.Unlock()
	b.written.Notify()
	return n, err
}

// Written returns a channel closed at the next Write (see [Signal.C]), for
// a select that waits on other channels too, such as a process's exit.
func (b *Buffer) Written() <-chan struct{} { return b.written.C() }

// Await waits until cond holds of the buffer's contents, checking them at
// once and after each Write, and reports whether it held before d passed.
func (b *Buffer) Await(d time.Duration, cond func(contents string) bool) bool {
	return b.written.Await(d, func() bool { return cond(b.String()) })
}

// WaitFor waits like Await and, when cond never holds within d, fails the
// test at once with the message format, args and the time waited.
func (b *Buffer) WaitFor(t testing.TB, d time.Duration, cond func(contents string) bool, format string, args ...any) {
	t.Helper()
	if !b.Await(d, cond) {
		t.Fatalf("%s (waited %v)", fmt.Sprintf(format, args...), d)
	}
}

// String returns a copy of the buffer's contents.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
