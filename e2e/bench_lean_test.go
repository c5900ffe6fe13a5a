package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// rawPeer is a process spoken to in raw JSON-RPC lines over its stdin and
// stdout, with no SDK and no recording: the leanest client an editor could
// be, so that what it measures is the process on the other end.
type rawPeer struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	next int
}

// startRaw starts bin with args and env (on top of PATH and HOME) as a raw
// JSON-RPC peer; it is stopped (stdin closed, then waited for) when b ends.
func startRawPeer(b *testing.B, bin string, args []string, env ...string) *rawPeer {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir()}, env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &rawPeer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	b.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Wait()
	})
	return p
}

// call sends one request and reads lines until its response, answering
// nothing else (notifications are read and dropped). It returns the
// response's result, failing b on an error response.
func (p *rawPeer) call(b *testing.B, method, params string) json.RawMessage {
	res, _ := p.callCounting(b, method, params)
	return res
}

// callTurn sends session/prompt params and fails b unless the turn ends
// with end_turn after exactly one tool call completed: a refused or failed
// call (a rate limit, a server error) ends its turn with end_turn too, and
// a benchmark of refusals measures nothing.
func (p *rawPeer) callTurn(b *testing.B, params string) {
	res, completed := p.callCounting(b, "session/prompt", params)
	wantOneCall(b, res, completed)
}

// wantOneCall fails b unless res, a session/prompt result, is end_turn
// after exactly one completed tool call.
func wantOneCall(b *testing.B, res json.RawMessage, completed int) {
	b.Helper()
	if !strings.Contains(string(res), `"end_turn"`) || completed != 1 {
		b.Fatalf("session/prompt: %s after %d completed tool calls, want end_turn after 1", res, completed)
	}
}

// callCounting is call, also counting the completed tool calls among the
// notifications read before the response.
func (p *rawPeer) callCounting(b *testing.B, method, params string) (_ json.RawMessage, completed int) {
	p.next++
	id := p.next
	if _, err := fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		b.Fatal(err)
	}
	want := fmt.Sprintf(`"id":%d`, id)
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			b.Fatalf("%s: reading the response: %v", method, err)
		}
		if !strings.Contains(string(line), want) || strings.Contains(string(line), `"method"`) {
			if _, ok := completedToolCall(line); ok {
				completed++
			}
			continue // a notification, or a request of the peer's
		}
		var res struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &res); err != nil {
			b.Fatalf("%s: %v in %s", method, err, line)
		}
		if res.Error != nil {
			b.Fatalf("%s: %s", method, res.Error)
		}
		return res.Result, completed
	}
}

