package bridge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// tailBytes is how much of a child's stderr is kept for failure reasons.
const tailBytes = 2048

// tailWriter logs a stdio child's stderr line by line at debug level and
// keeps its last tailBytes for failure reasons. Safe for concurrent use.
type tailWriter struct {
	log *slog.Logger

	mu      sync.Mutex
	partial []byte // an unfinished line
	tail    []byte // the last tailBytes of output
}

func newTailWriter(log *slog.Logger) *tailWriter { return &tailWriter{log: log} }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tail = append(w.tail, p...)
	if len(w.tail) > tailBytes {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-tailBytes:]...)
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		// Background: Write is io.Writer's, called by os/exec's copy of
		// the child's stderr, which has no caller and no context.
		w.log.Log(context.Background(), slog.LevelDebug, "stderr", "line", string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > tailBytes {
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

// stderrReadBuffer is the size of the buffer a child's stderr is read with.
// Stderr carries log lines, read as they come; os/exec would copy it with a
// 32 KiB buffer held for as long as the child runs (in every session).
const stderrReadBuffer = 512

// ReadFrom copies r (a child's stderr: os/exec hands the pipe to it) into
// w with a stderrReadBuffer-byte buffer, until r ends (io.EOF is not an
// error).
func (w *tailWriter) ReadFrom(r io.Reader) (n int64, err error) {
	buf := make([]byte, stderrReadBuffer)
	for {
		m, rerr := r.Read(buf)
		if m > 0 {
			_, _ = w.Write(buf[:m])
			n += int64(m)
		}
		if errors.Is(rerr, io.EOF) {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// suffix returns "; stderr: <last lines>" for a failure reason, or "".
func (w *tailWriter) suffix() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s := strings.TrimSpace(string(w.tail))
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return "; stderr: " + strings.Join(lines, " | ")
}
