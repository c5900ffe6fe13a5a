package acp

import (
	"context"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// The permission options offered for a tool call
// (https://agentclientprotocol.com/protocol/tool-calls#requesting-permission).
const (
	optAllowOnce   = "allow_once"
	optAllowAlways = "allow_always"
	optReject      = "reject_once"
)

// askFunc returns the gateway's AskFunc for a session: it sends
// session/request_permission to the client with allow once, allow always
// (this tool, this session) and reject. A cancelled turn, or a client that
// answers "cancelled", is PermissionCancelled.
func (a *Agent) askFunc(sessionID string) gateway.AskFunc {
	return func(ctx context.Context, req gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
		c := req.Call
		title := c.Title
		kind := acpsdk.ToolKind(c.Kind)
		status := acpsdk.ToolCallStatusPending
		always := req.Always
		if always == "" {
			always = fmt.Sprintf("Always allow %s in this session", c.Title)
		}
		call := acpsdk.ToolCallUpdate{ToolCallId: acpsdk.ToolCallId(c.ID), Title: &title, Kind: &kind, Status: &status}
		if c.RawInput != nil {
			call.RawInput = c.RawInput
		}
		if len(req.Content) > 0 {
			call.Content = toolContent(req.Content)
		}
		sid := sessionID
		if req.Subagent != "" && a.subagentsOn() { // the child's call, on its session
			sid = childID(sessionID, req.Subagent)
		}
		resp, err := acpsdk.SendRequest[acpsdk.RequestPermissionResponse](a.conn.connection(), ctx, acpsdk.ClientMethodSessionRequestPermission, permissionRequest{
			SessionID: acpsdk.SessionId(sid),
			ToolCall:  permissionToolCall{ToolCallUpdate: call, Name: c.Name},
			Options: []acpsdk.PermissionOption{
				{OptionId: optAllowOnce, Name: "Allow once", Kind: acpsdk.PermissionOptionKindAllowOnce},
				{OptionId: optAllowAlways, Name: always, Kind: acpsdk.PermissionOptionKindAllowAlways},
				{OptionId: optReject, Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce},
			},
		})
		if err != nil {
			if ctx.Err() != nil {
				return gateway.PermissionCancelled, nil
			}
			return gateway.PermissionCancelled, err
		}
		sel := resp.Outcome.Selected
		if sel == nil {
			return gateway.PermissionCancelled, nil
		}
		switch sel.OptionId {
		case optAllowOnce:
			return gateway.PermissionAllowOnce, nil
		case optAllowAlways:
			return gateway.PermissionAllowAlways, nil
		case optReject:
			return gateway.PermissionReject, nil
		}
		return gateway.PermissionReject, fmt.Errorf("client chose an unknown permission option %q", sel.OptionId)
	}
}
