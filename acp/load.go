package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// loadSession serves session/load
// (https://agentclientprotocol.com/protocol/session-setup#loading-sessions):
// the stored transcript is replayed as session/update notifications before
// the response, the request's mcpServers are connected with a fresh manager,
// and the model continues with the restored history. A session still live
// in this process is ended first.
func (a *Agent) loadSession(ctx context.Context, p acpsdk.LoadSessionRequest, servers json.RawMessage) (acpsdk.LoadSessionResponse, error) {
	own, err := a.reopen(ctx, acpsdk.AgentMethodSessionLoad, p.SessionId, p.Cwd, servers)
	if err != nil {
		return acpsdk.LoadSessionResponse{}, toRequestError(err)
	}
	id := string(p.SessionId)
	replay := func(turns []store.Turn) { a.replay(ctx, id, turns) }
	s, err := a.open(ctx, session.OpenRequest{ID: id, Cwd: p.Cwd, AdditionalDirectories: p.AdditionalDirectories, Servers: own, Replay: replay}, true)
	if err != nil {
		return acpsdk.LoadSessionResponse{}, toRequestError(err)
	}
	a.log.Info("session/load", "session", id, "cwd", p.Cwd, "mcpServers", len(s.Servers()))
	return acpsdk.LoadSessionResponse{ConfigOptions: a.configOptions(s), Modes: modeState(s)}, nil
}

// resumeSession serves session/resume: like session/load, without the
// replay.
func (a *Agent) resumeSession(ctx context.Context, p acpsdk.ResumeSessionRequest, servers json.RawMessage) (acpsdk.ResumeSessionResponse, error) {
	own, err := a.reopen(ctx, acpsdk.AgentMethodSessionResume, p.SessionId, p.Cwd, servers)
	if err != nil {
		return acpsdk.ResumeSessionResponse{}, toRequestError(err)
	}
	s, err := a.open(ctx, session.OpenRequest{ID: string(p.SessionId), Cwd: p.Cwd, AdditionalDirectories: p.AdditionalDirectories, Servers: own}, true)
	if err != nil {
		return acpsdk.ResumeSessionResponse{}, toRequestError(err)
	}
	a.log.Info("session/resume", "session", p.SessionId, "cwd", p.Cwd, "mcpServers", len(s.Servers()))
	return acpsdk.ResumeSessionResponse{ConfigOptions: a.configOptions(s), Modes: modeState(s)}, nil
}