// completedToolCall reads line as a session/update and reports whether it
// is a tool_call_update with status completed, and its sessionId.
func completedToolCall(line []byte) (sessionID string, ok bool) {
	if !strings.Contains(string(line), `"tool_call_update"`) {
		return "", false
	}
	var n struct {
		Method string `json:"method"`
		Params struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				SessionUpdate string `json:"sessionUpdate"`
				Status        string `json:"status"`
			} `json:"update"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &n) != nil || n.Method != "session/update" {
		return "", false
	}
	u := n.Params.Update
	return n.Params.SessionID, u.SessionUpdate == "tool_call_update" && u.Status == "completed"
}

// noRateLimit is a config that lifts the per-server rate limit of tool
// calls (100 a minute by default): a benchmark makes thousands.
func noRateLimit(b *testing.B) []string {
	return []string{"--config", writeConfig(b, map[string]any{"limits": map[string]any{"callsPerMinute": -1}})}
}

// notify sends one notification.
func (p *rawPeer) notify(b *testing.B, method, params string) {
	if _, err := fmt.Fprintf(p.in, `{"jsonrpc":"2.0","method":%q,"params":%s}`+"\n", method, params); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCall is one tools/call as an editor sees it, next to its floors,
// all in one run. Sub-benchmarks are transport/protocol/path:
//
//   - raw: raw JSON-RPC lines to the Go fixture over a pipe, no SDK (the
//     floor of one MCP hop; stdio, 2025-11-25 only, the version a raw
//     client can speak without per-request metadata);
//   - relay: raw, through linerelay (testfixtures), a process that only
//     passes lines: the floor of any process between client and server,
//     one more hop;
//   - direct: a go-sdk client straight to the fixture;
//   - bridged: a lean ACP client (raw lines, no SDK, no recording) sending
//     session/prompt "/call mcp__fixture__echo" to the agent, which calls the
//     fixture through the bridge; the default (SQLite) session store;
//   - bridged-memory: bridged with --store memory (the difference is the
//     transcript's cost);
//   - sdk-floor: the lean client to testfixtures/sdkfloor instead of the
//     agent, the least an agent on acp-go-sdk and go-sdk does for the turn
//     (no store, sessions, checks or policy): the floor of bridged;
//   - bridged-websocket: bridged, but the agent is a gateway and the lean
//     client speaks to it over a WebSocket (its default SQLite store, the
//     fixture one of its config's gateway.allowCommands): the network
//     transport's cost;
//   - bridged-websocket-sdk: the same over the TypeScript SDK's reference
//     server (ts-reference-server.mjs: its AcpServer in front of the stdio
//     agent), for comparison with the gateway.
//
// At 2025-11-25 the fixture is capped to that version (FIXTURE_MAX_PROTOCOL),
// so both sides of each ratio speak the same MCP; 2026-07-28 is what the
// bridge asks for by default, and go-sdk servers spend more per request on
// it (request metadata checks). Streamable HTTP runs at 2025-11-25 only: the
// fixture's stateful go-sdk v1.8 handler answers a 2026-07-28 client at
// 2025-11-25. `make bench` prints bridged/direct and bridged/raw for each.
func BenchmarkCall(b *testing.B) {
	for _, version := range []string{"2025-11-25", bridge.ProtocolVersion} {
		capped := []string{"FIXTURE_MAX_PROTOCOL=" + version}
		b.Run("stdio/"+version+"/raw", func(b *testing.B) {
			if version != "2025-11-25" {
				b.Skip("a raw client speaks 2025-11-25 only")
			}
			benchRawPipe(b, version, capped)
		})
		b.Run("stdio/"+version+"/relay", func(b *testing.B) {
			if version != "2025-11-25" {
				b.Skip("a raw client speaks 2025-11-25 only")
			}
			benchRawPipe(b, version, capped, buildFixture(b, "linerelay"))
		})
		b.Run("stdio/"+version+"/direct", func(b *testing.B) {
			cmd := exec.Command(fixtureBin)
			cmd.Env = append(os.Environ(), capped...)
			benchDirect(b, &mcp.CommandTransport{Command: cmd}, version)
		})
		stdio := map[string]any{"name": "fixture", "command": fixtureBin, "args": []string{},
			"env": []any{map[string]string{"name": "FIXTURE_MAX_PROTOCOL", "value": version}}}
		b.Run("stdio/"+version+"/bridged", func(b *testing.B) { benchLeanBridged(b, stdio) })
		b.Run("stdio/"+version+"/bridged-memory", func(b *testing.B) { benchLeanBridged(b, stdio, "--store", "memory") })
		b.Run("stdio/"+version+"/sdk-floor", func(b *testing.B) { benchLean(b, buildFixture(b, "sdkfloor"), stdio) })
		b.Run("stdio/"+version+"/bridged-websocket", func(b *testing.B) { benchWebSocketBridged(b, stdio) })
		b.Run("stdio/"+version+"/bridged-websocket-sdk", func(b *testing.B) {
			benchWebSocketPeer(b, startTSReference(b, append(noRateLimit(b), agentProfileArgs(b)...)...).URL, stdio)
		})
		if version != "2025-11-25" {
			continue // see below
		}
		b.Run("http/"+version+"/direct", func(b *testing.B) {
			benchDirect(b, &mcp.StreamableClientTransport{Endpoint: startFixtureHTTP(b, capped...) + "/mcp"}, version)
		})
		b.Run("http/"+version+"/bridged", func(b *testing.B) {
			benchLeanBridged(b, map[string]any{"type": "http", "name": "fixture", "url": startFixtureHTTP(b, capped...) + "/mcp", "headers": []any{}})
		})
	}
}

// benchRawPipe times tools/call echo in raw JSON-RPC lines to the fixture,
// started through the command in via (with the fixture as its argument)
// when there is one.
func benchRawPipe(b *testing.B, version string, env []string, via ...string) {
	bin, args := fixtureBin, []string(nil)
	if len(via) > 0 {
		bin, args = via[0], append(via[1:], fixtureBin)
	}
	p := startRawPeer(b, bin, args, env...)
	p.call(b, "initialize", fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`, version))
	p.notify(b, "notifications/initialized", `{}`)
	b.ResetTimer()
	for b.Loop() {
		if res := p.call(b, "tools/call", `{"name":"echo","arguments":{"message":"hi"}}`); !strings.Contains(string(res), "Echo: hi") {
			b.Fatalf("tools/call: %s", res)
		}
	}
}

