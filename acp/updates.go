package acp

import (
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// sessionUpdate maps a gateway event to its session/update
// (https://agentclientprotocol.com/protocol/prompt-turn#3-agent-reports-output
// and https://agentclientprotocol.com/protocol/tool-calls). It reports false
// for an event with nothing to send.
func sessionUpdate(ev gateway.Event) (acpsdk.SessionUpdate, bool) {
	switch ev.Kind {
	case gateway.EventTextDelta:
		return acpsdk.UpdateAgentMessageText(ev.Text), ev.Text != ""
	case gateway.EventThoughtDelta:
		return acpsdk.UpdateAgentThoughtText(ev.Text), ev.Text != ""
	}
	c := ev.Call
	if c == nil {
		return acpsdk.SessionUpdate{}, false
	}
	id := acpsdk.ToolCallId(c.ID)
	switch ev.Kind {
	case gateway.EventToolStart:
		return acpsdk.StartToolCall(id, c.Title,
			acpsdk.WithStartKind(acpsdk.ToolKind(c.Kind)),
			acpsdk.WithStartStatus(acpsdk.ToolCallStatusPending),
			acpsdk.WithStartRawInput(c.RawInput)), true
	case gateway.EventToolUpdate:
		opts := []acpsdk.ToolCallUpdateOpt{acpsdk.WithUpdateStatus(acpsdk.ToolCallStatus(c.Status))}
		if u := c.Update; u != nil {
			blocks := toolContent(u.Content)
			if len(blocks) == 0 {
				blocks = []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(progressText(u)))}
			}
			opts = append(opts, acpsdk.WithUpdateContent(blocks))
		}
		return acpsdk.UpdateToolCall(id, opts...), true
	case gateway.EventToolEnd:
		res := c.Result
		if res == nil {
			res = &gateway.Result{}
		}
		return acpsdk.UpdateToolCall(id,
			acpsdk.WithUpdateStatus(acpsdk.ToolCallStatus(c.Status)),
			acpsdk.WithUpdateContent(toolContent(res.Content)),
			acpsdk.WithUpdateRawOutput(rawOutput(res))), true
	}
	return acpsdk.SessionUpdate{}, false
}

// toolContent maps result blocks to tool_call content, one for one.
func toolContent(content []gateway.Content) []acpsdk.ToolCallContent {
	out := make([]acpsdk.ToolCallContent, 0, len(content))
	for _, c := range content {
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