// reopen checks that the session is stored (an unknown sessionId is said
// before anything wrong in the request's servers) and that cwd, when it is
// a directory (for a core whose clients are remote: when it is absolute),
// is the session's own: a session reopens where it was
// created, where its transcript's paths and its servers' roots are (a cwd
// that is no directory is the core's to refuse, saying so). Then it parses
// the request's own servers; the core reads the record again as it opens
// it.
func (a *Agent) reopen(ctx context.Context, method string, id acpsdk.SessionId, cwd string, servers json.RawMessage) ([]bridge.ServerSpec, error) {
	rec, err := a.core.Store().Get(ctx, string(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, unknownSession(id, "no stored session has that id")
	}
	if err != nil {
		return nil, fmt.Errorf("reading the session store: %w", err)
	}
	// A client on another machine (a gateway's) names paths of its own:
	// they are compared, not looked up here.
	isDir := func() bool { fi, err := os.Stat(cwd); return err == nil && fi.IsDir() }
	if filepath.IsAbs(cwd) && (a.core.RemoteClients() || isDir()) && filepath.Clean(cwd) != filepath.Clean(rec.Cwd) {
		return nil, session.Invalidf("%s: cwd %q is not the cwd of session %s, %q: a session reopens in the directory it was created in", method, cwd, id, rec.Cwd)
	}
	return ownServers(servers)
}

// replay sends the stored turns as session/update notifications: each user
// message as user_message_chunk, the model's thoughts and text as
// agent_thought_chunk and agent_message_chunk, and each tool call as a
// tool_call followed by a tool_call_update with its final status, content
// and rawOutput. The notifications are paced (see pace.go).
func (a *Agent) replay(ctx context.Context, sessionID string, turns []store.Turn) {
	for _, u := range replayUpdates(turns, sessionID, a.subagentsOn()) {
		a.conn.notifyPaced(ctx, sessionID, u)
	}
}

// Replay implements session.Replayer: the turns of a session that another
// replica ran since this one opened it, replayed (as session/load does)
// before the prompt turn that found them, once the client knows the
// session.
func (f *frontEnd) Replay(ctx context.Context, sid string, turns []store.Turn) {
	if f.waitAnnounced(ctx) {
		f.a.replay(ctx, sid, turns)
	}
}

// replayUpdates maps stored turns of session sid to the session/updates
// that replay them; subagents, when the client shows child sessions, adds
// each task call's child run before the call's end (subagents.go).
func replayUpdates(turns []store.Turn, sid string, subagents bool) []update {
	var out []update
	for _, t := range turns {
		out = append(out, replayTurn(t.Messages, sid, subagents)...)
	}
	return out
}

// replayTurn maps one turn's messages to the session/updates that replay
// them (see replayUpdates).
func replayTurn(msgs []gateway.Message, sid string, subagents bool) []update {
	var out []update
	// How each call was shown, from its tool message.
	shown := map[string]gateway.Message{}
	for _, m := range msgs {
		if m.Role == gateway.RoleTool {
			shown[m.ToolCallID] = m
		}
	}
	for _, m := range msgs {
		switch m.Role {
		case gateway.RoleUser:
			for _, c := range m.Content {
				out = append(out, sdkUpdate(acpsdk.UpdateUserMessage(toACPContent(c))))
			}
		case gateway.RoleAssistant:
			if m.Thinking != "" {
				out = append(out, sdkUpdate(acpsdk.UpdateAgentThoughtText(m.Thinking)))
			}
			for _, c := range m.Content {
				out = append(out, sdkUpdate(acpsdk.UpdateAgentMessage(toACPContent(c))))
			}
			for _, c := range m.ToolCalls {
				title, kind := c.Name, gateway.ToolKindOther
				if tm, ok := shown[c.ID]; ok && tm.ToolTitle != "" {
					title, kind = tm.ToolTitle, tm.ToolKind
				}
				title = textsafe.Line(title, gateway.MaxToolTitle) // a stored title of before titles were made so
				out = append(out, update{ToolName: c.Name, SessionUpdate: acpsdk.StartToolCall(acpsdk.ToolCallId(c.ID), title,
					acpsdk.WithStartKind(acpsdk.ToolKind(kind)),
					acpsdk.WithStartStatus(acpsdk.ToolCallStatusPending),
					acpsdk.WithStartRawInput(c.Args))})
			}
		case gateway.RoleTool:
			res := m.Result
			if res == nil {
				res = &gateway.Result{}
			}
			if res.Subagent != nil && subagents {
				out = append(out, replaySubagent(sid, res.Subagent)...)
			}
			status := gateway.ToolCompleted
			if res.IsError {
				status = gateway.ToolFailed
			}
			out = append(out, sessionUpdates(gateway.Event{Kind: gateway.EventToolEnd, Call: &gateway.ToolCallEvent{ID: m.ToolCallID, Status: status, Result: res}})...)
		}
	}
	return out
}

// listSessions serves session/list: stored sessions, newest first, 50 a
// page, optionally of one cwd.
func (a *Agent) listSessions(ctx context.Context, p acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	opts := store.ListOptions{}
	if p.Cwd != nil {
		opts.Cwd = *p.Cwd
	}
	if p.Cursor != nil {
		opts.Cursor = *p.Cursor
	}
	if err := a.core.Flush(ctx); err != nil { // the titles and times of turns just ended
		return acpsdk.ListSessionsResponse{}, toRequestError(err)
	}
	recs, next, err := a.core.Store().List(ctx, opts)
	if errors.Is(err, store.ErrBadCursor) {
		return acpsdk.ListSessionsResponse{}, toRequestError(session.Invalidf("%v", err))
	}
	if err != nil {
		return acpsdk.ListSessionsResponse{}, toRequestError(fmt.Errorf("reading the session store: %w", err))
	}
	resp := acpsdk.ListSessionsResponse{Sessions: make([]acpsdk.SessionInfo, 0, len(recs))}
	for _, r := range recs {
		info := acpsdk.SessionInfo{SessionId: acpsdk.SessionId(r.ID), Cwd: r.Cwd, UpdatedAt: acpsdk.Ptr(r.Updated.UTC().Format(time.RFC3339Nano))}
		if title := shownTitle(r.Title); title != "" {
			info.Title = acpsdk.Ptr(title)
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}
