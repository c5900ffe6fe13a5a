package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/sandbox"
)

// stdoutHeadBytes is how much of a stdio child's stdout is kept to explain a
// failed initialize.
const stdoutHeadBytes = 4096

// stdoutWatch reads a stdio child's stdout for the MCP connection and keeps
// its first stdoutHeadBytes and whether it ended, so that a failed
// initialize can say the real cause: a banner or shell echo that is not
// JSON, or stdout closed by a child that is still running. Safe for
// concurrent use.
type stdoutWatch struct {
	r io.Reader // set once before the first Read

	mu    sync.Mutex
	head  []byte // the first stdoutHeadBytes read
	ended bool   // a Read returned an error (EOF: stdout closed)
}

func (w *stdoutWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.mu.Lock()
	if room := stdoutHeadBytes - len(w.head); room > 0 {
		w.head = append(w.head, p[:min(n, room)]...)
	}
	if err != nil {
		w.ended = true
	}
	w.mu.Unlock()
	return n, err
}

// nonJSON returns an error quoting the first line the child wrote on stdout
// that is not JSON, or nil. A nil w has none.
func (w *stdoutWatch) nonJSON() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rest := w.head
	for len(rest) > 0 {
		line, tail, complete := bytes.Cut(rest, []byte("\n"))
		rest = tail
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		partial := !complete && !w.ended && len(w.head) < stdoutHeadBytes
		if partial && (line[0] == '{' || line[0] == '[') {
			continue // a message still being written
		}
		if partial || !json.Valid(line) {
			return fmt.Errorf("server wrote non-JSON to stdout during initialize: %q (stdout is the MCP connection: logs and banners belong on stderr)", shorten(line, 120))
		}
	}
	return nil
}

// closed reports whether the child's stdout has ended. A nil w has not.
func (w *stdoutWatch) closed() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended
}

// shorten returns at most n bytes of b, marking a cut with "…".
func shorten(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// stdioTransport is mcp.CommandTransport with the child's stdout read
// through a stdoutWatch. Close closes the child's stdin and waits for it to
// exit, with sandbox.StopGroup's SIGTERM and SIGKILL after grace; a child
// that broke the protocol on stdout (wrote non-JSON, or closed it) is killed
// at once: the connection cannot recover and there is nothing to wait for.
type stdioTransport struct {
	cmd   *exec.Cmd
	grace time.Duration
	out   *stdoutWatch
}

// newStdioTransport returns the transport of cmd, a stdio child not yet
// started, and the watch of its stdout (which Connect fills in).
func newStdioTransport(cmd *exec.Cmd, grace time.Duration) (*stdioTransport, *stdoutWatch) {
	t := &stdioTransport{cmd: cmd, grace: grace, out: &stdoutWatch{}}
	return t, t.out
}

// Connect starts the command and connects to it over its stdin and stdout.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	t.out.r = stdout
	return (&mcp.IOTransport{
		Reader: io.NopCloser(t.out), // the connection ends by closing stdin
		Writer: &childStdin{WriteCloser: stdin, t: t},
	}).Connect(ctx)
}

// childStdin closes a stdio child's stdin and waits for the child, once.
type childStdin struct {
	io.WriteCloser
	t    *stdioTransport
	once sync.Once
	err  error
}

func (c *childStdin) Close() error {
	c.once.Do(func() {
		if c.t.out.nonJSON() != nil || c.t.out.closed() {
			_ = sandbox.SignalGroup(c.t.cmd, syscall.SIGKILL) // it broke the protocol: nothing to wait for
		}
		sandbox.StopGroup(c.t.cmd, c.t.grace, func() {
			_ = c.WriteCloser.Close()
			c.err = c.t.cmd.Wait()
		})
	})
	return c.err
}
