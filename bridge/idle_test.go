package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// chunkReader yields data in reads of whatever size the caller asks and
// records the largest buffer it was handed. It has no WriteTo, as a pipe
// seen by io.Copy after os.File's fast paths.
type chunkReader struct {
	data    []byte
	maxRead int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	r.maxRead = max(r.maxRead, len(p))
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// A child's stderr is copied into the tail with a small buffer (os/exec's
// io.Copy would hold 32 KiB per running server), and lines split across
// reads are still logged whole and kept for failure reasons.
func TestTailWriter_ReadsStderrWithASmallBuffer(t *testing.T) {
	var logs bytes.Buffer
	w := newTailWriter(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	long := strings.Repeat("x", 1500)
	r := &chunkReader{data: []byte("first line\n" + long + "\nlast line\n")}
	n, err := io.Copy(w, r)
	if err != nil || n != int64(len("first line\n"+long+"\nlast line\n")) {
		t.Fatalf("io.Copy = %d, %v", n, err)
	}
	if r.maxRead > stderrReadBuffer {
		t.Errorf("stderr was read with a %d-byte buffer, want at most %d", r.maxRead, stderrReadBuffer)
	}
	for _, want := range []string{"line=\"first line\"", "line=" + long, "line=\"last line\""} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the logs lack %.40q...; logs:\n%.300s", want, logs.String())
		}
	}
	if got := w.suffix(); !strings.HasSuffix(got, "last line") {
		t.Errorf("suffix = %.80q..., want it to end with the last line", got)
	}
}

// Through os/exec, as a server's stderr is wired: every byte arrives.
func TestTailWriter_AsCmdStderr(t *testing.T) {
	w := newTailWriter(slog.New(slog.DiscardHandler))
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 200 ]; do echo "line $i of a server's stderr" >&2; i=$((i+1)); done`)
	cmd.Stderr = w
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got := w.suffix(); !strings.Contains(got, "line 199 of a server's stderr") {
		t.Errorf("suffix = %q, want the last line", got)
	}
}

// The tools a session holds keep their schemas as compact JSON, not as the
// nested maps go-sdk decodes, in the one copy go-sdk's tools/list cache and
// the bridge share, and the bridged tool hands the same JSON on.
func TestLeanToolLists_SchemasAreCompactJSON(t *testing.T) {
	in := map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}, "required": []any{"message"}}
	out := map[string]any{"type": "object", "properties": map[string]any{"echo": map[string]any{"type": "string"}}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: in, OutputSchema: out}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	for _, version := range []string{ProtocolVersion, "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(t.Context(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			mc := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			mc.AddSendingMiddleware(leanToolLists)
			cs, err := mc.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			first, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			tool := first.Tools[0]
			want, _ := json.Marshal(in)
			raw, ok := tool.InputSchema.(json.RawMessage)
			if !ok || !bytes.Equal(raw, want) {
				t.Fatalf("InputSchema = %T %s, want json.RawMessage %s", tool.InputSchema, raw, want)
			}
			if _, ok := tool.OutputSchema.(json.RawMessage); !ok {
				t.Errorf("OutputSchema = %T, want json.RawMessage", tool.OutputSchema)
			}
			s := &client{spec: ServerSpec{Name: "fixture"}}
			if got := newBridgedTool("mcp__fixture__echo", s, tool).InputSchema; !bytes.Equal(got, want) {
				t.Errorf("the bridged tool's schema = %s, want %s", got, want)
			}
			// A call still works with the lean schema (go-sdk looks the
			// tool up in its cache on 2026-07-28 sessions).
			if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
				t.Fatalf("CallTool: %v", err)
			}
		})
	}
	s := &client{spec: ServerSpec{Name: "fixture"}}
	if got := newBridgedTool("mcp__fixture__bare", s, &mcp.Tool{Name: "bare"}).InputSchema; string(got) != `{"type":"object"}` {
		t.Errorf("a tool with no schema is bridged with %s, want {\"type\":\"object\"}", got)
	}
}

// Once a stdio server has initialized, the start of its stdout (kept only
// to explain a failed initialize) is dropped: a session holds its servers
// for as long as it idles.
func TestManager_ConnectedStdioKeepsNoStdoutHead(t *testing.T) {
	script := `read -r line; echo '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'; ` +
		`read -r line; echo '{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}'; sleep 60`
	m := NewManager(&Options{Cwd: t.TempDir(), Timeouts: Timeouts{Connect: 60 * time.Second}})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	_ = m.Connect(t.Context(), []ServerSpec{{Name: "quiet", Transport: TransportStdio, Command: "/bin/sh", Args: []string{"-c", script}}})
	if st := m.Servers()[0]; st.State != StateConnected {
		t.Fatalf("status = %v %v, want connected", st.State, st.Err)
	}
	s := m.server("quiet")
	s.conn.mu.Lock()
	w := s.conn.stdout
	s.conn.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head != nil {
		t.Errorf("the connected server's stdout head is still kept: %d bytes (%q)", len(w.head), w.head)
	}
}
