package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

func TestServersText_LeftOutIsCountedNotListed(t *testing.T) {
	out := ServersText([]bridge.ServerStatus{
		{Name: "huge", Transport: bridge.TransportStdio, State: bridge.StateConnected, Tools: 90, LeftOutCount: 4910, LeftOut: []string{"t90", "t91", "t92"}},
		{Name: "small", Transport: bridge.TransportStdio, State: bridge.StateConnected, Tools: 10},
	}, 100)
	want := `MCP server "huge": 4910 of its 5000 tools left out, over the limit of 100 tools per session shared between the session's servers (config limits.toolsPerSession); e.g. t90, t91, t92, …`
	if !strings.Contains(out, want) {
		t.Errorf("/servers =\n%s\nwant a line %q", out, want)
	}
	if strings.Count(out, "left out") != 1 {
		t.Errorf("/servers =\n%s\nwant one left-out line", out)
	}
}

func TestServersText_LostServer(t *testing.T) {
	out := ServersText([]bridge.ServerStatus{
		{Name: "web", Transport: bridge.TransportHTTP, State: bridge.StateLost, Tools: 4, Err: errors.New("dialing again failed: connection refused"), RetryAt: time.Now().Add(8 * time.Second)},
		{Name: "api", Transport: bridge.TransportHTTP, State: bridge.StateLost, Tools: 2, Err: errors.New("connection lost")},
	}, 100)
	for _, want := range []string{
		"- web: lost (http, 4 tools): dialing again failed: connection refused; the first call after 8s dials it again",
		"- api: lost (http, 2 tools): connection lost; the next call dials it again",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/servers =\n%s\nwant a line %q", out, want)
		}
	}
}

// A server the URL policy refused: /servers and the message of a server
// that failed after the session opened say which setting would allow it.
func TestServersText_RefusedServerSaysTheSetting(t *testing.T) {
	_, err := (&urlpolicy.Policy{}).CheckURL("https://10.0.0.7/mcp")
	st := bridge.ServerStatus{Name: "corp", Transport: bridge.TransportHTTP, State: bridge.StateFailed, Err: err}
	const refusal = `URL "https://10.0.0.7/mcp" refused: private network address 10.0.0.7 (set sandbox.allowPrivateNetworks to allow it)`
	if out, want := ServersText([]bridge.ServerStatus{st}, 100), "- corp: failed (http): "+refusal; !strings.Contains(out, want) {
		t.Errorf("/servers =\n%s\nwant a line %q", out, want)
	}
	if got, want := ServerStateText(st), `MCP server "corp" failed: `+refusal+"; /login corp tries again.\n"; got != want {
		t.Errorf("state change = %q\nwant %q", got, want)
	}
}

// TestCommands_FrontEndHandlers: the front ends answer exactly the commands
// the table marks FrontEnd.
func TestCommands_FrontEndHandlers(t *testing.T) {
	frontEnd := 0
	for _, c := range runner.Commands() {
		if _, ok := frontEndCommands[c.Name]; ok != c.FrontEnd {
			t.Errorf("/%s: FrontEnd %v, handler here %v", c.Name, c.FrontEnd, ok)
		}
		if c.FrontEnd {
			frontEnd++
		}
	}
	if len(frontEndCommands) != frontEnd {
		t.Errorf("%d front-end handlers for %d front-end commands", len(frontEndCommands), frontEnd)
	}
}
