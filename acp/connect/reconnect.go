package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	acpsdk "github.com/coder/acp-go-sdk"
)

// connect reaches the gateway: dial, then, on every Link but the first,
// initialize with the editor's params and re-attach each open session
// (attach), with exponential backoff between tries until
// Options.MaxElapsed; then it sends what the editor sent meanwhile and,
// after a drop (cause not nil), tells each re-attached session.
func (p *Proxy) connect(ctx context.Context, cause error) (*link, error) {
	b := backoff.NewExponentialBackOff()
	b.MaxInterval = p.opts.MaxInterval
	start, tries := time.Now(), 0
	var attached []string
	op := func() (*link, error) {
		tries++
		l, ok, err := p.attach(ctx)
		if err != nil {
			if isPermanent(err) {
				return nil, backoff.Permanent(err)
			}
			return nil, err
		}
		attached = ok
		return l, nil
	}
	l, err := backoff.Retry(ctx, op, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(max(p.opts.MaxElapsed, 0)),
		backoff.WithNotify(func(err error, next time.Duration) {
			p.log.Warn("cannot reach the gateway; trying again", "url", p.url, "err", p.redact(err), "in", next.Round(time.Millisecond))
		}))
	if err != nil {
		where := ""
		if p.url != "" {
			where = " " + p.url
		}
		return nil, fmt.Errorf("%w%s after %s (%d tries): %w", ErrGaveUp, where, time.Since(start).Round(time.Second), tries, p.redact(err))
	}
	p.log.Info("connected to the gateway", "url", p.url, "link", l.gen, "sessions", len(attached))
	p.flush(l)
	if cause != nil {
		notices := p.noticesOn()
		for _, sid := range attached {
			p.toEditor(tellLine(sid, notices, "info", "Reconnected to the gateway",
				fmt.Sprintf("Reconnected to %s; the session is re-attached.", p.gatewayName())))
		}
	}
	return l, nil
}

// attach makes one try: it dials a Link, starts its reader and, when the
// editor has initialized, initializes it and re-attaches every open
// session (reattach). It returns the Link and the sessions re-attached;
// on failure the Link is closed.
func (p *Proxy) attach(ctx context.Context) (*link, []string, error) {
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	ln, err := p.dial(dctx)
	cancel()
	if err != nil {
		return nil, nil, fmt.Errorf("dialing: %w", err)
	}
	p.mu.Lock()
	p.gen++
	l := &link{Link: ln, gen: p.gen, done: make(chan struct{})}
	l.local = p.newLocalServers(l)
	p.link, p.state = l, stateAttaching
	p.mu.Unlock()
	go p.readLink(l) // owned by l: done; waited for at its drop, its failed attach or Run's end
	attached, err := p.reattach(ctx, l)
	if err != nil {
		l.close()
		<-l.done
		p.mu.Lock()
		if p.link == l {
			p.link, p.state = nil, stateDialing
		}
		p.mu.Unlock()
		return nil, nil, err
	}
	return l, attached, nil
}

// reattach initializes the new Link l with the editor's initialize params
// and re-attaches its open sessions: session/resume when the gateway
// advertises it, else session/load (whose replay is dropped: the editor
// has it). A session the gateway refuses is forgotten, and its user told;
// any other failure is the try's. Nothing is done before the editor's own
// initialize, which is held and sent once connected.
func (p *Proxy) reattach(ctx context.Context, l *link) (attached []string, err error) {
	p.mu.Lock()
	init := p.init
	sids := p.sessions.ids()
	p.mu.Unlock()
	if init == nil {
		return nil, nil
	}
	res, err := p.call(ctx, l, acpsdk.AgentMethodInitialize, init, "")
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	p.mu.Lock()
	p.resume = resumeOn(res)
	resume := p.resume
	p.mu.Unlock()
	method := acpsdk.AgentMethodSessionLoad
	if resume {
		method = acpsdk.AgentMethodSessionResume
	}
	for _, sid := range sids {
		p.mu.Lock()
		rec := p.sessions.open[sid]
		p.mu.Unlock()
		if rec == nil {
			continue
		}
		drop := ""
		if !resume {
			drop = sid
		}
		_, err := p.call(ctx, l, method, rec.reattach(sid), drop)
		var re *acpsdk.RequestError
		switch {
		case errors.As(err, &re):
			p.log.Warn("a session could not be re-attached", "session", sid, "method", method, "err", re.Message)
			p.mu.Lock()
			p.sessions.closed(sid)
			p.mu.Unlock()
			p.toEditor(tellLine(sid, p.noticesOn(), "error", "The session could not be re-attached",
				fmt.Sprintf("Reconnected to %s, but %s of this session failed (%s): open it again.", p.gatewayName(), method, re.Message)))
		case err != nil:
			return nil, fmt.Errorf("%s %s: %w", method, sid, err)
		default:
			attached = append(attached, sid)
		}
	}
	return attached, nil
}

