package runner

import (
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/audit"
	"github.com/seed02d3eb6b/acp-agent/internal/telemetry"
)

// This file holds the runner's hooks for operators: the span of a model
// request and the audit record of a tool call.

// modelName is the provider's name of model m: its ID without the
// "provider:" prefix.
func modelName(m gateway.Model) string {
	if _, name, ok := strings.Cut(m.ID, ":"); ok && name != "" {
		return name
	}
	return m.ID
}

// endModelSpan ends the span of a model request with what resp tells.
func endModelSpan(span trace.Span, resp *gateway.Response, err error) {
	var u *telemetry.Usage
	finish := ""
	if resp != nil {
		if resp.Usage.Requests > 0 {
			u = &telemetry.Usage{Input: resp.Usage.PromptTokens(), Output: resp.Usage.OutputTokens,
				CacheRead: resp.Usage.CacheReadTokens, CacheWrite: resp.Usage.CacheWriteTokens}
		}
		switch {
		case len(resp.Message.ToolCalls) > 0:
			finish = "tool_calls"
		case resp.StopReason != "":
			finish = string(resp.StopReason)
		default:
			finish = string(gateway.StopEndTurn)
		}
	}
	telemetry.EndModelRequest(span, u, finish, err)
}

// SplitSessionKey returns the gateway tenant of a session key and the
// session's id: a remote gateway's keys are "tenant:<tenant>|<key>", an
// ACP session's key is "acp:<sessionId>" unless its client supplied one
// (then the id is that key), and an MCP front end's conversation's is
// "mcp:<sessionId>".
func SplitSessionKey(key string) (tenant, sessionID string) {
	if rest, ok := strings.CutPrefix(key, "tenant:"); ok {
		if t, k, ok := strings.Cut(rest, "|"); ok {
			tenant, key = t, k
		}
	}
	for _, prefix := range []string{"acp:", "mcp:"} {
		if id, ok := strings.CutPrefix(key, prefix); ok {
			return tenant, id
		}
	}
	return tenant, key
}

// auditCall hands the record of settled call p of req's session to the
// auditor, if any. The runner's own tools (search_tools,
// read_tool_result: views of the conversation) are not audited.
func (r *Runner) auditCall(req gateway.SendRequest, p *pendingCall) {
	if r.opts.Audit == nil || p.res == nil || (p.tool != nil && ownTool(p.tool)) {
		return
	}
	tenant, sid := SplitSessionKey(req.SessionKey)
	rec := audit.Record{
		Time: p.began, Tenant: tenant, SessionID: sid, CallID: p.call.ID,
		Tool: p.call.Name, Permission: p.perm, Outcome: p.outcome(),
		Duration: p.ended.Sub(p.began), Arguments: p.call.Args, Result: p.res,
	}
	if p.tool != nil {
		rec.Server = p.tool.Group
	}
	r.opts.Audit.ToolCall(rec)
}

// outcome is how settled call p ended, for the audit log.
func (p *pendingCall) outcome() audit.Outcome {
	switch {
	case p.cancelled || p.perm == audit.PermissionCancelled:
		return audit.OutcomeCancelled
	case !p.ran:
		return audit.OutcomeNotRun
	case p.res.IsError:
		return audit.OutcomeFailed
	}
	return audit.OutcomeCompleted
}
