package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/sandbox/process"
)

// cancelWriteTimeout bounds the notifications/cancelled a closing stdio
// connection writes, in case the server no longer reads its stdin.
const cancelWriteTimeout = time.Second

// stdioTransport runs a stdio MCP server and speaks newline-delimited JSON
// over its stdin and stdout (go-sdk's IOTransport). Unlike
// mcp.CommandTransport it starts the child with process.Start (a locked
// spawner thread, for the parent-death signal) and its Close never waits for
// the child: closing the connection closes the child's stdin and stdout at
// once, and the owner ends the process with process.StopGroup. go-sdk may
// close the connection from whichever goroutine retires the last call, a
// cancelled tool call included, so a Close that waited would hold that call
// for the grace period.
type stdioTransport struct {
	cmd *exec.Cmd
	// started, if non-nil, receives the child once it runs, before Connect
	// returns.
	started func(*process.Process)
	// proc is the child once Connect has started it; read it after Connect
	// returns.
	proc *process.Process
	// out watches the child's stdout, for the cause of a failed initialize.
	// Set before Connect.
	out *stdoutWatch
	// end, if non-nil, is fired when the connection's reads end.
	end *readEnd
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		_, _ = stdinR.Close(), stdinW.Close()
		return nil, err
	}
	t.cmd.Stdin, t.cmd.Stdout = stdinR, stdoutW
	p, err := process.Start(t.cmd)
	_, _ = stdinR.Close(), stdoutW.Close() // the child's ends
	if err != nil {
		_, _ = stdinW.Close(), stdoutR.Close()
		return nil, err
	}
	t.proc = p
	if t.started != nil {
		t.started(p)
	}
	if t.out == nil {
		t.out = &stdoutWatch{}
	}
	t.out.r = stdoutR
	pipes := &childPipes{stdin: stdinW, stdout: stdoutR, watch: t.out}
	conn, err := (&mcp.IOTransport{Reader: pipes, Writer: pipes.writer()}).Connect(ctx)
	if err != nil {
		_ = pipes.Close()
		return nil, err
	}
	return &cancellingConn{Connection: conn, stdin: stdinW, end: t.end, pending: make(map[jsonrpc.ID]bool)}, nil
}

// childPipes are the agent's ends of a child's stdin and stdout. Closing
// them closes stdin first (the MCP stdio shutdown signal), then stdout.
type childPipes struct {
	stdin, stdout *os.File
	watch         *stdoutWatch // reads stdout, keeping its start
}

func (p *childPipes) Read(b []byte) (int, error) { return p.watch.Read(b) }

func (p *childPipes) Close() error {
	err := p.stdin.Close()
	p.watch.drain(p.stdout)
	return errors.Join(err, p.stdout.Close())
}

// writer is stdin for IOTransport, whose Close closes the Reader (both
// pipes) first.
func (p *childPipes) writer() io.WriteCloser { return stdinWriter{p.stdin} }

type stdinWriter struct{ f *os.File }

func (w stdinWriter) Write(b []byte) (int, error) { return w.f.Write(b) }
func (w stdinWriter) Close() error                { return nil } // childPipes.Close closes it

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
	head  []byte // the first stdoutHeadBytes read, until forget
	ended bool   // a Read returned io.EOF: the child closed stdout
	done  bool   // forget was called: head is no longer kept
}

func (w *stdoutWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.mu.Lock()
	if room := stdoutHeadBytes - len(w.head); room > 0 && !w.done {
		w.head = append(w.head, p[:min(n, room)]...)
	}
	if errors.Is(err, io.EOF) { // the child closed it; not our own close of the pipe
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

// drainWait bounds how long closing a connection whose initialize failed
// reads what the child left on stdout.
const drainWait = 200 * time.Millisecond

// drain reads what is left in f, the child's stdout, into the head, until
// it ends or drainWait passes, when initialize has not succeeded (the head
// is kept): a child that printed a banner and exited may be noticed (a
// write to its stdin failing) before the banner was read, and the banner is
// the cause to report. After a successful initialize it does nothing.
func (w *stdoutWatch) drain(f *os.File) {
	w.mu.Lock()
	keep := !w.done && w.r != nil
	w.mu.Unlock()
	if !keep || f.SetReadDeadline(time.Now().Add(drainWait)) != nil {
		return
	}
	buf := make([]byte, 512)
	for {
		if _, err := w.Read(buf); err != nil {
			return
		}
		if w.full() {
			return
		}
	}
}

// full reports whether the head holds stdoutHeadBytes.
func (w *stdoutWatch) full() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.head) >= stdoutHeadBytes
}

// forgetHead drops the start of stdout once initialize has succeeded: it
// only explains a failed one, and a session holds its servers (up to
// stdoutHeadBytes each) for as long as it idles.
func (w *stdoutWatch) forgetHead() {
	w.mu.Lock()
	w.head, w.done = nil, true
	w.mu.Unlock()
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

// cancellingConn sends notifications/cancelled, when it closes, for every
// request still awaiting its response (MCP "Cancellation": the client SHOULD
// cancel requests it abandons). go-sdk sends it for a cancelled call too, but
// from a goroutine of its own that a close right after the cancellation
// outruns, so the server would never hear of it.
type cancellingConn struct {
	mcp.Connection
	stdin *os.File
	end   *readEnd // told when a Read fails, which ends the connection; may be nil

	mu      sync.Mutex
	pending map[jsonrpc.ID]bool // requests sent without a response or a cancellation yet
	closed  bool
}

func (c *cancellingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, _ := msg.(*jsonrpc.Request)
	if req != nil && req.IsCall() && req.Method != "initialize" { // initialize is never cancelled
		c.mu.Lock()
		c.pending[req.ID] = true
		c.mu.Unlock()
	}
	err := c.Connection.Write(ctx, msg)
	if req != nil && req.Method == "notifications/cancelled" && err == nil {
		// Only once it is written: a Close that runs while go-sdk's own
		// cancellation is still being written sends one too (a duplicate
		// the server ignores), rather than none.
		if id, ok := cancelledID(req.Params); ok {
			c.mu.Lock()
			delete(c.pending, id)
			c.mu.Unlock()
		}
	}
	return err
}

func (c *cancellingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.end.fire() // go-sdk ends the connection on a failed read
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, resp.ID)
		c.mu.Unlock()
	}
	return msg, err
}

func (c *cancellingConn) Close() error {
	c.mu.Lock()
	var ids []jsonrpc.ID
	if !c.closed {
		c.closed = true
		for id := range c.pending {
			ids = append(ids, id)
		}
		clear(c.pending)
	}
	c.mu.Unlock()
	if len(ids) > 0 {
		_ = c.stdin.SetWriteDeadline(time.Now().Add(cancelWriteTimeout))
		for _, id := range ids {
			params, _ := json.Marshal(&mcp.CancelledParams{RequestID: id.Raw(), Reason: "the client is closing the connection"})
			// Background: Close takes no context and its caller may be
			// gone; the write is bounded by the deadline set above.
			_ = c.Connection.Write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
		}
	}
	return c.Connection.Close()
}

// cancelledID reads the requestId of notifications/cancelled params.
func cancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil
}
