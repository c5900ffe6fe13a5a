//lint:file-ignore SA1019 MCP logging is deprecated from protocol 2026-07-28 but servers still log this way in its deprecation window.

package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// newTestLogger returns a logger writing text lines at level and above to
// the returned buffer.
func newTestLogger(level slog.Level) (*slog.Logger, *testutil.Buffer) {
	buf := &testutil.Buffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level})), buf
}

// waitLog waits until the log holds want, for a generous deadline.
func waitLog(t *testing.T, buf *testutil.Buffer, want string) {
	t.Helper()
	buf.WaitFor(t, 20*time.Second, func(s string) bool { return strings.Contains(s, want) }, "the log never had %q:\n%s", want, buf)
}

// TestManager_ServerLogMessagesReachTheLog checks that a server's log
// messages reach the agent's log at the agent's level, on a 2025-11-25
// session (logging/setLevel) and on a 2026-07-28 one (the level in each
// request's _meta).
func TestManager_ServerLogMessagesReachTheLog(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts *mcp.ServerOptions
	}{{"latest", nil}, {"legacy", legacyServer()}} {
		t.Run(tt.name, func(t *testing.T) { testServerLogMessages(t, tt.opts) })
	}
}

func testServerLogMessages(t *testing.T, opts *mcp.ServerOptions) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "chatty", Version: "1"}, opts)
	srv.AddTool(&mcp.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, m := range []mcp.LoggingMessageParams{
			{Level: "debug", Logger: "db", Data: "debug detail"},
			{Level: "warning", Logger: "db", Data: "disk almost full"},
			{Level: "critical", Data: map[string]any{"code": 7}},
			{Level: "info", Data: strings.Repeat("x", 10000)},
			{Level: "error", Data: "done\nforged=line"},
		} {
			_ = req.Session.Log(ctx, &m)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	log, buf := newTestLogger(slog.LevelInfo)
	m := memManager(t, &Options{Logger: log}, map[string]*mcp.Server{"chatty": srv}, ServerSpec{Name: "chatty", Transport: TransportStdio})
	if _, err := toolByName(t, m, "mcp__chatty__work").Execute(t.Context(), "c", nil, nil); err != nil {
		t.Fatal(err)
	}
	waitLog(t, buf, `done\nforged=line`)
	out := buf.String()
	for _, want := range []string{
		`level=WARN msg="MCP server log" server=chatty mcpLevel=warning logger=db data="disk almost full"`,
		`level=ERROR msg="MCP server log" server=chatty mcpLevel=critical data="{\"code\":7}"`,
		`level=ERROR msg="MCP server log" server=chatty mcpLevel=error data="done\nforged=line"`,
		`… (10000 bytes)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "debug detail") {
		t.Error("a debug message reached an info log: logging/setLevel was not sent at info")
	}
	if strings.Contains(out, strings.Repeat("x", maxLogData+1)) {
		t.Error("the data was not bounded")
	}
}
