package connect

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// Defaults of Options.
const (
	// DefaultMaxElapsed is how long the Proxy tries to reach the gateway,
	// at first and after a drop, before it gives up.
	DefaultMaxElapsed = 5 * time.Minute
	// DefaultMaxInterval caps the wait between two tries (exponential
	// backoff from 0.5 s, by 1.5, randomized by ±50 %).
	DefaultMaxInterval = 30 * time.Second
	// DefaultMaxHeld is how many messages of the editor wait while the
	// Proxy is not connected.
	DefaultMaxHeld = 256
	// DialTimeout bounds one call of the DialFunc.
	DialTimeout = 30 * time.Second
)

// callTimeout bounds each of the Proxy's own requests (initialize, and a
// session/resume or session/load, which answers once the session's
// servers have connected: 30 s each, in parallel, plus tools/list).
const callTimeout = 2 * time.Minute

// eofAnswerWait bounds the wait, at the end of the editor's input, for
// the answers to its requests under way (its prompts are cancelled first).
const eofAnswerWait = 10 * time.Second

// Options configure a Proxy; the zero value is valid.
type Options struct {
	// URL is the gateway's address, named (with its query and password
	// redacted) in what the editor is told and in the logs. Empty means
	// "the gateway" unnamed.
	URL string
	// MaxElapsed is how long the Proxy tries to reach the gateway, at the
	// start and after each drop, before it gives up (Run then returns an
	// error wrapping ErrGaveUp). Zero means DefaultMaxElapsed (5 min);
	// negative means no limit.
	MaxElapsed time.Duration
	// MaxInterval caps the wait between two tries. Zero or negative means
	// DefaultMaxInterval (30 s).
	MaxInterval time.Duration
	// MaxHeld is how many messages of the editor are held while the Proxy
	// is not connected; beyond it a request is answered with an error at
	// once and a notification is dropped. Zero or negative means
	// DefaultMaxHeld (256).
	MaxHeld int
	// Env builds the environment of the local stdio servers (the
	// baseline allowlist plus the entry's variables, less the injection
	// keys; config sandbox.allowEnv). Nil means the default policy.
	Env *environ.Policy
	// Grace is how long a local server gets to exit once its stdin is
	// closed, before SIGTERM and SIGKILL of its process group. Zero or
	// negative means process.DefaultGrace (5 s).
	Grace time.Duration
	// Logger receives the Proxy's logs and the local servers' stderr (at
	// debug level). Nil discards them.
	Logger *slog.Logger
}

// state is where the Proxy is with the gateway.
type state int

const (
	// stateDialing: no Link; the editor's messages are held.
	stateDialing state = iota
	// stateAttaching: a Link is up; the Proxy initializes it again and
	// re-attaches the sessions, then sends what was held. The editor's
	// messages are still held.
	stateAttaching
	// stateConnected: the editor's messages go straight to the Link.
	stateConnected
	// stateEnded: Run is ending; the editor's messages are dropped.
	stateEnded
)

