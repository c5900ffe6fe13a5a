package acp

// _acp-agent/session/set_mcp_servers: a client's replacement of a running
// session's MCP servers, in the shape of ACP's proposed
// session/update_servers (agent-client-protocol PR #582): {sessionId,
// mcpServers}, the full list of the servers the client gives the session.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// methodSetMCPServers is the extension method that replaces a running
// session's MCP servers. Its name follows ACP's extensibility rule (a
// leading underscore and the agent's name).
const methodSetMCPServers = "_acp-agent/session/set_mcp_servers"

// MetaExtensions is the key of agentCapabilities._meta that lists the
// extension methods the agent serves: ["_acp-agent/session/set_mcp_servers"].
const MetaExtensions = "acp-agent/extensions"

// setMCPServersRequest is the params of methodSetMCPServers. mcpServers is
// read raw by withServers, as session/new reads it.
type setMCPServersRequest struct {
	SessionID acpsdk.SessionId `json:"sessionId"`
	Meta      map[string]any   `json:"_meta,omitempty"`
}

// setMCPServersResponse is its result: one entry per server of the
// request, in order, then one per server it removed.
type setMCPServersResponse struct {
	Servers []serverResult `json:"servers"`
}

// serverResult is what became of one server: action "added", "replaced",
// "unchanged" or "removed"; state "connected", "failed", "sign-in",
// … after it (absent for removed); its bridged tool count; error, why it
// failed or was refused.
type serverResult struct {
	Name   string `json:"name"`
	Action string `json:"action"`
	State  string `json:"state,omitempty"`
	Tools  int    `json:"tools"`
	Error  string `json:"error,omitempty"`
}

// setMCPServers serves methodSetMCPServers: the list is checked as
// session/new's mcpServers (an invalid one changes nothing: invalid
// params), then applied under the session's turn (after a running turn,
// so the tools change between turns), answered, and said to the user.
func (a *Agent) setMCPServers(ctx context.Context, p setMCPServersRequest, servers json.RawMessage) (setMCPServersResponse, error) {
	s, err := a.lookup(p.SessionID)
	if err != nil {
		return setMCPServersResponse{}, err
	}
	if servers == nil {
		return setMCPServersResponse{}, session.Invalidf("params.mcpServers is required: the full list of the session's servers ([] removes them all)")
	}
	specs, err := ParseMCPServers(servers)
	if err != nil {
		return setMCPServersResponse{}, err
	}
	var changes []session.ServerChange
	_, err = s.Turn(ctx, func(ctx context.Context) (gateway.StopReason, error) {
		var err error
		changes, err = s.SetServers(ctx, specs)
		return gateway.StopEndTurn, err
	})
	if err != nil {
		return setMCPServersResponse{}, err
	}
	out := setMCPServersResponse{Servers: make([]serverResult, 0, len(changes))}
	var lines []string
	for _, ch := range changes {
		r := serverResult{Name: ch.Name, Action: ch.Action}
		if ch.Err != nil {
			r.Error = gateway.ErrorText(ch.Err)
		} else if ch.Action != "removed" {
			r.State, r.Tools = ch.Status.State.String(), ch.Status.Tools
			if ch.Status.State == bridge.StateFailed {
				r.Error = gateway.ErrorText(ch.Status.Err)
			}
		}
		out.Servers = append(out.Servers, r)
		if ch.Action != "unchanged" || ch.Err != nil {
			lines = append(lines, session.ChangeText(ch))
		}
	}
	if len(lines) > 0 {
		a.tellAfter(ctx, string(p.SessionID), "MCP servers changed", strings.Join(lines, "\n"))
	}
	return out, nil
}

// tellAfter shows the user text (a notice titled title to a client that
// takes notices, else an agent message) once the response of the request
// of ctx is written.
func (a *Agent) tellAfter(ctx context.Context, sid, title, text string) {
	a.conn.afterResponse(ctx, func(bg context.Context) {
		if a.noticesOn() {
			a.conn.sendNotice(bg, sid, notice{Severity: "info", Title: title, Description: text})
			return
		}
		a.conn.notify(bg, sid, acpsdk.UpdateAgentMessageText(fmt.Sprintf("%s\n", text)))
	}, nil)
}
