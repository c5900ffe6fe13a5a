package acp

import (
	"context"
	"log/slog"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"golang.org/x/time/rate"

	"github.com/seed02d3eb6b/acp-agent/internal/lifetime"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
	"github.com/seed02d3eb6b/acp-agent/internal/msgwriter"
	"github.com/seed02d3eb6b/acp-agent/internal/warmstack"
)

// The agent's one ACP connection (conn). Its parts, each in one place:
//
//   - one reader: framing (framing.go) reads the Stream and hands
//     acp-go-sdk's engine only valid JSON-RPC 2.0 messages, answering the
//     rest itself;
//   - one writer: out (msgwriter.Writer over the Stream), which the engine
//     and framing's error replies both write whole messages through, one
//     at a time;
//   - one engine: acp-go-sdk's Connection (ids, correlation,
//     $/cancel_request, ordered notifications), given conn.dispatch as its
//     handler, which runs the Agent's dispatch table (dispatch.go), so
//     every method is decoded in one place with acp-go-sdk's types, or with
//     ours (wire.go) where it has none;
//   - the order of prompts and cancels (order.go), which the reader records
//     and the handlers take from: calls go one way, from the engine's
//     handlers into conn, never from conn or the reader into a handler.
//
// The engine cancels a request's context once its response is written
// (acp-go-sdk Connection: the handler runs, the response is sent, then the
// context ends). The agent builds two guarantees on that, pinned by tests:
// the notifications that follow a session/new response are sent after it
// (afterResponse, Agent.open), and every request read is answered before
// Serve returns (calls).

// conn is the Agent's one ACP connection: the wire, and nothing of any
// session but the order of its prompts and cancels. The Agent creates it
// in New (its dispatch table fixed then) and runs it in ServeStream: start,
// run, then, once the Agent has ended its sessions, finish. Its methods
// are safe for concurrent use; those that send wait until start has set
// the engine up (ready).
type conn struct {
	log        *slog.Logger
	mediaLimit int               // limits.maxMediaBytes, for framing's oversize message
	table      map[string]method // the dispatch table (dispatch.go); read-only
	handlers   *warmstack.Pool   // the goroutines dispatch runs the table's entries on

	// ready is closed by start once rpc, out and frames are set: they are
	// written before it and only read after it (connection), and the
	// engine reads the Stream only from then on.
	ready  chan struct{}
	rpc    *acpsdk.Connection
	out    *msgwriter.Writer
	frames *framing

	calls *calls // calls read and not answered yet: framing counts, dispatch answers
	// order and prompts are the order of prompts and cancels (order.go):
	// framing records into order before the engine sees a message; the
	// prompt and cancel handlers take from it (claimPrompt, cancelPrompts)
	// and start or cancel prompts by the place they took.
	order   *readOrder
	prompts promptCancels

	mcp  *mcpOverACP   // MCP servers the client hosts, on this connection (mcpacp.go)
	pace *rate.Limiter // the pacing of replayed session/updates (pace.go)
	// tasks are the senders of what follows a response (afterResponse);
	// Agent.Shutdown waits for them.
	tasks sync.WaitGroup
}

// newConn returns a connection, not started, that dispatches to table on
// handlers' goroutines; mediaLimit is limits.maxMediaBytes (zero: the
// default).
func newConn(table map[string]method, log *slog.Logger, mediaLimit int, handlers *warmstack.Pool) *conn {
	c := &conn{log: log, mediaLimit: mediaLimit, table: table, handlers: handlers, ready: make(chan struct{}), calls: newCalls(), order: newReadOrder(), pace: newNotifyPacer()}
	c.mcp = &mcpOverACP{router: mcpacp.NewRouter(log.With("component", "mcp-over-acp")), ready: c.ready, log: log}
	return c
}

// start sets the engine up over s and lets it read. It is called once.
func (c *conn) start(s Stream) {
	c.out = msgwriter.New(streamOut{s})
	c.frames = newFraming(s, c.ready, c.out, c.order, c.log.With("component", "acp-framing"), c.mediaLimit)
	c.frames.calls = c.calls
	c.frames.holdEnd = true
	c.frames.requireInit = true
	c.rpc = acpsdk.NewConnection(c.dispatch, c.out, c.frames)
	c.rpc.SetLogger(c.log.With("component", "acp-conn"))
	c.mcp.router.SetConn(c.rpc)
	close(c.ready) // the engine reads only from here on
}

// run returns when the client's input ends, once the requests under way
// have answered (cancelled; at most eofAnswerWait) and the engine has been
// let see the end; or when the engine ends on its own; or when ctx is done.
func (c *conn) run(ctx context.Context) {
	select {
	case <-c.frames.inputEnded():
		c.log.Info("client disconnected")
		c.calls.cancel() // the requests under way end, cancelled
		c.writeAnswers(ctx, eofAnswerWait)
		c.frames.endInput() // the engine closes: what is left fails at once
	case <-c.rpc.Done(): // the engine gave up on its own (framing keeps that from happening)
		c.log.Warn("the ACP connection closed")
	case <-ctx.Done():
		c.log.Info("stopping", "cause", context.Cause(ctx))
	}
}

// finish waits for the answers of the requests the Agent's Shutdown ended
// (at most shutdownAnswerWait) and for the sessions' mcp/disconnect
// (bounded), then closes the framing layer.
func (c *conn) finish(ctx context.Context) {
	c.writeAnswers(ctx, shutdownAnswerWait)
	c.mcp.disconnects.Wait()
	c.frames.close()
}

