package acp

import (
	"context"
	"log/slog"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// announcer is what one session's client is told outside the responses to
// its requests, and when: the session/update notifications of its opening,
// its turns' ends and its titles. The Agent keeps one per sessionId
// (Agent.announcer), from the session's first open or session/set_title on
// this connection until session/close or session/delete (Agent.forget); a
// reopened session keeps its announcer. It sends through the connection
// (conn) and calls nothing else. Safe for concurrent use.
//
// The ordering rules, each beside the fields that keep it:
//
//  1. The client hears of a session only once it knows its sessionId:
//     announced.
//  2. A turn's updates end in one order: its own updates, then
//     session_info_update, then its usage_update, then the session/prompt
//     response: turnUpdates.
//  3. A title goes once, and never between a turn's usage_update and its
//     response: title, answering and heldTitle.
type announcer struct {
	sid  string
	conn *conn
	log  *slog.Logger

	// mu guards the fields below; nothing is sent under it.
	mu sync.Mutex
	// announced (rule 1) is the channel of the session's last open, closed
	// once the client knows the session: for session/new and session/fork
	// once the response is written and the notifications after it are
	// sent (Agent.afterNewSession), for session/load and session/resume once
	// their notifications are sent, before the response. The session's
	// prompts wait for it before their turn (waitAnnounced, at most
	// announceWait); what the session core tells the session outside a turn
	// waits for the channel of its own open (frontEnd). nil: nothing to
	// wait for (the session was not opened on this connection).
	announced <-chan struct{}
	// title (rule 3) is the title last sent to the client, in a
	// session_info_update or a session/set_title response: a title equal
	// to it is not sent again.
	title string
	// answering (rule 3) counts the session's prompts being answered, from
	// the start of their handler until their response is written (announcer.answer).
	// While it is above zero a title the model writes is held (heldTitle,
	// holding) and sent once the last of those responses is written, so a
	// turn's usage_update stays the last update before its response.
	answering int
	heldTitle string
	holding   bool
}

// announcer returns the announcer of session sid, made on first use (see
// announcer).
func (a *Agent) announcer(sid string) *announcer {
	if v, ok := a.announcers.Load(sid); ok {
		return v.(*announcer)
	}
	v, _ := a.announcers.LoadOrStore(sid, &announcer{sid: sid, conn: a.conn, log: a.log})
	return v.(*announcer)
}

// opened records the channel of the session's latest open (rule 1).
func (n *announcer) opened(announced <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.announced = announced
}

// waitAnnounced waits until the client knows the session (rule 1), at most
// announceWait, or until ctx ends (the turn that follows then ends at
// once, cancelled).
func (n *announcer) waitAnnounced(ctx context.Context) {
	n.mu.Lock()
	announced := n.announced
	n.mu.Unlock()
	if announced == nil {
		return
	}
	timer := time.NewTimer(announceWait)
	defer timer.Stop()
	select {
	case <-announced:
	case <-ctx.Done():
	case <-timer.C:
		n.log.Warn("turn: the session's opening notifications are still not sent; going on", "session", n.sid)
	}
}

// sessionInfo returns the session_info_update that follows a committed
// turn (rule 2): updated, as session/list shows it, and title when the
// client has not been sent that title yet (rule 3).
func (n *announcer) sessionInfo(updated time.Time, title string) acpsdk.SessionUpdate {
	info := &acpsdk.SessionSessionInfoUpdate{SessionUpdate: "session_info_update", UpdatedAt: acpsdk.Ptr(updated.UTC().Format(time.RFC3339Nano))}
	if title := shownTitle(title); title != "" && n.swapTitle(title) != title {
		info.Title = acpsdk.Ptr(title)
	}
	return acpsdk.SessionUpdate{SessionInfoUpdate: info}
}

// swapTitle records title as the one last sent and returns the one before.
func (n *announcer) swapTitle(title string) (prev string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	prev, n.title = n.title, title
	return prev
}

// titleSet records the title a session/set_title response carries.
func (n *announcer) titleSet(title string) { n.swapTitle(title) }

// titleChanged sends the title the model wrote, as a session_info_update,
// unless it was sent already; while a prompt of the session is answered it
// is held until the response is written (rule 3).
func (n *announcer) titleChanged(ctx context.Context, title string) {
	n.mu.Lock()
	if n.answering > 0 {
		n.heldTitle, n.holding = title, true
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	n.sendTitle(ctx, title)
}

// sendTitle sends a session_info_update with title, unless the client was
// sent that title already.
func (n *announcer) sendTitle(ctx context.Context, title string) {
	if title = shownTitle(title); title == "" {
		return
	}
	if n.swapTitle(title) == title {
		return
	}
	n.conn.notify(ctx, n.sid, acpsdk.SessionUpdate{SessionInfoUpdate: &acpsdk.SessionSessionInfoUpdate{SessionUpdate: "session_info_update", Title: acpsdk.Ptr(title)}})
}

// beginAnswer counts a prompt of the session as being answered (rule 3).
func (n *announcer) beginAnswer() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.answering++
}

// endAnswer, called once a prompt's response is written, returns the title
// held meanwhile if that prompt was the last one being answered.
func (n *announcer) endAnswer() (title string, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.answering--; n.answering > 0 {
		return "", false
	}
	n.answering = 0
	title, ok = n.heldTitle, n.holding
	n.heldTitle, n.holding = "", false
	return title, ok
}

// turnUpdates are the announcements of one session/prompt (rule 2): its turn's
// updates go out through send as they come; its usage_update is held
// (hold) and sent by flush, which the handler calls after the turn's
// session_info_update and before it returns its response. So usage_update
// is the last update of a turn that has one.
type turnUpdates struct {
	n *announcer
	// ctx is the request's context without its cancel: the updates of a
	// cancelled turn (its calls' final tool_call_update) must still reach
	// the client.
	ctx  context.Context
	held []update // the turn's usage_update, for flush
}

// answer begins the announcements of a prompt whose request has context
// ctx: it counts as answered (rule 3) until ctx ends, which the engine
// does once the response is written; a title held meanwhile follows then.
func (n *announcer) answer(ctx context.Context) *turnUpdates {
	n.beginAnswer()
	afterAnswered(ctx, func() {
		if title, ok := n.endAnswer(); ok {
			n.sendTitle(context.WithoutCancel(ctx), title)
		}
	})
	return &turnUpdates{n: n, ctx: context.WithoutCancel(ctx)}
}

// send sends one of the turn's updates now.
func (t *turnUpdates) send(u update) { t.n.conn.send(t.ctx, t.n.sid, u) }

// hold keeps the turn's usage_update for flush.
func (t *turnUpdates) hold(us ...update) { t.held = append(t.held, us...) }

// flush sends what hold kept: the last updates before the response.
func (t *turnUpdates) flush() {
	for _, u := range t.held {
		t.send(u)
	}
}
