package msgwriter_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/internal/msgwriter"
)

// slowWriter records its writes and fails the test if two overlap.
type slowWriter struct {
	t      *testing.T
	mu     sync.Mutex
	busy   bool
	writes []string
}

func (s *slowWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.busy {
		s.t.Error("two writes overlap")
	}
	s.busy = true
	s.mu.Unlock()
	var b bytes.Buffer
	for _, c := range p { // byte by byte: an interleaving would show
		b.WriteByte(c)
	}
	s.mu.Lock()
	s.writes = append(s.writes, b.String())
	s.busy = false
	s.mu.Unlock()
	return len(p), nil
}

// TestWriter_WholeMessages: concurrent writers' messages reach the output
// one whole message per Write, none overlapping.
func TestWriter_WholeMessages(t *testing.T) {
	out := &slowWriter{t: t}
	w := msgwriter.New(out)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			msg := strings.Repeat(string(rune('a'+i)), 512) + "\n"
			for range 20 {
				if n, err := w.Write([]byte(msg)); n != len(msg) || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
			}
		})
	}
	wg.Wait()
	if len(out.writes) != 160 {
		t.Fatalf("%d writes, want 160", len(out.writes))
	}
	for _, m := range out.writes {
		if len(m) != 513 || strings.Count(m, m[:1]) != 512 {
			t.Fatalf("a message was cut or mixed: %q…", m[:min(len(m), 40)])
		}
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}
