package acp

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// Session notices (the schema's Notice, stable in v1): to a client that
// advertised clientCapabilities.session.notices, the fate of each MCP
// server is told as a notice, not as an agent message: at session start a
// failed server (warning, with the reason), tools left out by the
// per-session limit (warning), a missing model API key (warning); later a
// server that connected or failed after the open (a sign-in, /login), a
// connection lost (warning) or back (info), and a sign-in link the editor
// could not open itself (info, with what to do). A client without the
// capability gets today's agent messages for what it must act on, and
// nothing for a connection lost or back (the log has them).

// noticesOn reports whether the client takes notices.
func (a *Agent) noticesOn() bool { return a.client.notices.Load() }

// openingNotices are the notices a new session starts with: its missing
// API key (keyNotice, "" for none), then per server, in order, a failure
// and tools left out.
func openingNotices(keyNotice string, servers []bridge.ServerStatus, toolLimit int) []notice {
	var out []notice
	if keyNotice != "" {
		out = append(out, notice{Severity: "warning", Title: "The model has no API key", Description: keyNotice})
	}
	for _, st := range servers {
		if st.State == bridge.StateFailed {
			out = append(out, failedNotice(st))
		}
		out = append(out, leftOutNotices(st, toolLimit)...)
	}
	return out
}

// failedNotice is the notice of a server that failed to connect: why, and
// for an http or sse server that /login tries again (not for one the
// managed policy refuses: trying again changes nothing).
func failedNotice(st bridge.ServerStatus) notice {
	what := "Its tools are not in this session."
	if (st.Transport == bridge.TransportHTTP || st.Transport == bridge.TransportSSE) && !errors.Is(st.Err, mcppolicy.ErrRefused) {
		what = fmt.Sprintf("Its tools are not in this session; /login %s tries again.", st.Name)
	}
	return notice{Severity: "warning", Title: fmt.Sprintf("MCP server %q failed", st.Name),
		Description: fmt.Sprintf("%s. %s", gateway.ErrorText(st.Err), what)}
}

// leftOutNotices is the notice of a server's tools left out by the
// per-session limit, or none.
func leftOutNotices(st bridge.ServerStatus, toolLimit int) []notice {
	if st.LeftOutCount == 0 {
		return nil
	}
	return []notice{{Severity: "warning", Title: fmt.Sprintf("%d tools of MCP server %q left out", st.LeftOutCount, st.Name),
		Description: session.LeftOutText(st, toolLimit) + "."}}
}

// changeNotices are the notices of a server's change after the open.
func changeNotices(e session.ServerEvent, toolLimit int) []notice {
	st := e.Status
	switch {
	case st.State == bridge.StateConnected && e.Link:
		return []notice{{Severity: "info", Title: fmt.Sprintf("MCP server %q is back", st.Name),
			Description: "Its connection was lost and is open again."}}
	case st.State == bridge.StateConnected:
		return append([]notice{{Severity: "info", Title: fmt.Sprintf("MCP server %q is connected", st.Name),
			Description: fmt.Sprintf("%d of its tools joined the session.", st.Tools)}}, leftOutNotices(st, toolLimit)...)
	case st.State == bridge.StateLost:
		return []notice{{Severity: "warning", Title: fmt.Sprintf("MCP server %q lost its connection", st.Name),
			Description: fmt.Sprintf("%s. The next call of one of its tools dials it again.", gateway.ErrorText(st.Err))}}
	case st.State == bridge.StateFailed && e.Link:
		return []notice{{Severity: "warning", Title: fmt.Sprintf("MCP server %q stopped", st.Name),
			Description: fmt.Sprintf("%s. Its tools fail until the session is opened again.", gateway.ErrorText(st.Err))}}
	case st.State == bridge.StateFailed:
		return []notice{failedNotice(st)}
	}
	return []notice{{Severity: "info", Title: fmt.Sprintf("MCP server %q is %s", st.Name, st.State)}}
}

// ServerChanged implements session.ServerEvents: notices to a client that
// takes them, else the agent message of a connect that ended after the
// open (a lost or returned connection is only logged). Both wait until
// the client knows the session.
func (f *frontEnd) ServerChanged(ctx context.Context, sid string, e session.ServerEvent) {
	if !f.a.noticesOn() {
		if !e.Link {
			f.Tell(ctx, sid, session.ServerStateText(e.Status))
		}
		return
	}
	if !f.waitAnnounced(ctx) {
		return
	}
	limit := f.a.core.Limits().ToolsPerSession
	for _, n := range changeNotices(e, limit) {
		f.a.conn.sendNotice(ctx, sid, n)
	}
}

// SignIn implements session.ServerEvents: the sign-in link as an info
// notice to a client that takes notices, else as an agent message, once
// the client knows the session.
func (f *frontEnd) SignIn(ctx context.Context, sid, server, authURL string) {
	if !f.a.noticesOn() {
		f.Tell(ctx, sid, session.SignInText(server, authURL))
		return
	}
	if !f.waitAnnounced(ctx) {
		return
	}
	f.a.conn.sendNotice(ctx, sid, notice{Severity: "info", Title: fmt.Sprintf("MCP server %q needs you to sign in", server),
		Description: fmt.Sprintf("Open %s to sign in. Its tools join this session once you have; /servers shows the link again.", authURL)})
}
