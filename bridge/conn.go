package bridge

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
	"github.com/seed02d3eb6b/acp-agent/sandbox/process"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// conn is the connection state machine of one server: its State, the MCP
// client session and the transport under it (a stdio child, HTTP streams,
// an in-process session), the redial backoff, and the goroutines that
// watch the connection. The server's methods drive it (connect, dial,
// watch, reconnect, wake, close); the transitions that only read and write
// its fields are its own methods. See server for the lock order.
type conn struct {
	// redial serializes the redials of a lost http or sse session and the
	// connects of an idle lazy server. It is held across the dial, and
	// taken before mu.
	redial sync.Mutex

	// settled is closed once the first connect has connected, failed or
	// started waiting for the user to sign in (signin.go).
	settled    chan struct{}
	settleOnce sync.Once

	// watchers are the connection watchers, list refreshes and closes of
	// stale sessions. Go is called only with mu held and closing false,
	// so that close's Wait, which follows closing, never races an Add.
	watchers sync.WaitGroup

	// mu guards state, err, retryAt, backoff, cs, info, closing,
	// signInURL, deadline, detach, cmd, proc, procCancel, stderr,
	// stdout, readEnd, mode and users. It is never held across I/O.
	mu        sync.Mutex
	state     State
	err       error               // why the server failed or was lost; nil when connected
	retryAt   time.Time           // StateLost: no redial before; zero: at once
	backoff   time.Duration       // the last wait between redials; 0 until a redial fails
	cs        *mcp.ClientSession  // non-nil once connected, until closed (nil while a lazy server idles)
	info      *mcp.Implementation // serverInfo from initialize
	closing   bool                // close has begun; a lost connection is not a failure
	signInURL string              // StateSignIn: where the user signs in
	deadline  *connectDeadline    // the connect deadline of the dial in progress, or nil
	detach    func() bool         // during the first connect: stops its request's end from cancelling it
	// The transport of the current (or last) dial.
	cmd        *exec.Cmd          // the stdio child, or nil
	proc       *process.Process   // the stdio child once started, or nil
	procCancel context.CancelFunc // kills the stdio child's process group, ends the HTTP streams or the in-process session
	stderr     *tailWriter        // last lines of a stdio child's stderr, for failure reasons
	stdout     *stdoutWatch       // the start of a stdio child's stdout, for failure reasons
	readEnd    *readEnd           // tells when a stdio child's connection ends (watchConn), or nil
	mode       confine.Mode       // the session mode the stdio child started under, or ""
	users      int                // a lazy server's requests under way (client.use); its connection rests restAfter after 0
	restTimer  *time.Timer        // a lazy server's pending rest, if any
}

// session returns the live client session, or an error saying why there is
// none.
func (c *conn) session() (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		return c.cs, nil
	}
	if c.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotConnected, c.err)
	}
	return nil, ErrNotConnected
}

// markLost marks the connection lost after its session cs failed again
// right after a fresh initialize: the next call dials again, after the
// backoff, which doubles. now is the server's clock.
func (c *conn) markLost(cs *mcp.ClientSession, cause error, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || c.cs != cs {
		return
	}
	c.backoff = nextBackoff(c.backoff)
	c.state, c.cs, c.err, c.retryAt = StateLost, nil, urlpolicy.RedactError(cause), now.Add(c.backoff)
	c.closeStale(cs)
}

// closeStale ends a replaced session in the background (for Streamable
// HTTP, Close may send a DELETE to a server that is gone); c.watchers owns
// the goroutine. c.mu must be held.
func (c *conn) closeStale(cs *mcp.ClientSession) {
	if cs != nil {
		c.watchers.Go(func() { _ = cs.Close() })
	}
}

// settle tells Manager.Connect that the server has connected, failed or is
// waiting for the user; it is idempotent.
func (c *conn) settle() { c.settleOnce.Do(func() { close(c.settled) }) }

// isSettled reports whether settle was called.
func (c *conn) isSettled() bool {
	select {
	case <-c.settled:
		return true
	default:
		return false
	}
}

// shut begins closing: it marks the connection closing and closed, and
// returns what close must end. ok is false when it was closed already.
func (c *conn) shut() (cs *mcp.ClientSession, proc *process.Process, procCancel context.CancelFunc, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == StateClosed {
		return nil, nil, nil, false
	}
	c.closing = true
	if c.restTimer != nil {
		c.restTimer.Stop()
	}
	cs, proc, procCancel = c.cs, c.proc, c.procCancel
	c.state, c.cs = StateClosed, nil
	return cs, proc, procCancel, true
}

// process returns the stdio child (or nil) and the func that ends the
// transport (or nil), for ending a session that never became the live one.
func (c *conn) process() (*process.Process, context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc, c.procCancel
}

// readEnd tells, once, that a connection's reads have ended (a stdio
// connection's failed Read, cancellingConn, after which go-sdk ends it: the
// child closed its stdout, or the connection was closed), so that an idle
// connection needs no goroutine parked until its end. Safe for concurrent
// use; mu is a leaf, and notify runs without it.
type readEnd struct {
	mu     sync.Mutex
	ended  bool
	notify func() // what arm was given, until it runs
}

// arm has notify called when the reads end, and reports true; when they
// have ended already, it reports false and notify is not called.
func (e *readEnd) arm(notify func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return false
	}
	e.notify = notify
	return true
}

// fire records the end of the reads and runs the armed notify, once. A
// nil e does nothing.
func (e *readEnd) fire() {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.ended = true
	notify := e.notify
	e.notify = nil
	e.mu.Unlock()
	if notify != nil {
		notify()
	}
}