// call sends a request of the proxy's own on l and returns its result: a
// *acpsdk.RequestError is the gateway's answer; any other error means no
// answer (the Link ended, ctx, callTimeout). While it waits, drop's
// session/update notifications are dropped.
func (p *Proxy) call(ctx context.Context, l *link, method string, params any, drop string) (json.RawMessage, error) {
	oc := &ownCall{done: make(chan message, 1), drop: drop}
	p.mu.Lock()
	id := p.calls.newOwn(oc, p.prefix)
	if drop != "" {
		p.dropping[drop] = true
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.calls.own, idKey(id))
		if drop != "" {
			delete(p.dropping, drop)
		}
		p.mu.Unlock()
	}()
	if err := l.write(encode(request{JSONRPC: "2.0", ID: id, Method: method, Params: params})); err != nil {
		return nil, err
	}
	timer := time.NewTimer(callTimeout)
	defer timer.Stop()
	select {
	case m := <-oc.done:
		if len(m.Error) > 0 {
			re := &acpsdk.RequestError{}
			if err := json.Unmarshal(m.Error, re); err != nil {
				return nil, fmt.Errorf("the gateway's error response cannot be read: %w", err)
			}
			return nil, re
		}
		return m.Result, nil
	case <-l.done:
		return nil, fmt.Errorf("the connection ended: %w", l.cause())
	case <-timer.C:
		return nil, fmt.Errorf("no answer within %s", callTimeout)
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// flush sends what the editor sent while the Proxy was not connected, in
// order, then lets its messages go straight to l. It returns early if a
// write fails (l is then ending; the drop answers what was sent).
func (p *Proxy) flush(l *link) {
	for {
		p.mu.Lock()
		if len(p.held) == 0 {
			p.state = stateConnected
			p.mu.Unlock()
			return
		}
		batch := p.held
		p.held = nil
		out := make([][]byte, len(batch))
		for i, m := range batch {
			out[i] = p.prepare(m)
		}
		p.mu.Unlock()
		for _, msg := range out {
			if l.write(msg) != nil {
				return
			}
		}
	}
}

// drop handles the end of Link l: its local servers stop; the editor's
// requests under way are answered with an error saying their result may
// be lost (a session/close, with success: the drop closed the session);
// the gateway's requests waiting at the editor are withdrawn
// ($/cancel_request) and their answers will be dropped; every open
// session is told. It returns the cause.
func (p *Proxy) drop(l *link) error {
	cause := p.redact(l.cause())
	l.close()
	p.mu.Lock()
	p.link, p.state = nil, stateDialing
	calls := p.calls.takeEditor()
	var withdrawn []json.RawMessage
	for _, c := range p.calls.gateway {
		if c.gen == l.gen {
			withdrawn = append(withdrawn, c.editorID)
		}
	}
	for _, c := range calls {
		if c.method == acpsdk.AgentMethodSessionClose {
			p.sessions.closed(c.sessionID)
		}
	}
	sids, notices := p.sessions.ids(), p.notices
	p.mu.Unlock()
	p.log.Warn("lost the connection to the gateway; reconnecting", "url", p.url, "link", l.gen, "err", cause,
		"requestsAnswered", len(calls), "requestsWithdrawn", len(withdrawn), "sessions", len(sids))
	for _, c := range calls {
		if c.method == acpsdk.AgentMethodSessionClose {
			p.toEditor(encode(result{JSONRPC: "2.0", ID: c.id, Result: acpsdk.CloseSessionResponse{}}))
			continue
		}
		p.toEditor(errorLine(c.id, codeInternal, fmt.Sprintf(
			"Internal error: lost the connection to %s (%v) while %s was under way; its result may be lost: send it again once the proxy has reconnected",
			p.gatewayName(), cause, c.method)))
	}
	for _, id := range withdrawn {
		p.toEditor(encode(request{JSONRPC: "2.0", Method: methodCancelRequest, Params: map[string]json.RawMessage{"requestId": id}}))
	}
	for _, sid := range sids {
		p.toEditor(tellLine(sid, notices, "warning", "Lost the connection to the gateway",
			fmt.Sprintf("Lost the connection to %s (%v); reconnecting.", p.gatewayName(), cause)))
	}
	return cause
}

// refuseHeld answers a request of the editor that cannot be held (the
// queue is full) with an error; a notification is dropped.
func (p *Proxy) refuseHeld(m message) {
	p.log.Warn("the editor's message not held: too many wait for the gateway", "method", m.Method, "held", p.opts.MaxHeld)
	if m.isRequest() {
		p.toEditor(errorLine(m.ID, codeInternal, fmt.Sprintf(
			"Internal error: not connected to %s, and %d messages already wait for it: send it again once the proxy has reconnected",
			p.gatewayName(), p.opts.MaxHeld)))
	}
}

// giveUp ends the Proxy after connect gave up (err): the requests held are
// answered with err, every open session is told, and err is returned.
func (p *Proxy) giveUp(err error) error {
	p.mu.Lock()
	p.state = stateEnded
	held := p.held
	p.held = nil
	sids, notices := p.sessions.ids(), p.notices
	p.mu.Unlock()
	p.log.Error("gave up connecting to the gateway", "err", err)
	for _, m := range held {
		if m.isRequest() {
			p.toEditor(errorLine(m.ID, codeInternal, "Internal error: "+err.Error()))
		}
	}
	for _, sid := range sids {
		p.toEditor(tellLine(sid, notices, "error", "Gave up reconnecting to the gateway",
			fmt.Sprintf("%v; acp-agent connect has ended: start the agent again.", err)))
	}
	return err
}

// end ends the Proxy when Run's context is done: at the end of the
// editor's input, with l connected, the prompts under way are cancelled
// (session/cancel) and the editor's requests under way are waited for (at
// most eofAnswerWait); then l (nil: none) is closed.
func (p *Proxy) end(ctx context.Context, l *link) {
	p.mu.Lock()
	graceful := l != nil && p.state == stateConnected && errors.Is(context.Cause(ctx), errEditorEnded)
	p.state = stateEnded
	var prompts []string
	for _, c := range p.calls.editor {
		if c.method == acpsdk.AgentMethodSessionPrompt && c.sessionID != "" {
			prompts = append(prompts, c.sessionID)
		}
	}
	p.mu.Unlock()
	if l == nil {
		return
	}
	if graceful {
		for _, sid := range prompts {
			_ = l.write(encode(request{JSONRPC: "2.0", Method: acpsdk.AgentMethodSessionCancel, Params: acpsdk.CancelNotification{SessionId: acpsdk.SessionId(sid)}}))
		}
		p.waitAnswers(l, eofAnswerWait)
	}
	l.close()
}

// waitAnswers waits until the editor's requests under way are answered,
// at most d, or l ends.
func (p *Proxy) waitAnswers(l *link, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		p.mu.Lock()
		n, changed := len(p.calls.editor), p.calls.changed
		p.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-l.done:
			return
		case <-timer.C:
			p.log.Warn("requests of the editor left unanswered at its end", "count", n, "waited", d)
			return
		}
	}
}

// noticesOn reports whether the editor takes notices.
func (p *Proxy) noticesOn() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notices
}
