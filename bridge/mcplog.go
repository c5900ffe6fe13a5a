//lint:file-ignore SA1019 MCP logging is deprecated only from protocol 2026-07-28; the bridge negotiates 2025-11-25, where servers still log this way.

package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLogData bounds how much of one notifications/message data is logged.
const maxLogData = 2048

// MCP logging levels (RFC 5424 severities), from "Logging":
// https://modelcontextprotocol.io/specification/2025-11-25/server/utilities/logging
var mcpLevels = map[mcp.LoggingLevel]slog.Level{
	"debug":     slog.LevelDebug,
	"info":      slog.LevelInfo,
	"notice":    slog.LevelInfo,
	"warning":   slog.LevelWarn,
	"error":     slog.LevelError,
	"critical":  slog.LevelError,
	"alert":     slog.LevelError,
	"emergency": slog.LevelError,
}

// slogLevel maps an MCP logging level to the slog level it is logged at; an
// unknown level is logged at info.
func slogLevel(l mcp.LoggingLevel) slog.Level {
	if lvl, ok := mcpLevels[l]; ok {
		return lvl
	}
	return slog.LevelInfo
}

// mcpLevel returns the least severe MCP level whose messages log would
// record, for logging/setLevel: the server then sends nothing the agent's
// log would drop.
func mcpLevel(log *slog.Logger) mcp.LoggingLevel {
	ctx := context.Background()
	switch {
	case log.Enabled(ctx, slog.LevelDebug):
		return "debug"
	case log.Enabled(ctx, slog.LevelInfo):
		return "info"
	case log.Enabled(ctx, slog.LevelWarn):
		return "warning"
	}
	return "error"
}

// onLog logs a server's notifications/message in the agent's log, at the
// matching level, with the server's name (s.log carries it), the MCP level
// and logger name, and the data, cut to maxLogData bytes.
func (s *server) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	if p == nil {
		return
	}
	attrs := []any{"mcpLevel", string(p.Level)}
	if p.Logger != "" {
		attrs = append(attrs, "logger", p.Logger)
	}
	attrs = append(attrs, "data", logData(p.Data))
	s.log.Log(ctx, slogLevel(p.Level), "MCP server log", attrs...)
}

// logData renders data (a string, or any JSON value) for the log, at most
// maxLogData bytes, with a note of the full size when it was cut.
func logData(data any) string {
	var text string
	switch d := data.(type) {
	case string:
		text = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return "(unprintable data)"
		}
		text = string(b)
	}
	if len(text) <= maxLogData {
		return text
	}
	cut := maxLogData
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "… (" + strconv.Itoa(len(text)) + " bytes)"
}

// setLogLevel asks a server that declares the logging capability to send the
// messages log records (logging/setLevel); without it, servers may send
// nothing (go-sdk servers) or everything. A failure is logged, not fatal.
func (s *server) setLogLevel(ctx context.Context, cs *mcp.ClientSession) {
	res := cs.InitializeResult()
	if res == nil || res.Capabilities == nil || res.Capabilities.Logging == nil {
		return
	}
	level := mcpLevel(s.log)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		s.log.Debug("logging/setLevel failed; the server's log messages may be missing", "level", string(level), "err", err)
	}
}
