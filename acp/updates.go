package acp

import (
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// sessionUpdates maps a gateway event to its session/update notifications
// (https://agentclientprotocol.com/protocol/prompt-turn#3-agent-reports-output,
// https://agentclientprotocol.com/protocol/tool-calls and
// https://agentclientprotocol.com/protocol/agent-plan), in order: none for
// an event with nothing to send, one for most, and for a finished call that
// updates the plan its tool_call_update then the plan.
func sessionUpdates(ev gateway.Event) []update {
	switch ev.Kind {
	case gateway.EventTextDelta:
		if ev.Text == "" {
			return nil
		}
		return []update{sdkUpdate(acpsdk.UpdateAgentMessageText(ev.Text))}
	case gateway.EventThoughtDelta:
		if ev.Text == "" {
			return nil
		}
		return []update{sdkUpdate(acpsdk.UpdateAgentThoughtText(ev.Text))}
	case gateway.EventUsage:
		if ev.Usage == nil {
			return nil
		}
		return []update{sdkUpdate(usageUpdate(ev.Usage))}
	case gateway.EventCompaction:
		// As an agent message, only a compaction's end (completed or
		// failed) is told.
		if c := ev.Compaction; c == nil || c.Status != gateway.CompactionCompleted && c.Status != gateway.CompactionFailed {
			return nil
		}
		return []update{sdkUpdate(acpsdk.UpdateAgentMessageText(compactionText(ev.Compaction)))}
	}
	c := ev.Call
	if c == nil {
		return nil
	}
	id := acpsdk.ToolCallId(c.ID)
	switch ev.Kind {
	case gateway.EventToolStart:
		return []update{{ToolName: c.Name, SessionUpdate: acpsdk.StartToolCall(id, c.Title,
			acpsdk.WithStartKind(acpsdk.ToolKind(c.Kind)),
			acpsdk.WithStartStatus(startStatus(c.Status)),
			acpsdk.WithStartRawInput(c.RawInput))}}
	case gateway.EventToolUpdate:
		opts := []acpsdk.ToolCallUpdateOpt{acpsdk.WithUpdateStatus(acpsdk.ToolCallStatus(c.Status))}
		if u := c.Update; u != nil {
			blocks := append(showContent(u.Show), toolContent(u.Content)...)
			if len(blocks) == 0 {
				blocks = []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(progressText(u)))}
			}
			opts = append(opts, acpsdk.WithUpdateContent(blocks))
			if locs := showLocations(u.Show); locs != nil {
				opts = append(opts, acpsdk.WithUpdateLocations(locs))
			}
		}
		return []update{sdkUpdate(acpsdk.UpdateToolCall(id, opts...))}
	case gateway.EventToolEnd:
		res := c.Result
		if res == nil {
			res = &gateway.Result{}
		}
		opts := []acpsdk.ToolCallUpdateOpt{
			acpsdk.WithUpdateStatus(acpsdk.ToolCallStatus(c.Status)),
			acpsdk.WithUpdateContent(append(showContent(res.Show), toolContent(res.Content)...)),
			acpsdk.WithUpdateRawOutput(rawOutput(res)),
		}
		if locs := showLocations(res.Show); locs != nil {
			opts = append(opts, acpsdk.WithUpdateLocations(locs))
		}
		out := []update{sdkUpdate(acpsdk.UpdateToolCall(id, opts...))}
		if res.Show != nil && res.Show.Plan != nil {
			out = append(out, sdkUpdate(planUpdate(res.Show.Plan)))
		}
		return out
	}
	return nil
}

// startStatus is a tool_call's status: in_progress for a call that starts
// at once, else pending.
func startStatus(s gateway.ToolStatus) acpsdk.ToolCallStatus {
	if s == gateway.ToolInProgress {
		return acpsdk.ToolCallStatusInProgress
	}
	return acpsdk.ToolCallStatusPending
}

// showContent is the tool_call content a call's Show adds before its own
// blocks: a diff per changed file, then the terminals it ran in.
func showContent(sh *gateway.Show) []acpsdk.ToolCallContent {
	if sh == nil {
		return nil
	}
	out := make([]acpsdk.ToolCallContent, 0, len(sh.Diffs)+len(sh.Terminals))
	for _, d := range sh.Diffs {
		out = append(out, acpsdk.ToolCallContent{Diff: &acpsdk.ToolCallContentDiff{Type: "diff", Path: d.Path, OldText: d.OldText, NewText: d.NewText}})
	}
	for _, t := range sh.Terminals {
		out = append(out, acpsdk.ToolTerminalRef(t))
	}
	return out
}