// String returns the state's name, for logs.
func (s state) String() string {
	switch s {
	case stateDialing:
		return "dialing"
	case stateAttaching:
		return "attaching"
	case stateConnected:
		return "connected"
	case stateEnded:
		return "ended"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Proxy is acp-agent connect: an ACP proxy between an editor, which
// started it over stdio, and a gateway on the network (see the package
// documentation). Create it with New and run it once with Run.
type Proxy struct {
	dial DialFunc
	opts Options
	log  *slog.Logger
	url  string // Options.URL redacted, or "" for none
	ran  atomic.Bool
	// prefix starts every id the Proxy makes (calls.go):
	// "acp-agent-connect-<nonce>-".
	prefix string

	editor acp.Stream // set by Run
	emu    sync.Mutex // serializes the writes to the editor

	// locals are the local servers of every Link so far (under lmu): Run
	// closes each at its end and waits for its handlers and the stops of
	// its children (localServers.wait). (Each Link's reader closes its
	// done, waited for at its drop, its failed attach, or Run's end: at
	// most readerWait.)
	lmu    sync.Mutex
	locals []*localServers

	// mu guards the fields below. It is never held across I/O: a write
	// to the editor or to a Link, a Mux delivery, a dial.
	mu sync.Mutex
	// state is where the Proxy is; link is the current Link (nil while
	// dialing or ended), the gen-th dialed.
	state state
	link  *link
	gen   uint64
	// init is the params of the editor's initialize (nil until it sent
	// one), sent again on every new Link; notices is whether it
	// advertised session.notices; resume whether the gateway's last
	// initialize response advertised sessionCapabilities.resume.
	init    json.RawMessage
	notices bool
	resume  bool
	// calls are the calls in flight both ways; sessions the editor's
	// sessions and local entries.
	calls    callTable
	sessions sessionTable
	// held are the editor's messages that came while not connected, in
	// order; len(held) <= opts.MaxHeld.
	held []message
	// dropping are the sessions whose session/update notifications are
	// dropped: a session/load that re-attaches it is under way.
	dropping map[string]bool
}

// New returns a Proxy that reaches the gateway through dial. opts may be
// nil (every default); it is copied. It panics if dial is nil.
func New(dial DialFunc, opts *Options) *Proxy {
	if dial == nil {
		panic("connect.New: dial is nil")
	}
	p := &Proxy{dial: dial, calls: newCallTable(), dropping: make(map[string]bool)}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.MaxElapsed == 0 {
		p.opts.MaxElapsed = DefaultMaxElapsed
	}
	if p.opts.MaxInterval <= 0 {
		p.opts.MaxInterval = DefaultMaxInterval
	}
	if p.opts.MaxHeld <= 0 {
		p.opts.MaxHeld = DefaultMaxHeld
	}
	p.log = p.opts.Logger
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.log = slog.New(urlpolicy.RedactingHandler(p.log.Handler()))
	if p.opts.URL != "" {
		p.url = urlpolicy.RedactURL(p.opts.URL)
	}
	p.prefix = idPrefix + strings.ToLower(rand.Text()[:8]) + "-"
	p.sessions = newSessionTable(p.prefix)
	return p
}

// Run proxies between editor (the editor's side: acp.NewLineStream over
// stdin and stdout) and the gateway until the editor's input ends, ctx is
// done, or the Proxy gives up reaching the gateway. It may be called once.
//
// At the end of the editor's input, Run cancels the prompts under way
// (session/cancel) and waits for the answers to the editor's requests (at
// most 10 s) before it closes the Link, which ends the gateway's sessions
// of it; when ctx ends it closes the Link at once. Either way every local
// server is stopped (its process group, after the grace period) before
// Run returns nil. When it gives up, it answers the editor's requests
// waiting with an error, tells every open session, stops everything and
// returns an error wrapping ErrGaveUp.
//
// A read of the editor's Stream cannot be interrupted: when ctx ends, or
// the Proxy gives up, before the editor's input does, Run returns without
// waiting for the read under way; what it reads then is dropped, and the
// reader returns at the input's end.
func (p *Proxy) Run(ctx context.Context, editor acp.Stream) error {
	if !p.ran.CompareAndSwap(false, true) {
		return errors.New("connect: Run called twice")
	}
	p.editor = editor
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	readerDone := make(chan struct{})
	go func() { // waited for below once the input has ended (see above)
		defer close(readerDone)
		p.readEditor(cancel)
	}()
	p.log.Info("connecting to the gateway", "url", p.url)
	err := p.serve(ctx)
	p.mu.Lock()
	p.state = stateEnded
	l := p.link
	p.link = nil
	p.mu.Unlock()
	if l != nil {
		l.close()
		p.waitReader(l)
	}
	p.lmu.Lock()
	locals := p.locals
	p.locals = nil
	p.lmu.Unlock()
	for _, ls := range locals {
		ls.close()
		ls.wait()
	}
	if errors.Is(context.Cause(ctx), errEditorEnded) {
		<-readerDone
	}
	p.log.Info("stopped", "err", err)
	return err
}

// readerWait bounds the wait, at the end, for the current Link's reader,
// which may be writing to an editor that no longer reads its stdout.
const readerWait = 5 * time.Second

// waitReader waits until l's reader has returned, at most readerWait: a
// write to the editor cannot be interrupted, and the reader returns once
// it is done (the Link is closed).
func (p *Proxy) waitReader(l *link) {
	timer := time.NewTimer(readerWait)
	defer timer.Stop()
	select {
	case <-l.done:
	case <-timer.C:
		p.log.Warn("the editor does not read what the gateway sent last; ending without it", "waited", readerWait)
	}
}

// serve connects, serves each Link until it drops and connects again,
// until ctx ends (nil) or the Proxy gives up (the error).
func (p *Proxy) serve(ctx context.Context) error {
	var cause error // why the last Link dropped; nil at the start
	for {
		l, err := p.connect(ctx, cause)
		if err != nil {
			if ctx.Err() != nil {
				p.end(ctx, nil)
				return nil
			}
			return p.giveUp(err)
		}
		select {
		case <-l.done:
			cause = p.drop(l)
		case <-ctx.Done():
			p.end(ctx, l)
			return nil
		}
	}
}

// readEditor reads the editor's messages until its input ends, then
// cancels Run's context with errEditorEnded.
func (p *Proxy) readEditor(cancel context.CancelCauseFunc) {
	for {
		raw, err := p.editor.ReadMessage()
		var tl *acp.TooLargeError
		switch {
		case errors.As(err, &tl):
			p.editorTooLarge(tl)
		case errors.Is(err, io.EOF):
			p.log.Info("the editor closed the connection")
			cancel(errEditorEnded)
			return
		case err != nil:
			p.log.Warn("reading the editor's messages failed", "err", err)
			cancel(errEditorEnded)
			return
		default:
			p.fromEditor(raw)
		}
	}
}

// toEditor writes one message to the editor. A failure is logged: an
// editor that stopped reading ends with its input.
func (p *Proxy) toEditor(raw []byte) {
	p.emu.Lock()
	err := p.editor.WriteMessage(line(raw))
	p.emu.Unlock()
	if err != nil {
		p.log.Debug("a message to the editor was not written", "err", err)
	}
}

// muxPrefix starts the ids of the Mux's requests to the gateway.
func (p *Proxy) muxPrefix() string { return p.prefix + "mcp-" }

// entry returns the local entry id, or nil.
func (p *Proxy) entry(id string) *localEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions.entries[id]
}

// gatewayName is how the editor is told of the gateway: "the gateway
// <url>".
func (p *Proxy) gatewayName() string {
	if p.url == "" {
		return "the gateway"
	}
	return "the gateway " + p.url
}
