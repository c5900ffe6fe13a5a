package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// logSink is the log writer in front of stderr: logging never waits for it.
// Write copies the line into a buffer of at most max bytes (or, when the
// buffer is empty, one line of any size) and returns; a goroutine owned by
// the sink writes the buffer to w. When the buffer is full (stderr is not
// read, or not as fast as lines come) lines are dropped and counted, and
// once w accepts writes again the sink writes a line giving the count.
// Lines written while Close runs are still written, up to the final flush;
// those after it are dropped without a count, since logging is over, not
// stderr unread. Write, Sync and Close may be called concurrently.
type logSink struct {
	w    io.Writer
	max  int
	now  func() time.Time
	wake chan struct{} // holds a token when buf may be non-empty
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer goroutine returns

	mu       sync.Mutex
	buf      []byte // lines not yet handed to the writer goroutine; len <= max, or one longer line
	dropped  int    // lines dropped for a full buffer since the last count was written
	stopping bool   // Close was called (stop is closed)
	closed   bool   // the writer goroutine took its final batch: Write drops, uncounted
}

// newLogSink starts a sink writing to w with a buffer of max bytes.
func newLogSink(w io.Writer, max int) *logSink {
	s := &logSink{w: w, max: max, now: time.Now, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// Write queues p, one log line, or drops it if the buffer is full or the
// sink is closed. It never blocks on w and always reports success.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return len(p), nil
	}
	if len(s.buf) > 0 && len(s.buf)+len(p) > s.max {
		s.dropped++
		s.mu.Unlock()
		return len(p), nil
	}
	s.buf = append(s.buf, p...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// Sync implements zapcore.WriteSyncer. It does not wait: lines are written
// by the sink's goroutine, and Close flushes them.
func (s *logSink) Sync() error { return nil }

// Close writes what is buffered (and the count of dropped lines), waiting at
// most timeout for w, and stops the sink's goroutine; later lines are
// dropped. If w is stuck the goroutine is left blocked in its Write, which
// the process's exit ends.
func (s *logSink) Close(timeout time.Duration) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	s.stopping = true
	s.mu.Unlock()
	close(s.stop)
	select {
	case <-s.done:
	case <-time.After(timeout):
	}
}

func (s *logSink) run() {
	defer close(s.done)
	var spare []byte
	for {
		select {
		case <-s.wake:
		case <-s.stop:
		}
		s.mu.Lock()
		batch, dropped, closed := s.buf, s.dropped, s.stopping
		s.buf, s.dropped, s.closed = spare[:0], 0, closed
		s.mu.Unlock()
		if len(batch) > 0 {
			_, _ = s.w.Write(batch)
		}
		if dropped > 0 {
			// zap's console format: time, level, message, fields.
			_, _ = fmt.Fprintf(s.w, "%s\tWARN\tlog lines dropped: stderr was not read as fast as lines came\t{\"dropped\": %d}\n",
				s.now().Format("2006-01-02T15:04:05.000Z0700"), dropped)
		}
		spare = batch
		if closed {
			return
		}
	}
}
