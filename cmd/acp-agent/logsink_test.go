package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// stuckWriter blocks every Write until release is closed, as a stderr
// that nobody reads.
type stuckWriter struct {
	release chan struct{}
	testutil.Buffer
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	return w.Buffer.Write(p)
}

var droppedRe = regexp.MustCompile(`log lines dropped: stderr was not being read\t\{"dropped": (\d+)\}`)

// TestLogSink_NeverBlocks: with a writer that blocks, every Write returns,
// lines beyond the buffer are dropped and counted, and once the writer
// works again the kept lines and the count of the others are written.
func TestLogSink_NeverBlocks(t *testing.T) {
	w := &stuckWriter{release: make(chan struct{})}
	s := newLogSink(w, 4<<10)
	const n = 5000
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := range n {
			fmt.Fprintf(s, "line %d\n", i)
		}
	}()
	select {
	case <-wrote:
	case <-time.After(30 * time.Second):
		close(w.release)
		t.Fatal("Write blocked on a stuck writer")
	}
	close(w.release)
	fmt.Fprintf(s, "after\n")
	s.Close(30 * time.Second)

	out := w.String()
	kept := strings.Count(out, "line ") + strings.Count(out, "after\n")
	dropped := 0
	for _, m := range droppedRe.FindAllStringSubmatch(out, -1) {
		d, _ := strconv.Atoi(m[1])
		dropped += d
	}
	if dropped == 0 || kept+dropped != n+1 {
		t.Errorf("kept %d + dropped %d lines, want %d in all; output ends %q", kept, dropped, n+1, out[max(0, len(out)-300):])
	}
	if _, err := s.Write([]byte("closed\n")); err != nil || strings.Contains(w.String(), "closed") {
		t.Errorf("a write after Close: %v, output %q", err, w.String()[max(0, len(w.String())-100):])
	}
}

// TestNewLogger_StderrNeverBlocks: the agent's logger over a stderr that
// nobody reads.
func TestNewLogger_StderrNeverBlocks(t *testing.T) {
	w := &stuckWriter{release: make(chan struct{})}
	logger, closeLog, err := newLogger(true, "", w)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// About 3.5 MB: more than the batch the sink's goroutine holds in
		// the stuck Write plus a full buffer, whenever it took that batch.
		for i := range 60000 {
			logger.Debug("a verbose line", zap.Int("i", i))
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Error("logging blocked on a stderr nobody reads")
	}
	close(w.release)
	closeLog()
	if out := w.String(); !droppedRe.MatchString(out) || !strings.Contains(out, "DEBUG\ta verbose line") {
		t.Errorf("stderr once read: %.300q", out)
	}
}
