package e2e

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/acp"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// rawAgent is the agent binary spoken to with raw bytes, as a buggy or
// hostile client would.
type rawAgent struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	writes chan string                             // lines for the writer goroutine, in order
	lines  chan map[string]json.RawMessage         // frames the agent wrote
	seen   map[string][]map[string]json.RawMessage // responses read, by id, not yet asked for
}

// startRaw runs the agent with stderr going to stderr (nil: a buffer shown
// on failure). Writes go through a goroutine, so a test whose agent has
// stopped reading fails on its deadline instead of hanging.
func startRaw(t *testing.T, stderr io.Writer, args ...string) *rawAgent {
	t.Helper()
	cmd := exec.Command(agentBin, append([]string{"--verbose", "--store", "memory"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var logs *testutil.Buffer
	if stderr == nil {
		logs = &testutil.Buffer{}
		stderr = logs
	}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &rawAgent{t: t, cmd: cmd, in: in, writes: make(chan string, 1<<14), lines: make(chan map[string]json.RawMessage, 1<<14), seen: map[string][]map[string]json.RawMessage{}}
	stopWrites := make(chan struct{})
	go func() {
		for {
			select {
			case line := <-a.writes:
				if _, err := io.WriteString(in, line+"\n"); err != nil {
					return
				}
			case <-stopWrites:
				return
			}
		}
	}()
	go func() {
		defer close(a.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("the agent wrote a line that is not a JSON object: %.200q", sc.Text())
				continue
			}
			a.lines <- m
		}
	}()
	t.Cleanup(func() {
		close(stopWrites)
		_ = in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Error("the agent did not exit after stdin EOF")
		}
		if logs != nil && t.Failed() {
			t.Logf("agent stderr (tail):\n%s", tail(logs.String(), 4000))
		}
	})
	return a
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// send queues raw lines for the agent's stdin.
func (a *rawAgent) send(lines ...string) {
	for _, l := range lines {
		a.writes <- l
	}
}

// response waits for the response with id (raw JSON: 1, "x", null).
func (a *rawAgent) response(id string) map[string]json.RawMessage {
	a.t.Helper()
	if rs := a.seen[id]; len(rs) > 0 {
		a.seen[id] = rs[1:]
		return rs[0]
	}
	deadline := time.After(90 * time.Second)
	for {
		select {
		case m, ok := <-a.lines:
			if !ok {
				a.t.Fatalf("the agent closed stdout (it ended) before answering id %s", id)
			}
			if m["method"] != nil {
				continue // a notification or a request of the agent's
			}
			if string(m["id"]) == id {
				return m
			}
			a.seen[string(m["id"])] = append(a.seen[string(m["id"])], m)
		case <-deadline:
			a.t.Fatalf("no response to id %s", id)
		}
	}
}

// result is the result of the response with id; an error response fails.
func (a *rawAgent) result(id string) json.RawMessage {
	a.t.Helper()
	r := a.response(id)
	if r["result"] == nil {
		a.t.Fatalf("id %s: error %s", id, r["error"])
	}
	return r["result"]
}

type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// error is the error of the response with id; a result fails.
func (a *rawAgent) error(id string) rpcError {
	a.t.Helper()
	r := a.response(id)
	var e rpcError
	if err := json.Unmarshal(r["error"], &e); err != nil || r["error"] == nil {
		a.t.Fatalf("id %s: want an error, got %v", id, r)
	}
	return e
}

func promptLine(id, sid string, blocks ...string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/prompt","params":{"sessionId":%q,"prompt":[%s]}}`, id, sid, strings.Join(blocks, ","))
}

func imageBlock(n int) string {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 7)
	}
	return `{"type":"image","mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString(data) + `"}`
}

