//lint:file-ignore SA1019 MCP logging is deprecated from protocol 2026-07-28 (SEP-2577), but clients still ask for it in its deprecation window.

package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// capabilities are the server's, each exactly what it answers: tools
// (ask_agent; the list never changes), logging (ask_agent's tool calls and
// failures, see run.emit and run.logEnd, at the level the client asks for),
// and prompts and resources without any: their lists are empty, a get or a
// read is "not found". Those two are declared because the server answers
// their methods (go-sdk does), and a server that answers prompts/list must
// declare prompts (SEP-2575). No completions (completion/complete is Method
// not found), no subscriptions, no list changes.
var capabilities = &mcp.ServerCapabilities{
	Tools:     &mcp.ToolCapabilities{},
	Logging:   &mcp.LoggingCapabilities{},
	Prompts:   &mcp.PromptCapabilities{},
	Resources: &mcp.ResourceCapabilities{},
}

// level is the level of a log message to the client (an mcp.LoggingLevel).
type level string

// The levels ask_agent's log messages use.
const (
	levelInfo    level = "info"
	levelNotice  level = "notice"
	levelWarning level = "warning"
	levelError   level = "error"
)

// tell sends the client of ss a log message (notifications/message) about
// the conversation key, at level: go-sdk sends it only when the client
// asked for log messages at that level or a lower one (logging/setLevel,
// or the logLevel of a 2026-07-28 request's _meta, in ctx).
func (sv *conversations) tell(ctx context.Context, ss *mcp.ServerSession, lv level, msg, key string) {
	if ss == nil {
		return
	}
	err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(lv), Logger: "acp-agent", Data: map[string]any{"message": msg, "sessionKey": key}})
	if err != nil {
		sv.log.Debug("log message not sent", "sessionKey", key, "err", err)
	}
}
