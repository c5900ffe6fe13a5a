package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/gorilla/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/acp/remote"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
)

// wsPeer is a lean ACP client over a WebSocket: raw JSON-RPC text frames,
// no SDK and no recording, like rawPeer over stdio.
type wsPeer struct {
	ws   *websocket.Conn
	next int
}

func dialWSPeer(b *testing.B, url string) *wsPeer {
	b.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	return &wsPeer{ws: ws}
}

// call sends one request and reads frames until its response.
func (p *wsPeer) call(b *testing.B, method, params string) json.RawMessage {
	res, _ := p.callCounting(b, method, params)
	return res
}

// callTurn is rawPeer.callTurn over the WebSocket.
func (p *wsPeer) callTurn(b *testing.B, params string) {
	res, completed := p.callCounting(b, "session/prompt", params)
	wantOneCall(b, res, completed)
}

// callCounting is call, also counting the completed tool calls among the
// notifications read before the response.
func (p *wsPeer) callCounting(b *testing.B, method, params string) (_ json.RawMessage, completed int) {
	p.next++
	id := p.next
	if err := p.ws.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)); err != nil {
		b.Fatal(err)
	}
	want := fmt.Sprintf(`"id":%d`, id)
	for {
		_, msg, err := p.ws.ReadMessage()
		if err != nil {
			b.Fatalf("%s: reading the response: %v", method, err)
		}
		if !strings.Contains(string(msg), want) || strings.Contains(string(msg), `"method"`) {
			if _, ok := completedToolCall(msg); ok {
				completed++
			}
			continue
		}
		var res struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(msg, &res); err != nil {
			b.Fatalf("%s: %v in %s", method, err, msg)
		}
		if res.Error != nil {
			b.Fatalf("%s: %s", method, res.Error)
		}
		return res.Result, completed
	}
}

// benchWebSocketBridged is benchLeanBridged over a gateway's WebSocket:
// the gateway runs entry (a stdio server its config allows).
func benchWebSocketBridged(b *testing.B, entry map[string]any) {
	cfg := filepath.Join(b.TempDir(), "config.json")
	allow, _ := json.Marshal([]string{fixtureBin})
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"gateway": {"allowCommands": %s}, "limits": {"callsPerMinute": -1}}`, allow), 0o600); err != nil {
		b.Fatal(err)
	}
	g := startGateway(b, "", nil, append([]string{"--config", cfg}, agentProfileArgs(b)...)...)
	benchWebSocketPeer(b, g.url(), entry)
}

// benchWebSocketPeer times /call mcp__fixture__echo turns from a lean
// WebSocket client through the ACP endpoint at url, the fixture being the
// mcpServers entry entry.
func benchWebSocketPeer(b *testing.B, url string, entry map[string]any) {
	p := dialWSPeer(b, url)
	p.call(b, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	server, _ := json.Marshal(entry)
	cwd, _ := json.Marshal(b.TempDir())
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if res := p.call(b, "session/new", fmt.Sprintf(`{"cwd":%s,"mcpServers":[%s]}`, cwd, server)); json.Unmarshal(res, &s) != nil || s.SessionID == "" {
		b.Fatalf("session/new: %s", res)
	}
	prompt := fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"/call mcp__fixture__echo {\"message\":\"hi\"}"}]}`, s.SessionID)
	p.callTurn(b, prompt)
	b.ResetTimer()
	for b.Loop() {
		p.callTurn(b, prompt)
	}
}

// BenchmarkGatewayLoad: 200 ACP clients, each on a WebSocket of its own to
// one gateway (default SQLite store), each with a session whose tool is
// an MCP server the client hosts (MCP-over-ACP: the path "acp-agent
// connect" takes for an editor's stdio servers), each running 20 /call
// turns one after the other, all clients at once. "paced": a client
// waits thinkTime after each answer before its next prompt, as a model
// or a person takes time between turns (thinkTime, ±50 %, and a random
// start within it, so that clients do not move in step); "saturated":
// none, so the
// gateway's throughput is the limit. Reports the turns' p50 and p99
// latency, turns/s, and the gateway's RSS per client. Zero errors.
func BenchmarkGatewayLoad(b *testing.B) {
	b.Run("paced", func(b *testing.B) { benchGatewayLoad(b, thinkTime) })
	b.Run("saturated", func(b *testing.B) { benchGatewayLoad(b, 0) })
}

// thinkTime is the pause of a paced client between an answer and its next
// prompt: about what a fast model takes to write its next tool call (a
// person takes longer). 200 clients so offer about 200 turns a second.
const thinkTime = time.Second

func benchGatewayLoad(b *testing.B, think time.Duration) {
	clients, turns := 200, 20
	if n := os.Getenv("ACP_BENCH_CLIENTS"); n != "" {
		fmt.Sscan(n, &clients)
	}
	cfg := filepath.Join(b.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"gateway": {"limits": {"maxConnectionsPerTenant": 1000}}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	g := startGateway(b, "", nil, append([]string{"--config", cfg}, agentProfileArgs(b)...)...)
	rss0 := rssKiB(b, g.cmd.Process.Pid)
	type client struct {
		c   *netClient
		sid string
	}
	cs := make([]client, clients)
	var setup sync.WaitGroup
	var setupErr error
	var setupMu sync.Mutex
	for i := range cs {
		setup.Go(func() {
			host := &acpclient.MCPHost{Servers: map[string]*mcp.Server{"tools": hostedEcho()}}
			c, err := tryDialGateway(b, g.url(), "", remote.TransportWebSocket, &acpclient.Recorder{MCP: host})
			if err != nil {
				setupMu.Lock()
				setupErr = err
				setupMu.Unlock()
				return
			}
			cs[i] = client{c, c.newSession(b.TempDir(), host.Entry("editor", "tools"))}
		})
	}
	setup.Wait()
	if setupErr != nil {
		b.Fatal(setupErr)
	}
	rss1 := rssKiB(b, g.cmd.Process.Pid)
	var mu sync.Mutex
	var lat []time.Duration
	var errs []string
	b.ResetTimer()
	var busy time.Duration // the turns' own time, without the think time
	for b.Loop() {
		start := time.Now()
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Go(func() {
				for i := range turns {
					if think > 0 { // load shaping: the client's pace, not a wait for an event
						pause := think/2 + rand.N(think)
						if i == 0 {
							pause = rand.N(think)
						}
						time.Sleep(pause)
					}
					t0 := time.Now()
					res, err := c.c.Conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(c.sid),
						Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(`/call mcp__editor__echo {"message":"hi"}`)}})
					d := time.Since(t0)
					mu.Lock()
					lat = append(lat, d)
					if err != nil || res.StopReason != acpsdk.StopReasonEndTurn {
						errs = append(errs, fmt.Sprint(res.StopReason, err))
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		busy += time.Since(start)
	}
	b.StopTimer()
	if len(errs) > 0 {
		b.Fatalf("%d of %d turns failed: %v", len(errs), len(lat), errs[0])
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/busy.Seconds(), "turns/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
	b.ReportMetric(float64(rss1-rss0)/float64(clients), "gateway-KiB/client")
	b.ReportMetric(float64(rssKiB(b, g.cmd.Process.Pid))/1024, "gateway-RSS-MiB")
}
