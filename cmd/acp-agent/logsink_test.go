package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
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

var droppedRe = regexp.MustCompile(`log lines dropped: stderr was not read as fast as lines came\t\{"dropped": (\d+)\}`)

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

// gatedStderr is a stderr that is read, but whose first Write waits for
// release: the sink's goroutine is inside a Write when the test wants it.
type gatedStderr struct {
	release chan struct{}
	once    sync.Once
	testutil.Buffer
}

func (w *gatedStderr) Write(p []byte) (int, error) {
	w.once.Do(func() { <-w.release })
	return w.Buffer.Write(p)
}

// TestLogSink_NoFalseDropWarning: over a stderr that is read, no
// "dropped" line is written for a line logged while Close runs (as other
// goroutines do while the process exits: the old sink counted it as
// dropped and then blamed stderr), nor for a line larger than the buffer;
// both lines are written.
func TestLogSink_NoFalseDropWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &gatedStderr{release: make(chan struct{})}
		s := newLogSink(w, 4<<10)
		fmt.Fprintf(s, "first\n")
		synctest.Wait() // the sink's goroutine is in w.Write("first")
		closed := make(chan struct{})
		go func() { defer close(closed); s.Close(30 * time.Second) }()
		synctest.Wait()                     // Close waits for the goroutine
		late := strings.Repeat("x", 16<<10) // 4 times the buffer, logged while closing
		fmt.Fprintf(s, "%s\n", late)
		close(w.release)
		<-closed
		fmt.Fprintf(s, "after close\n") // logging is over: dropped, not counted
		out := w.String()
		if droppedRe.MatchString(out) {
			t.Errorf("stderr was read, yet the sink says lines were dropped: %.300q", out)
		}
		if out != "first\n"+late+"\n" {
			t.Errorf("stderr = %.100q…, want the first line, then the long late one, and nothing after Close", out)
		}
	})
}