// buildFixture builds testfixtures/<name> for b and returns its path.
func buildFixture(b *testing.B, name string) string {
	bin := filepath.Join(b.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "../testfixtures/"+name).CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	return bin
}

// benchDirect times tools/call echo from a go-sdk client to the fixture over
// t, asking for version.
func benchDirect(b *testing.B, t mcp.Transport, version string) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		b.Fatalf("negotiated %s, want %s", got, version)
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), params)
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError {
			b.Fatalf("tools/call echo: an error result: %+v", res.Content)
		}
	}
}

// benchLeanBridged times /call mcp__fixture__echo turns from a raw ACP
// client through an agent started with args, the fixture being the
// mcpServers entry entry.
func benchLeanBridged(b *testing.B, entry map[string]any, args ...string) {
	benchLean(b, agentBin, entry, append(append(args, noRateLimit(b)...), agentProfileArgs(b)...)...)
}

// benchLean times /call mcp__fixture__echo turns from a raw ACP client
// through the agent bin started with args, the fixture being the
// mcpServers entry entry, and reports the agent's CPU per turn.
func benchLean(b *testing.B, bin string, entry map[string]any, args ...string) {
	p := startRawPeer(b, bin, args)
	p.call(b, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	server, err := json.Marshal(entry)
	if err != nil {
		b.Fatal(err)
	}
	cwd, err := json.Marshal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	res := p.call(b, "session/new", fmt.Sprintf(`{"cwd":%s,"mcpServers":[%s]}`, cwd, server))
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &s); err != nil || s.SessionID == "" {
		b.Fatalf("session/new: %s (%v)", res, err)
	}
	prompt := fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"/call mcp__fixture__echo {\"message\":\"hi\"}"}]}`, s.SessionID)
	// One call before the clock: the fixture answered tools/list, not yet a
	// call, and this one also checks the whole path works.
	p.callTurn(b, prompt)
	b.ResetTimer()
	cpu := cpuTime(b, p.cmd.Process.Pid)
	n := 0
	for b.Loop() {
		p.callTurn(b, prompt)
		n++
	}
	b.ReportMetric(float64((cpuTime(b, p.cmd.Process.Pid)-cpu).Microseconds())/float64(n), "agent-cpu-us/op")
}

// agentProfileArgs are the agent's profiling flags when the benchmark runs
// with ACP_BENCH_PROFILE=DIR: the CPU and heap profiles of the agent under
// benchmark land in DIR/<benchmark>.{cpu,heap}.pprof (see `go tool pprof`).
func agentProfileArgs(b *testing.B) []string {
	dir := os.Getenv("ACP_BENCH_PROFILE")
	if dir == "" {
		return nil
	}
	name := filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "_"))
	return []string{"--cpuprofile", name + ".cpu.pprof", "--memprofile", name + ".heap.pprof"}
}