// showLocations are the tool call locations of a Show, or nil.
func showLocations(sh *gateway.Show) []acpsdk.ToolCallLocation {
	if sh == nil || len(sh.Locations) == 0 {
		return nil
	}
	out := make([]acpsdk.ToolCallLocation, 0, len(sh.Locations))
	for _, l := range sh.Locations {
		loc := acpsdk.ToolCallLocation{Path: l.Path}
		if l.Line > 0 {
			line := l.Line
			loc.Line = &line
		}
		out = append(out, loc)
	}
	return out
}

// planUpdate is the "plan" session/update of a plan: the whole list.
func planUpdate(p *gateway.Plan) acpsdk.SessionUpdate {
	entries := make([]acpsdk.PlanEntry, 0, len(p.Entries))
	for _, e := range p.Entries {
		entries = append(entries, acpsdk.PlanEntry{Content: e.Content,
			Status: acpsdk.PlanEntryStatus(e.Status), Priority: acpsdk.PlanEntryPriority(e.Priority)})
	}
	return acpsdk.UpdatePlan(entries...)
}

// toolContent maps result blocks to tool_call content, one for one,
// leaving out the blocks added for the model alone (Content.ModelOnly: the
// structured content as JSON, which the client has in rawOutput), so a
// result is shown once.
func toolContent(content []gateway.Content) []acpsdk.ToolCallContent {
	out := make([]acpsdk.ToolCallContent, 0, len(content))
	for _, c := range content {
		if c.ModelOnly {
			continue
		}
		out = append(out, acpsdk.ToolContent(toACPContent(c)))
	}
	return out
}

// rawOutput is the rawOutput of a finished call: the tool's raw result (for
// an MCP tool, the whole CallToolResult), or, for a call that never reached
// its tool, the error text.
func rawOutput(res *gateway.Result) any {
	if res.Raw != nil {
		return res.Raw
	}
	out := map[string]any{"isError": res.IsError}
	if res.IsError && len(res.Content) > 0 && res.Content[0].Type == gateway.ContentText {
		out["error"] = res.Content[0].Text
	}
	return out
}

func progressText(u *gateway.ToolUpdate) string {
	s := fmt.Sprintf("progress %g", u.Progress)
	if u.Total > 0 {
		s = fmt.Sprintf("progress %g/%g", u.Progress, u.Total)
	}
	if u.Message != "" {
		s += ": " + u.Message
	}
	return s
}

// usageUpdate is the usage_update session/update of a turn's usage
// (UsageUpdate in the ACP v1 schema; acp-go-sdk's unstable
// SessionUsageUpdate): the tokens in the model's context, its window, and
// the session's cost so far when the model's prices are known.
func usageUpdate(r *gateway.UsageReport) acpsdk.SessionUpdate {
	u := &acpsdk.SessionUsageUpdate{SessionUpdate: "usage_update", Used: int(r.Used), Size: int(r.Size)}
	if r.Session.CostKnown() {
		u.Cost = &acpsdk.Cost{Amount: r.Session.Cost, Currency: "USD"}
	}
	return acpsdk.SessionUpdate{UsageUpdate: u}
}

// turnUsage is the usage of a session/prompt response (unstable Usage in
// the schema): the turn's tokens. InputTokens are the uncached ones, so
// that the four counts add up to TotalTokens.
func turnUsage(u gateway.Usage) *acpsdk.Usage {
	out := &acpsdk.Usage{InputTokens: int(u.InputTokens), OutputTokens: int(u.OutputTokens), TotalTokens: int(u.TotalTokens())}
	if u.CacheReadTokens > 0 {
		out.CachedReadTokens = new(int(u.CacheReadTokens))
	}
	if u.CacheWriteTokens > 0 {
		out.CachedWriteTokens = new(int(u.CacheWriteTokens))
	}
	if u.ThoughtTokens > 0 {
		out.ThoughtTokens = new(int(u.ThoughtTokens))
	}
	return out
}

// compactionText tells the user of a completed or failed compaction, as
// an agent message (to a client without session.compaction).
func compactionText(c *gateway.CompactionReport) string {
	if c.Err != "" {
		return fmt.Sprintf("\n[The conversation could not be compacted to fit the model's context (%s); it goes on as it was.]\n", c.Err)
	}
	why := "it neared the model's context window"
	switch c.Reason {
	case "too_long":
		why = "the model refused it as too long"
	case "command":
		why = "you asked (/compact)"
	case "server":
		return fmt.Sprintf("\n[The model's provider compacted the conversation as it neared the context window (context.strategy server_compaction): the model now sees its summary and what follows (about %d → %d tokens). The full transcript is kept.]\n", c.Before, c.After)
	}
	return fmt.Sprintf("\n[Compacted the conversation because %s: the model now sees a summary of the earlier messages and the recent ones verbatim (about %d → %d tokens). The full transcript is kept.]\n", why, c.Before, c.After)
}
