package acp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// TestNotices: each fate of a server is one notice of the right severity,
// its title naming the server and standing alone, its description saying
// why and what to do.
func TestNotices(t *testing.T) {
	boom := errors.New("connection refused")
	cases := []struct {
		name     string
		got      []notice
		severity []string
		title    []string
		desc     []string
	}{
		{"opening: key, failed http, left out",
			openingNotices("Set ANTHROPIC_API_KEY or run acp-agent login.", []bridge.ServerStatus{
				{Name: "web", Transport: bridge.TransportHTTP, State: bridge.StateFailed, Err: boom},
				{Name: "big", State: bridge.StateConnected, Tools: 5, LeftOutCount: 2, LeftOut: []string{"a", "b"}},
				{Name: "ok", State: bridge.StateConnected, Tools: 3},
			}, 7),
			[]string{"warning", "warning", "warning"},
			[]string{"The model has no API key", `MCP server "web" failed`, `2 tools of MCP server "big" left out`},
			[]string{"acp-agent login", "connection refused. Its tools are not in this session; /login web tries again.", "limits.toolsPerSession"}},
		{"opening: failed stdio has no /login",
			openingNotices("", []bridge.ServerStatus{{Name: "cli", Transport: bridge.TransportStdio, State: bridge.StateFailed, Err: boom}}, 100),
			[]string{"warning"}, []string{`MCP server "cli" failed`}, []string{"connection refused. Its tools are not in this session."}},
		{"opening: refused by the managed policy, no /login",
			openingNotices("", []bridge.ServerStatus{{Name: "web", Transport: bridge.TransportHTTP, State: bridge.StateFailed,
				Err: &mcppolicy.RefusedError{Server: "web", Source: "/etc/acp-agent/managed.json", Denied: &mcppolicy.Rule{URL: "https://*", Where: "deniedMcpServers[0]"}}}}, 100),
			[]string{"warning"}, []string{`MCP server "web" failed`},
			[]string{`server "web" is refused by the managed policy /etc/acp-agent/managed.json: deniedMcpServers[0] {serverUrl: "https://*"}. Its tools are not in this session.`}},
		{"signed in after the open",
			changeNotices(session.ServerEvent{Status: bridge.ServerStatus{Name: "web", State: bridge.StateConnected, Tools: 4}}, 100),
			[]string{"info"}, []string{`MCP server "web" is connected`}, []string{"4 of its tools joined"}},
		{"lost",
			changeNotices(session.ServerEvent{Status: bridge.ServerStatus{Name: "web", State: bridge.StateLost, Err: boom}, Link: true}, 100),
			[]string{"warning"}, []string{`MCP server "web" lost its connection`}, []string{"connection refused. The next call"}},
		{"back",
			changeNotices(session.ServerEvent{Status: bridge.ServerStatus{Name: "web", State: bridge.StateConnected, Tools: 4}, Link: true}, 100),
			[]string{"info"}, []string{`MCP server "web" is back`}, []string{"open again"}},
		{"stdio stopped",
			changeNotices(session.ServerEvent{Status: bridge.ServerStatus{Name: "cli", State: bridge.StateFailed, Err: boom}, Link: true}, 100),
			[]string{"warning"}, []string{`MCP server "cli" stopped`}, []string{"connection refused. Its tools fail"}},
	}
	for _, c := range cases {
		if len(c.got) != len(c.title) {
			t.Errorf("%s: %d notices %+v, want %d", c.name, len(c.got), c.got, len(c.title))
			continue
		}
		for i, n := range c.got {
			if n.Severity != c.severity[i] || n.Title != c.title[i] || !strings.Contains(n.Description, c.desc[i]) {
				t.Errorf("%s: notice %d = %+v, want %s %q with %q", c.name, i, n, c.severity[i], c.title[i], c.desc[i])
			}
		}
	}
}

// To a client that did not advertise session.notices, a connection lost or
// back is not shown (the log has it), and a connect that ended after the
// open is the agent message of before.
func TestNotices_WithoutTheCapability(t *testing.T) {
	h := startAgent(t)
	sid := h.newSession()
	announced := make(chan struct{})
	close(announced)
	f := &frontEnd{a: h.agent, announced: announced}
	before := len(h.client.Updates())
	f.ServerChanged(t.Context(), sid, session.ServerEvent{Status: bridge.ServerStatus{Name: "web", State: bridge.StateLost, Err: errors.New("reset")}, Link: true})
	f.ServerChanged(t.Context(), sid, session.ServerEvent{Status: bridge.ServerStatus{Name: "web", State: bridge.StateConnected, Tools: 2}, Link: true})
	f.ServerChanged(t.Context(), sid, session.ServerEvent{Status: bridge.ServerStatus{Name: "web", State: bridge.StateConnected, Tools: 2}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := h.client.WaitFor(ctx, before, func(acpsdk.SessionNotification) bool { return true }); err != nil {
		t.Fatalf("no update sent: %v", err)
	}
	var got []string
	for _, n := range h.client.Updates()[before:] {
		switch {
		case n.Update.AgentMessageChunk != nil && n.Update.AgentMessageChunk.Content.Text != nil:
			got = append(got, n.Update.AgentMessageChunk.Content.Text.Text)
		default:
			got = append(got, "another update")
		}
	}
	if len(got) != 1 || got[0] != `MCP server "web" is connected: 2 tools joined the session.`+"\n" {
		t.Errorf("updates %q, want only the agent message of the connect", got)
	}
}
