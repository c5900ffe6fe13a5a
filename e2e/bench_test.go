package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// BenchmarkFirstChunk measures a prompt's time to its first
// agent_message_chunk through the agent, against the fake OpenAI server.
// Compare with BenchmarkFirstChunkDirect, the SDK's time to the first delta
// on the same server: the difference is what the agent adds.
func BenchmarkFirstChunk(b *testing.B) {
	fake := fakemodel.NewOpenAI(b)
	a := startAgentWith(b, []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"}, "--model", "openai:bench")
	ctx := context.Background()
	cwd := b.TempDir()
	var total time.Duration
	for b.Loop() {
		// A fresh session each time, so the history (and the request) does
		// not grow with b.N; only prompt → first chunk is timed.
		res, err := a.Conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
		if err != nil {
			b.Fatal(err)
		}
		sid := string(res.SessionId)
		fake.Push(fakemodel.Turn{Text: "Hello from the model."})
		from := len(a.Client.Updates())
		start := time.Now()
		done := make(chan error, 1)
		go func() { _, err := a.Prompt(ctx, sid, "hi"); done <- err }()
		if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil }); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		// The title the model writes after the first turn, before the
		// session closes: a close cancels it, and its connection with it,
		// which the next session's first request would pay for.
		if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
			u := n.Update.SessionInfoUpdate
			return u != nil && u.Title != nil && *u.Title == "Fake session title"
		}); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: res.SessionId}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/first-chunk")
}

// BenchmarkFirstChunkDirect is the openai-go SDK's own time to the first
// content delta from the fake server.
func BenchmarkFirstChunkDirect(b *testing.B) {
	fake := fakemodel.NewOpenAI(b)
	client := openai.NewClient(oaioption.WithBaseURL(fake.URL+"/v1"), oaioption.WithAPIKey("k"))
	var total time.Duration
	for b.Loop() {
		fake.Push(fakemodel.Turn{Text: "Hello from the model."})
		start := time.Now()
		stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: "bench", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		for stream.Next() {
			if c := stream.Current(); len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
				total += time.Since(start)
				break
			}
		}
		for stream.Next() {
		}
		if err := stream.Err(); err != nil {
			b.Fatal(err)
		}
		stream.Close()
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/first-chunk")
}

// BenchmarkLoad500Turns measures session/load of a stored 500-turn session:
// reading the transcript, replaying it to the client (about 2,500
// session/update notifications), and answering.
func BenchmarkLoad500Turns(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "sessions.db")
	const sid = "sess_bench"
	storeTurns(b, path, sid, dir, 500)
	a := startAgentWith(b, nil, "--store", path)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: dir, McpServers: []acpsdk.McpServer{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// storeTurns writes a session sid (cwd dir) of n turns to the SQLite store
// at path. Each turn is a prompt, a text and a tool call, the tool's result
// and a closing text: session/load replays it as 5 session/update
// notifications.
func storeTurns(tb testing.TB, path, sid, dir string, n int) {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	if err := st.Create(context.Background(), store.Record{ID: sid, Key: "acp:" + sid, Cwd: dir, Created: now, Updated: now}); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		turn := store.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{
			{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(fmt.Sprintf("prompt %d: please echo something useful", i))}},
			{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("Calling the tool.")}, ToolCalls: []gateway.ToolCall{{ID: id, Name: "mcp__fixture__echo", Args: map[string]any{"message": "hello"}}}},
			{Role: gateway.RoleTool, ToolCallID: id, ToolName: "mcp__fixture__echo", ToolTitle: "fixture/echo", ToolKind: gateway.ToolKindRead,
				Result: &gateway.Result{Content: []gateway.Content{gateway.TextContent("Echo: hello")}, Raw: map[string]any{"content": []any{map[string]any{"type": "text", "text": "Echo: hello"}}}}},
			{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(strings.Repeat("The tool answered as expected. ", 10))}},
		}}
		if err := st.AppendTurn(context.Background(), sid, turn); err != nil {
			tb.Fatal(err)
		}
	}
}

// rssKiB reads a process's resident set size.
func rssKiB(b *testing.B, pid int) int { return procStatus(b, pid, "VmRSS") }

// procStatus is the number in field (such as "VmRSS", in KiB, or
// "Threads") of /proc/<pid>/status; it fails b when there is none.
func procStatus(b *testing.B, pid int, field string) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var n int
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &n)
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
