package runner

import (
	"context"
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

// startModelSpan starts the span of a model request of turn t, a child
// of the turn's in ctx (telemetry.StartModelRequest), with the session's
// tenant when it has one (SendRequest.Tenant).
func startModelSpan(ctx context.Context, t *turnState) (context.Context, trace.Span) {
	ctx, span := telemetry.StartModelRequest(ctx, t.model.Provider.Name(), modelName(t.model))
	if t.req.Tenant != "" {
		span.SetAttributes(telemetry.AttrTenant.String(t.req.Tenant))
	}
	return ctx, span
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

// auditCall hands the record of settled call p of req's session to the
// auditor, if any: req's Tenant and SessionID say whose it is. The runner's own tools (search_tools,
// read_tool_result: views of the conversation) are not audited.
func (r *Runner) auditCall(req gateway.SendRequest, p *pendingCall) {
	if r.opts.Audit == nil || p.res == nil || (p.tool != nil && ownTool(p.tool)) {
		return
	}
	rec := audit.Record{
		Time: p.began, Tenant: req.Tenant, SessionID: req.SessionID, CallID: p.call.ID,
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