// TestHostileInput: every line a buggy client may send is answered as
// JSON-RPC 2.0 says (or dropped, for notifications), none ends the agent,
// and sessions keep working, images up to limits.maxMediaBytes included.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	a := startRaw(t, nil)
	a.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	a.result("0")
	a.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(a.result("1"), &sess); err != nil || sess.SessionID == "" {
		t.Fatalf("session/new: %v", err)
	}
	sid := sess.SessionID

	const huge = acp.MaxFrameBytes + 1<<20
	hugeData := strings.Repeat("A", huge)
	a.send(`this is not JSON`)
	if e := a.error("null"); e.Code != -32700 {
		t.Errorf("not JSON: %+v", e)
	}
	a.send(`{"jsonrpc":"2.0","id":"cut","method":"session/prompt","params":{"sessionId":`)
	if e := a.error(`"cut"`); e.Code != -32700 {
		t.Errorf("truncated JSON: %+v", e)
	}
	a.send(`[{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}]`)
	if e := a.error("null"); e.Code != -32600 || !strings.Contains(e.Message, "batch") {
		t.Errorf("batch: %+v", e)
	}
	for _, id := range []string{`null`, `{"x":1}`, `[3]`} {
		a.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/list","params":{}}`)
		if e := a.error("null"); e.Code != -32600 || !strings.Contains(e.Message, "id must be a string or a number") {
			t.Errorf("id %s: %+v", id, e)
		}
	}
	a.send(`{"id":4,"method":"session/list","params":{}}`)
	if e := a.error("4"); e.Code != -32600 || !strings.Contains(e.Message, "jsonrpc") {
		t.Errorf("missing jsonrpc: %+v", e)
	}
	a.send(`{"jsonrpc":"2.0","id":5,"method":"session/list"}`)
	a.result("5") // params omitted: like {}

	// Frames over the SDK's line limit, which ended the agent.
	a.send(`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"image","mimeType":"image/png","data":"` + hugeData + `"}]}}`)
	e := a.error("6")
	if e.Code != -32600 || e.Data["limit"] != float64(acp.MaxFrameBytes) || e.Data["bytes"] == nil || !strings.Contains(e.Message, "limits.maxMediaBytes") {
		t.Errorf("huge frame, id first: %+v", e)
	}
	a.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + hugeData + `"}]},"id":"last"}`)
	if e := a.error(`"last"`); e.Code != -32600 || !strings.Contains(e.Message, fmt.Sprint(acp.MaxFrameBytes)) {
		t.Errorf("huge frame, id last: %+v", e)
	}
	a.send(hugeData)
	if e := a.error("null"); e.Code != -32600 {
		t.Errorf("huge frame without id: %+v", e)
	}

	// A burst of notifications: cancels, unknown and extension ones.
	var burst []string
	for i := range 5000 {
		burst = append(burst, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"`+sid+`"}}`,
			fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"other-%d"}}`, i),
			`{"jsonrpc":"2.0","method":"_vendor/ping","params":{}}`)
	}
	a.send(burst...)

	// The agent still serves: a prompt, one with an image at the default
	// limits.maxMediaBytes, one with an image over it.
	a.send(promptLine("7", sid, `{"type":"text","text":"/servers"}`))
	var pr struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(a.result("7"), &pr); err != nil || pr.StopReason != "end_turn" {
		t.Errorf("prompt after the hostile lines: %+v %v", pr, err)
	}
	a.send(promptLine("8", sid, `{"type":"text","text":"what is this?"}`, imageBlock(5<<20)))
	if err := json.Unmarshal(a.result("8"), &pr); err != nil || pr.StopReason != "end_turn" {
		t.Errorf("prompt with an image of 5 MiB: %+v %v", pr, err)
	}
	a.send(promptLine("9", sid, imageBlock(5<<20+1)))
	if e := a.error("9"); e.Code != -32602 || !strings.Contains(e.Message, "limits.maxMediaBytes") {
		t.Errorf("prompt with an image over the limit: %+v", e)
	}
	a.send(`{"jsonrpc":"2.0","id":10,"method":"session/list","params":{}}`)
	a.result("10")
}

// TestStderrNeverRead: with a stderr nobody reads and verbose logging,
// requests keep being answered.
func TestStderrNeverRead(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // never read
	a := startRaw(t, w)
	w.Close()      // the agent holds its own copy
	const n = 3000 // each logs a line: far more than a pipe holds
	for i := range n {
		a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"stderr-test-%d","version":"1"}}}`, i, i))
	}
	for i := range n {
		a.result(fmt.Sprint(i))
	}
}

// TestInitializeFirst: through the binary, a request before initialize is
// refused (-32600, saying so) and a notification dropped; after initialize
// the same requests work, and session/load reopens a session only in its
// own cwd (another directory is refused naming both).
func TestInitializeFirst(t *testing.T) {
	t.Parallel()
	a := startRaw(t, nil)
	cwd, other := t.TempDir(), t.TempDir()
	a.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`)
	if e := a.error("1"); e.Code != -32600 || !strings.Contains(e.Message, "session/new: the connection is not initialized: send initialize first") {
		t.Errorf("session/new before initialize: %+v", e)
	}
	a.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_x"}}`)
	a.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`)
	a.result("2")
	a.send(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`)
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(a.result("3"), &sess); err != nil || sess.SessionID == "" {
		t.Fatalf("session/new after initialize: %v", err)
	}
	a.send(`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"` + sess.SessionID + `","cwd":"` + other + `","mcpServers":[]}}`)
	if e := a.error("4"); e.Code != -32602 || !strings.Contains(e.Message, `cwd "`+other+`" is not the cwd of session `+sess.SessionID+`, "`+cwd+`"`) {
		t.Errorf("session/load in another directory: %+v", e)
	}
	a.send(`{"jsonrpc":"2.0","id":5,"method":"session/load","params":{"sessionId":"` + sess.SessionID + `","cwd":"` + cwd + `","mcpServers":[]}}`)
	a.result("5")
}
