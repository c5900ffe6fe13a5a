package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// A session's life beyond new, load, resume and close: session/delete,
// the unstable session/fork and session/set_title, and the
// session_info_update that follows each turn (sessionInfo; its place among
// the turn's last updates is the announcer's rule 2, announce.go: the
// updatedAt sent is the one session/list shows).

// deleteSession serves session/delete (sessionCapabilities.delete): a live
// session is ended first, as session/close ends it (its prompt is
// answered cancelled), then the stored session, its transcript, usage and
// compaction records are deleted (session.Core.Delete). An unknown
// sessionId is resource-not-found (-32002). Through a gateway store, a
// session another replica is running a turn of is refused with the
// gateway's busy error.
func (a *Agent) deleteSession(ctx context.Context, p acpsdk.UnstableDeleteSessionRequest) (acpsdk.UnstableDeleteSessionResponse, error) {
	id := string(p.SessionId)
	live := a.core.Lookup(id) != nil
	err := a.core.Delete(ctx, id)
	if live {
		a.forget(id) // ended, whether the delete went through or not
	}
	if errors.Is(err, store.ErrNotFound) {
		return acpsdk.UnstableDeleteSessionResponse{}, toRequestError(unknownSession(p.SessionId, "no stored session has that id"))
	}
	if err != nil {
		if live {
			err = fmt.Errorf("%w (the session was ended: it is closed on this connection, and still stored)", err)
		}
		return acpsdk.UnstableDeleteSessionResponse{}, toRequestError(err)
	}
	a.log.Info("session/delete", "session", id)
	a.forget(id)
	return acpsdk.UnstableDeleteSessionResponse{}, nil
}

// forget drops what the agent keeps of session sid for its client (it was
// closed or deleted).
func (a *Agent) forget(sid string) {
	a.sessions.Delete(sid)
	a.announcers.Delete(sid)
	a.conn.forget(sid)
}

// forkSession serves the unstable session/fork (sessionCapabilities.fork):
// a new session, with a new sessionId, whose history is a copy of every
// committed turn of the source session (live or only stored; the schema
// has no field to fork at an earlier point, so the whole committed
// history), which the model sees as it saw the source's (compactions
// included). Its cwd, additionalDirectories and mcpServers are the
// request's, connected afresh as for session/new; it keeps the source's
// model and title; its usage totals start at zero. The notifications
// that follow session/new follow its response. An unknown source is
// resource-not-found (-32002). The request's systemPrompt (unstable) is
// not used: the agent's own system prompt stays.
func (a *Agent) forkSession(ctx context.Context, p acpsdk.UnstableForkSessionRequest, servers json.RawMessage) (acpsdk.UnstableForkSessionResponse, error) {
	if _, err := a.core.Store().Get(ctx, string(p.SessionId)); errors.Is(err, store.ErrNotFound) {
		return acpsdk.UnstableForkSessionResponse{}, toRequestError(unknownSession(p.SessionId, "no stored session has that id"))
	} else if err != nil {
		return acpsdk.UnstableForkSessionResponse{}, toRequestError(fmt.Errorf("reading the session store: %w", err))
	}
	own, err := ownServers(servers)
	if err != nil {
		return acpsdk.UnstableForkSessionResponse{}, err
	}
	s, err := a.open(ctx, session.OpenRequest{Fork: string(p.SessionId), Cwd: p.Cwd, AdditionalDirectories: p.AdditionalDirectories, Servers: own}, false)
	if errors.Is(err, store.ErrNotFound) { // deleted meanwhile
		return acpsdk.UnstableForkSessionResponse{}, toRequestError(unknownSession(p.SessionId, "no stored session has that id"))
	}
	if err != nil {
		return acpsdk.UnstableForkSessionResponse{}, toRequestError(err)
	}
	a.log.Info("session/fork", "session", s.ID(), "from", p.SessionId, "cwd", p.Cwd, "mcpServers", len(s.Servers()))
	resp := acpsdk.UnstableForkSessionResponse{SessionId: acpsdk.SessionId(s.ID()), Modes: modeState(s)}
	if opts := a.configOptions(s); len(opts) > 0 {
		// The same options in the unstable schema's type.
		b, err := json.Marshal(opts)
		if err == nil {
			err = json.Unmarshal(b, &resp.ConfigOptions)
		}
		if err != nil {
			return acpsdk.UnstableForkSessionResponse{}, toRequestError(fmt.Errorf("session/fork: configOptions: %w", err))
		}
	}
	return resp, nil
}

// setSessionTitle serves the unstable session/set_title
// (sessionCapabilities.title): the title of a session, live or only
// stored, is normalized (white space runs made one space, trimmed, at most
// session.MaxTitle characters) and stored before the response, which
// carries the stored title; the automatic title never replaces it. An
// empty title is invalid_params, an unknown session resource-not-found.
func (a *Agent) setSessionTitle(ctx context.Context, p setSessionTitleRequest) (setSessionTitleResponse, error) {
	title, err := a.core.SetTitle(ctx, string(p.SessionID), *p.Title)
	if errors.Is(err, store.ErrNotFound) {
		return setSessionTitleResponse{}, toRequestError(unknownSession(p.SessionID, "no stored session has that id"))
	}
	if err != nil {
		return setSessionTitleResponse{}, toRequestError(err)
	}
	a.log.Info("session/set_title", "session", p.SessionID)
	a.announcer(string(p.SessionID)).titleSet(title)
	return setSessionTitleResponse{Title: title}, nil
}

// sessionInfo returns the session_info_update that follows a committed
// turn of n's session (announcer.sessionInfo): its updatedAt, as
// session/list shows it, and its title when the client has not been sent
// that title yet. ok is false when the record cannot be read (logged).
func (a *Agent) sessionInfo(ctx context.Context, n *announcer) (u acpsdk.SessionUpdate, ok bool) {
	updated, title, live := a.core.Stamp(n.sid) // no read of the store on a turn's path
	if !live {
		rec, err := a.core.Store().Get(ctx, n.sid)
		if err != nil {
			a.log.Warn("session_info_update: reading the session's record failed", "session", n.sid, "err", err)
			return acpsdk.SessionUpdate{}, false
		}
		updated, title = rec.Updated, rec.Title
	}
	return n.sessionInfo(updated, title), true
}

// TitleChanged implements session.TitleWatcher: the title the model wrote
// after the session's first turn, as a session_info_update, once the
// client knows the session, unless it was sent that title already. While
// a prompt of the session is answered it waits for the response to be
// written (announcer.titleChanged), so that the prompt's usage_update
// stays the last update before its response.
func (f *frontEnd) TitleChanged(ctx context.Context, sid, title string) {
	if !f.waitAnnounced(ctx) {
		return
	}
	f.a.announcer(sid).titleChanged(ctx, title)
}

// shownTitle is a session's title as the client is shown it: one line of
// visible text (textsafe.Line), at most session.MaxTitle characters. Titles
// are made so when stored; this keeps a record written before that, or by
// another program, from reaching the editor with escape sequences.
func shownTitle(title string) string { return textsafe.Line(title, session.MaxTitle) }
