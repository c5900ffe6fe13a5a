package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
		return res.Result
	}
}

// notify sends one notification.
func (p *rawPeer) notify(b *testing.B, method, params string) {
	if _, err := fmt.Fprintf(p.in, `{"jsonrpc":"2.0","method":%q,"params":%s}`+"\n", method, params); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRawPipeCall is the floor of a tools/call: raw JSON-RPC lines to
// the Go fixture over a pipe, no SDK on the client side. `make bench`
// prints the bridged and direct calls against it.
func BenchmarkRawPipeCall(b *testing.B) {
	p := startRawPeer(b, fixtureBin, nil)
	p.call(b, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	p.notify(b, "notifications/initialized", `{}`)
	b.ResetTimer()
	for b.Loop() {
		p.call(b, "tools/call", `{"name":"echo","arguments":{"message":"hi"}}`)
	}
}

// BenchmarkLeanBridgedCall is BenchmarkBridgedCall as an editor with no
// overhead of its own sees it: raw ACP lines to the agent (session/prompt
// `/call mcp__fixture__echo`, reading the session/update notifications
// until the response), no SDK and no recording on the client side, with the
// default (SQLite) session store.
func BenchmarkLeanBridgedCall(b *testing.B) {
	benchLeanBridged(b)
}

// BenchmarkLeanBridgedCallMemory is BenchmarkLeanBridgedCall with
// --store memory: the difference is the transcript's cost.
func BenchmarkLeanBridgedCallMemory(b *testing.B) {
	benchLeanBridged(b, "--store", "memory")
}

func benchLeanBridged(b *testing.B, args ...string) {
	p := startRawPeer(b, agentBin, append(args, agentProfileArgs(b)...))
	p.call(b, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	server, err := json.Marshal(map[string]any{"name": "fixture", "command": fixtureBin, "args": []string{}, "env": []any{}})
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
	b.ResetTimer()
	for b.Loop() {
		if res := p.call(b, "session/prompt", prompt); !strings.Contains(string(res), `"end_turn"`) {
			b.Fatalf("session/prompt: %s", res)
		}
	}
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
