package bridge

import (
	"bytes"
	"context"
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
		w.log.Log(context.Background(), slog.LevelDebug, "stderr", "line", string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > tailBytes {
		w.partial = w.partial[:0]
	}
	return len(p), nil
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
