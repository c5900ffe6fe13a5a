package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestLog_WritesOneJSONLinePerCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 16, 42, 30, 123_000_000, time.FixedZone("CET", 3600))
	l.ToolCall(Record{Time: at, SessionID: "s1", CallID: "call_1", Server: "fx", Tool: "mcp__fx__echo",
		Permission: PermissionAllowOnce, Outcome: OutcomeCompleted, Duration: 1500 * time.Microsecond,
		Arguments: map[string]any{"message": "secret"}, Result: "secret result"})
	l.ToolCall(Record{Time: at, Tenant: "acme", SessionID: "s2", Tool: "mcp__fx__add", Server: "fx", Permission: PermissionRejected, Outcome: OutcomeNotRun})
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), data)
	}
	want := `{"time":"2026-11-26T15:42:30.123Z","tenant":"","sessionId":"s1","toolCallId":"call_1","server":"fx","tool":"mcp__fx__echo","permission":"allow_once","outcome":"completed","durationMs":1.5}`
	if lines[0] != want {
		t.Errorf("line 1:\n got %s\nwant %s", lines[0], want)
	}
	if strings.Contains(string(data), "secret") {
		t.Errorf("arguments or results written by default:\n%s", data)
	}
	var second map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil || second["tenant"] != "acme" || second["permission"] != "rejected" || second["outcome"] != "not_run" {
		t.Errorf("line 2 = %v (%v)", second, err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, %v; want 0600", info.Mode(), err)
	}
}

func TestLog_IncludesArgumentsAndResultsWhenAsked(t *testing.T) {
	var buf syncBuffer
	l := New(&buf, &Options{IncludeArguments: true, IncludeResults: true})
	l.ToolCall(Record{Tool: "t", Arguments: map[string]any{"message": "hi"}, Result: map[string]any{"isError": false}})
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, `"arguments":{"message":"hi"}`) || !strings.Contains(s, `"result":{"isError":false}`) {
		t.Errorf("line = %s", s)
	}
}

// A writer that blocks never blocks ToolCall: the buffer fills, the rest
// is dropped and counted, and the count is logged once the writer moves.
func TestLog_NeverBlocksAndCountsDrops(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	var logs syncBuffer
	l := New(w, &Options{Buffer: 2, Logger: newTextLogger(&logs)})
	l.ToolCall(Record{Tool: "first"}) // taken by the writer, which blocks on it
	<-w.entered
	for range 10 { // 2 fit in the buffer, 8 are dropped; none of this waits
		l.ToolCall(Record{Tool: "more"})
	}
	if got := l.Dropped(); got != 8 {
		t.Errorf("Dropped = %d, want 8", got)
	}
	close(w.release)
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(w.String(), "\n"); n != 3 {
		t.Errorf("%d lines written, want 3", n)
	}
	if !strings.Contains(logs.String(), "dropped=8") {
		t.Errorf("logs do not tell the drops:\n%s", logs.String())
	}
	l.ToolCall(Record{Tool: "after close"}) // dropped, no panic
	if got := l.Dropped(); got != 9 {
		t.Errorf("Dropped after close = %d, want 9", got)
	}
	if err := l.Close(t.Context()); err != nil { // idempotent
		t.Errorf("second Close: %v", err)
	}
}

// Close is bounded by its context when the writer is stuck.
func TestLog_CloseIsBounded(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	defer close(w.release)
	l := New(w, nil)
	l.ToolCall(Record{Tool: "stuck"})
	<-w.entered
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.Close(ctx); err == nil {
		t.Error("Close with a stuck writer and a done context returned nil")
	}
}

func TestOpen_NamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "audit.jsonl")
	if _, err := Open(path, nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Open = %v, want an error naming %s", err, path)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// blockingWriter blocks every Write until release is closed, telling
// entered on the first.
type blockingWriter struct {
	syncBuffer
	release chan struct{}
	entered chan struct{}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.release
	return w.syncBuffer.Write(p)
}
func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// Open appends only to a regular file of the agent's user that no one
// else may read: a link planted at the path (to a file the attacker wants
// written) is refused and its target untouched, as are a file of mode 0666 and
// a FIFO (without waiting for a reader); a missing file is created 0600.
func TestOpen_RefusesLinksAndLooseFiles(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "audit.log")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, nil); err == nil || !strings.Contains(err.Error(), "is a symbolic link") || !strings.Contains(err.Error(), link) {
		t.Errorf("Open(a link) = %v, want a refusal naming it", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the link's target was written: %q", b)
	}

	loose := filepath.Join(dir, "loose.log")
	if err := os.WriteFile(loose, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(loose, nil); err == nil || !strings.Contains(err.Error(), "readable or writable by group or others (mode 0666)") {
		t.Errorf("Open(a 0666 file) = %v, want a refusal naming the mode", err)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(fifo, nil); err == nil {
		t.Error("Open(a FIFO) succeeded")
	}
	if _, err := Open(filepath.Join(dir, "sub"), nil); err != nil {
		t.Fatal(err) // a new file, created
	}
	if fi, err := os.Stat(filepath.Join(dir, "sub")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("a new audit log: %v, mode %v, want 0600", err, fi.Mode())
	}
}

// A line the file does not take (a full disk, here a file size limit)
// is dropped and counted, and the writer goes on.
func TestLog_WriteErrorsAreCounted(t *testing.T) {
	var logs syncBuffer
	l := New(failingWriter{}, &Options{Logger: newTextLogger(&logs)})
	for range 3 {
		l.ToolCall(Record{Tool: "t"})
	}
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := l.Dropped(); got != 3 {
		t.Errorf("Dropped = %d, want 3", got)
	}
	if !strings.Contains(logs.String(), "no space left on device") {
		t.Errorf("the write error is not logged:\n%s", logs.String())
	}
}

// failingWriter fails every write as a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }
