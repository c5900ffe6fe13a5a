//lint:file-ignore SA1019 MCP logging is deprecated from protocol 2026-07-28 (SEP-2577); ask_agent still logs in its deprecation window.

package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// TestLogging: ask_agent's tool calls reach a client that asked for log
// messages (logging/setLevel before 2026-07-28, the request's logLevel
// from it on) as notifications/message, at info; a client that asked for
// none, or for warnings only, gets none.
func TestLogging(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		level         mcp.LoggingLevel // "": none asked for
		want          bool
	}{
		{"setLevel info", "2025-11-25", "info", true},
		{"setLevel warning", "2025-11-25", "warning", false},
		{"no setLevel", "2025-11-25", "", false},
		{"logLevel info", "2026-07-28", "info", true},
		{"logLevel error", "2026-07-28", "error", false},
		{"no logLevel", "2026-07-28", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, setup{})
			var mu sync.Mutex
			var got []string
			var logged testutil.Signal // notified after each message
			cs := e.connectVersion(&mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
				mu.Lock()
				got = append(got, fmt.Sprintf("%s %v", req.Params.Level, req.Params.Data))
				mu.Unlock()
				logged.Notify()
			}}, tc.version)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			params := &mcp.CallToolParams{Arguments: map[string]any{"message": `/call mcp__kit__echo {"text":"hi"}`}}
			if tc.level != "" && tc.version < "2026-07-28" {
				if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: tc.level}); err != nil {
					t.Fatal(err)
				}
			} else if tc.level != "" {
				params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: tc.level}
			}
			key := askWith(t, ctx, cs, params).ok(t).out.SessionKey
			ask(t, cs, "/help", key).ok(t)
			// The client handles notifications apart from responses: the
			// messages may come after the calls' results.
			has := func() bool {
				mu.Lock()
				defer mu.Unlock()
				all := strings.Join(got, "|")
				return strings.Contains(all, "info map[message:tool mcp__kit__echo: started sessionKey:"+key+"]") && strings.Contains(all, "tool mcp__kit__echo: completed")
			}
			if tc.want {
				logged.Await(wait, has)
			}
			mu.Lock()
			defer mu.Unlock()
			if has := strings.Contains(strings.Join(got, "|"), "tool mcp__kit__echo: completed"); has != tc.want || !tc.want && len(got) > 0 {
				t.Errorf("log messages %q: want the tool call's (%v)", got, tc.want)
			}
		})
	}
}
