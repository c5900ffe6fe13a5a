package connect

import (
	"encoding/json"
	"errors"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
)

// methodCancelRequest is ACP's $/cancel_request, which either side sends
// to withdraw a request of its own.
const methodCancelRequest = "$/cancel_request"

// The editor's side: messages go to the gateway as they are, except the
// mcpServers of session/new, load, resume and fork (sessions.go), and
// responses to the gateway's requests, whose id goes back to the gateway's
// when the editor saw another (calls.go). While the Proxy is not
// connected, requests and notifications are held (reconnect.go).

// fromEditor routes one message of the editor.
func (p *Proxy) fromEditor(raw []byte) {
	m, ok := decode(raw)
	if ok && m.isResponse() {
		p.editorResponse(m)
		return
	}
	p.mu.Lock()
	switch p.state {
	case stateConnected:
	case stateEnded:
		p.mu.Unlock()
		p.log.Debug("the editor's message dropped: the proxy is ending", "method", m.Method)
		return
	default:
		if len(p.held) < p.opts.MaxHeld {
			p.held = append(p.held, m)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		p.refuseHeld(m)
		return
	}
	l := p.link
	out := p.prepare(m)
	p.mu.Unlock()
	_ = l.write(out) // a failure ends the Link: the drop answers the request
}

// prepare returns m as it goes to the gateway on the current Link,
// recording a request among the editor's calls (a drop answers them all)
// and, for initialize, its params. The Proxy's mu is held.
func (p *Proxy) prepare(m message) []byte {
	if !m.isRequest() {
		return m.raw // notifications, and what is not JSON-RPC: the gateway judges
	}
	c := &editorCall{id: m.ID, method: m.Method, sessionID: param(m.Params, "sessionId")}
	out := m.raw
	switch {
	case m.Method == acpsdk.AgentMethodInitialize:
		p.init, p.notices = m.Params, noticesOn(m.Params)
	case opensSession[m.Method]:
		params, op := p.sessions.rewrite(m.Method, m.Params)
		c.open = op
		if len(op.rec.entries) > 0 {
			if b, err := withParams(m.raw, params); err == nil {
				out = b
			}
		}
	}
	p.calls.editor[m.key()] = c
	return out
}

// editorResponse sends the editor's answer to a request of the gateway,
// under the gateway's id, if that request came on the current Link; an
// answer to one of an earlier Link is dropped (that request died with its
// Link).
func (p *Proxy) editorResponse(m message) {
	p.mu.Lock()
	c := p.calls.gateway[m.key()]
	delete(p.calls.gateway, m.key())
	l := p.link
	p.mu.Unlock()
	if c == nil || l == nil || c.gen != l.gen {
		p.log.Debug("the editor's response dropped: its request is not waiting (it came on an earlier connection to the gateway)", "id", string(m.ID))
		return
	}
	out := m.raw
	if idKey(c.editorID) != idKey(c.id) {
		b, err := withID(m.raw, c.id)
		if err != nil {
			return
		}
		out = b
	}
	_ = l.write(out)
}

// editorTooLarge answers a message of the editor over acp.MaxFrameBytes,
// which was not kept (the gateway would refuse it too), when its id can
// be read.
func (p *Proxy) editorTooLarge(tl *acp.TooLargeError) {
	m, ok := decode(tl.Head)
	p.log.Warn("a message of the editor is over the size limit", "bytes", tl.Size, "method", m.Method)
	if ok && m.isRequest() {
		p.toEditor(errorLine(m.ID, -32600, "Invalid request: "+tl.Error()))
	}
}

// The gateway's side: messages go to the editor as they are, except the
// responses to the proxy's own requests, the messages of its local
// servers (local.go), the session/update of a session a session/load is
// re-attaching, and a request whose id the editor must see changed.

// readLink reads the gateway's messages on l until the Link ends.
func (p *Proxy) readLink(l *link) {
	defer close(l.done)
	for {
		raw, err := l.ReadMessage()
		var tl *acp.TooLargeError
		switch {
		case errors.As(err, &tl):
			p.gatewayTooLarge(l, tl)
		case err != nil:
			l.fail(err)
			return
		default:
			p.fromGateway(l, raw)
		}
	}
}

// fromGateway routes one message of the gateway on l.
func (p *Proxy) fromGateway(l *link, raw []byte) {
	m, ok := decode(raw)
	switch {
	case !ok:
		p.toEditor(raw)
	case m.isResponse():
		p.gatewayResponse(l, m)
	case m.Method == acpsdk.ClientMethodMcpConnect && strings.HasPrefix(param(m.Params, "acpId"), p.prefix),
		(m.Method == mcpacp.MethodMessage || m.Method == acpsdk.ClientMethodMcpDisconnect) && hasIDPrefix(member(m.Params, "connectionId"), p.prefix):
		l.local.deliver(raw)
	case m.Method == methodCancelRequest && m.isNotification():
		p.gatewayCancel(l, m)
	case m.isRequest():
		p.mu.Lock()
		id := p.calls.gatewayRequest(l.gen, m.ID, p.prefix)
		p.mu.Unlock()
		out := raw
		if idKey(id) != m.key() {
			b, err := withID(raw, id)
			if err != nil {
				return
			}
			out = b
		}
		p.toEditor(out)
	case m.Method == acpsdk.ClientMethodSessionUpdate && p.droppingUpdates(param(m.Params, "sessionId")):
		// A session/load's replay while it re-attaches: the editor has it.
	default:
		p.toEditor(raw)
	}
}

// droppingUpdates reports whether session sid's updates are dropped: a
// child session's (a subagent's, "<parent>/task-…") with its parent's.
func (p *Proxy) droppingUpdates(sid string) bool {
	sid, _, _ = strings.Cut(sid, "/")
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropping[sid]
}

// gatewayResponse routes a response of the gateway: to the proxy's own
// request, to the editor's (recording what it opened or closed), to the
// Mux's, or else to the editor, whose id it may be.
func (p *Proxy) gatewayResponse(l *link, m message) {
	key := m.key()
	p.mu.Lock()
	if oc := p.calls.own[key]; oc != nil {
		delete(p.calls.own, key)
		if oc.drop != "" {
			delete(p.dropping, oc.drop) // the replay is over: what follows is new
		}
		p.mu.Unlock()
		oc.done <- m
		return
	}
	if c := p.calls.answered(key); c != nil {
		stop := p.record(c, m)
		p.mu.Unlock()
		if len(stop) > 0 {
			l.local.stopEntries(stop)
		}
		p.toEditor(m.raw)
		return
	}
	p.mu.Unlock()
	switch {
	case hasIDPrefix(m.ID, p.muxPrefix()):
		l.local.deliver(m.raw)
	case hasIDPrefix(m.ID, p.prefix):
		p.log.Debug("a response to a request of the proxy no longer waited for", "id", string(m.ID))
	default:
		p.toEditor(m.raw)
	}
}

// record notes what the answer m to the editor's call c changed: a
// session opened (or not), closed or deleted, the gateway's capabilities.
// It returns the local entries whose servers must stop. The Proxy's mu is
// held.
func (p *Proxy) record(c *editorCall, m message) (stop []string) {
	ok := len(m.Result) > 0 && len(m.Error) == 0
	switch {
	case c.open != nil && ok:
		sid := c.open.sessionID
		if c.method == acpsdk.AgentMethodSessionNew || c.method == acpsdk.AgentMethodSessionFork {
			sid = param(m.Result, "sessionId")
		}
		return p.sessions.opened(sid, c.open)
	case c.open != nil:
		p.sessions.failed(c.open)
	case ok && (c.method == acpsdk.AgentMethodSessionClose || c.method == acpsdk.AgentMethodSessionDelete):
		return p.sessions.closed(c.sessionID)
	case ok && c.method == acpsdk.AgentMethodInitialize:
		p.resume = resumeOn(m.Result)
	}
	return nil
}

// gatewayCancel routes the gateway's $/cancel_request: to the editor for
// a request of the gateway waiting there (under the id the editor got),
// else to the Mux, whose request it may be.
func (p *Proxy) gatewayCancel(l *link, m message) {
	p.mu.Lock()
	c := p.calls.gatewayByID(l.gen, member(m.Params, "requestId"))
	p.mu.Unlock()
	if c == nil {
		l.local.deliver(m.raw)
		return
	}
	if idKey(c.editorID) == idKey(c.id) {
		p.toEditor(m.raw)
		return
	}
	p.toEditor(encode(request{JSONRPC: "2.0", Method: methodCancelRequest, Params: map[string]json.RawMessage{"requestId": c.editorID}}))
}

// gatewayTooLarge handles a message of the gateway over acp.MaxFrameBytes,
// which was not kept: a response to the editor becomes an error response,
// a request gets an error back; anything else is dropped.
func (p *Proxy) gatewayTooLarge(l *link, tl *acp.TooLargeError) {
	m, ok := decode(tl.Head)
	p.log.Warn("a message of the gateway is over the size limit", "bytes", tl.Size, "method", m.Method)
	if !ok {
		return
	}
	switch {
	case m.isResponse():
		p.mu.Lock()
		c := p.calls.answered(m.key())
		p.mu.Unlock()
		if c != nil {
			p.toEditor(errorLine(c.id, codeInternal, "Internal error: the gateway's response is too large for the editor: "+tl.Error()))
		}
	case m.isRequest():
		_ = l.write(errorLine(m.ID, codeInternal, "Internal error: the request is too large for the editor: "+tl.Error()))
	}
}
