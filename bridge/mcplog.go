//lint:file-ignore SA1019 MCP logging is deprecated from protocol 2026-07-28 but servers still log this way in its deprecation window.

package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
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
// log would drop. ctx is the request's, for handlers that read it.
func mcpLevel(ctx context.Context, log *slog.Logger) mcp.LoggingLevel {
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
func (s *client) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
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
func (s *client) setLogLevel(ctx context.Context, cs *mcp.ClientSession) {
	res := cs.InitializeResult()
	if res == nil || res.Capabilities == nil || res.Capabilities.Logging == nil || newProtocol(res) {
		return // from 2026-07-28 the level rides on every request (sendLogLevel)
	}
	level := mcpLevel(ctx, s.log)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		s.log.Debug("logging/setLevel failed; the server's log messages may be missing", "level", string(level), "err", err)
	}
}

// newProtocol reports whether the session negotiated 2026-07-28 or later,
// where logging/setLevel is gone (SEP-2575).
func newProtocol(res *mcp.InitializeResult) bool {
	return res != nil && res.ProtocolVersion >= "2026-07-28"
}

// sendLogLevel is the client's sending middleware that does what
// logging/setLevel did before 2026-07-28: on a session at 2026-07-28 or later
// with a server that declares logging, every request carries the level
// setLogLevel would have set in _meta["io.modelcontextprotocol/logLevel"]
// (a server sends no log message for a request without it). A level the
// request already carries is kept.
func (s *client) sendLogLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		cs, ok := req.GetSession().(*mcp.ClientSession)
		if !ok || strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		res := cs.InitializeResult()
		params := req.GetParams()
		if !newProtocol(res) || res.Capabilities == nil || res.Capabilities.Logging == nil || params == nil || reflect.ValueOf(params).IsNil() {
			return next(ctx, method, req)
		}
		meta := params.GetMeta()
		if meta == nil {
			meta = map[string]any{}
		}
		if _, ok := meta[mcp.MetaKeyLogLevel]; !ok {
			meta[mcp.MetaKeyLogLevel] = mcpLevel(ctx, s.log)
			params.SetMeta(meta)
		}
		return next(ctx, method, req)
	}
}