// eofAnswerWait bounds the wait, at the end of input, for the requests
// under way to answer (their context is cancelled); shutdownAnswerWait
// bounds the wait for those Shutdown ends.
const (
	eofAnswerWait      = 10 * time.Second
	shutdownAnswerWait = 2 * time.Second
)

// writeAnswers waits up to d for every request handed to the SDK to be
// answered.
func (c *conn) writeAnswers(ctx context.Context, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	if left, err := c.calls.wait(ctx); err != nil {
		c.log.Warn("requests left unanswered", "count", left, "waited", d)
	}
}

// connection returns the engine once start has set it up.
func (c *conn) connection() *acpsdk.Connection {
	<-c.ready
	return c.rpc
}

// done is closed when the engine has ended (the input's end reached it).
func (c *conn) done() <-chan struct{} { return c.connection().Done() }

// notify sends one session/update, logging (not returning) a failure: a
// client that has gone away cannot be told anything more.
func (c *conn) notify(ctx context.Context, sessionID string, u acpsdk.SessionUpdate) {
	c.send(ctx, sessionID, sdkUpdate(u))
}

// send is notify of an update that may carry what acp-go-sdk lacks
// (wire.go).
func (c *conn) send(ctx context.Context, sessionID string, u update) {
	if u.Session != "" { // a child's update (subagents.go)
		sessionID = u.Session
	}
	err := c.connection().SendNotification(ctx, acpsdk.ClientMethodSessionUpdate, sessionNotification{SessionID: acpsdk.SessionId(sessionID), Update: u})
	if err != nil {
		c.log.Debug("session/update not sent", "session", sessionID, "err", err)
	}
}

// sendNotice sends n to session sid as a notice update (notices.go).
func (c *conn) sendNotice(ctx context.Context, sid string, n notice) {
	c.send(ctx, sid, update{Notice: &n})
}

// notifyPaced is send after waiting for the replay pacer (pace.go).
func (c *conn) notifyPaced(ctx context.Context, sessionID string, u update) {
	if err := c.pace.Wait(ctx); err != nil {
		c.log.Debug("session/update not sent", "session", sessionID, "err", err)
		return
	}
	c.send(ctx, sessionID, u)
}

// afterResponse runs f, in a goroutine of the connection's tasks, once the
// response of the request of ctx is written (its context ends), with a
// context that keeps ctx's values. When the engine ends first, f does not
// run, ended does (if not nil).
func (c *conn) afterResponse(ctx context.Context, f func(bg context.Context), ended func()) {
	c.tasks.Go(func() {
		select {
		case <-ctx.Done(): // the response is written
		case <-c.done():
			if ended != nil {
				ended()
			}
			return
		}
		f(context.WithoutCancel(ctx))
	})
}

// claimPrompt takes the place in the input of session sid's oldest prompt
// not yet claimed (readOrder.claimPrompt; 0: not known). A prompt handler
// claims it first thing, even when its params do not decode, so the next
// prompt of the session gets its own.
func (c *conn) claimPrompt(sid string) uint64 { return c.order.claimPrompt(sid) }

// startPrompt returns the context of the prompt of session sid that took
// ordinal, which session/cancel and the session's next prompt cancel, and
// the func that ends it (promptCancels.start).
func (c *conn) startPrompt(ctx context.Context, sid string, ordinal uint64) (context.Context, func()) {
	return c.prompts.start(ctx, sid, ordinal)
}

// cancelPrompts cancels session sid's prompts read before the
// session/cancel being handled, and records that cancel as handled.
func (c *conn) cancelPrompts(sid string) {
	c.prompts.cancel(sid, c.order.cancelHandled(sid))
}

// forget drops what the connection keeps of session sid (it was closed or
// deleted).
func (c *conn) forget(sid string) { c.prompts.forget(sid) }

// streamOut is a Stream's output as the io.Writer behind the connection's
// one writer (out): each Write is one message, and WriteMessage is never
// called concurrently (msgwriter.Writer serializes the Writes).
type streamOut struct{ s Stream }

// Write writes one message.
func (o streamOut) Write(p []byte) (int, error) {
	if err := o.s.WriteMessage(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// calls counts the calls the framing layer handed the engine and those
// answered, so that at the end of input Serve writes every answer before
// it returns (JSON-RPC 2.0: every request gets a response), and holds the
// cancels of the calls under way, which end at the end of input. A call
// counts as answered when the engine ends its context: after its response
// is written, or when $/cancel_request cancels it (its response follows at
// once). Safe for concurrent use.
type calls struct {
	// life holds the calls under way: cancel ends them, and any tracked
	// after it at once.
	life lifetime.Lifetime

	mu    sync.Mutex // guards open and empty
	open  int
	empty chan struct{} // closed while open is 0
}

func newCalls() *calls {
	e := make(chan struct{})
	close(e)
	return &calls{empty: e}
}

// track returns a context of ctx that cancel cancels, and the func that
// stops tracking it.
func (c *calls) track(ctx context.Context) (context.Context, func()) {
	ctx, release := c.life.Bind(ctx)
	return ctx, release
}

// cancel cancels every call under way and every call tracked after it.
func (c *calls) cancel() { c.life.End() }

// read records a call handed to the engine.
func (c *calls) read() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == 0 {
		c.empty = make(chan struct{})
	}
	c.open++
}

// answered records a call answered.
func (c *calls) answered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == 0 {
		return
	}
	c.open--
	if c.open == 0 {
		close(c.empty)
	}
}

// wait returns once every call read is answered (nil), or ctx's error; it
// reports how many were still open.
func (c *calls) wait(ctx context.Context) (left int, err error) {
	c.mu.Lock()
	empty := c.empty
	c.mu.Unlock()
	select {
	case <-empty:
		return 0, nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.open, ctx.Err()
	}
}
