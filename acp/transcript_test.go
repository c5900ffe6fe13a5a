package acp

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/tools/txtar"

	"github.com/seed02d3eb6b/acp-agent/session"
)

var updateTranscripts = flag.Bool("update", false, "rewrite the agent sections of testdata/transcripts/*.txtar from what the agent writes")

// TestTranscripts plays each testdata/transcripts/*.txtar against a real
// Agent (New, Serve) over pipes, writing and reading lines as an editor
// does over stdio. It is the ACP counterpart of go-sdk's MCP conformance
// transcripts (mcp/testdata/conformance/server).
//
// A transcript is a txtar archive: its comment says what the file pins; its
// "client" section holds the lines the editor writes, one JSON-RPC message a
// line, sent verbatim (so malformed lines can be sent too), including its
// responses to the agent's requests (session/request_permission: the
// agent's request ids are its own counter, 1, 2, …, and are written as
// they are); its "agent" section holds the lines the agent must write, in
// order, compared line by line as JSON values (key order does not matter),
// a mismatch reported as a diff of canonical JSON text.
//
// Pacing. Before each client line the runner waits until every request the
// client sent has its response (and every line that is not a well-formed
// request or response, such as a parse error, one response more), or until
// the agent has sent a request of its own that the client has not answered:
// the next client line answers it. A line "#await {json}" before a client
// line replaces that wait: the runner waits for an agent line, written since
// the previous client line was sent, whose JSON contains the given one (a
// subset: objects by their keys, recursively; arrays and scalars equal;
// matched after normalization). It serves to send session/cancel while a
// prompt runs, and to wait for the notifications that follow a response
// (session/new's available_commands_update) before the next line, so the
// order of the agent section is the agent's, never a race. Other lines
// starting with "#", and blank lines, are comments. After the last line
// the runner waits as before, then ends the input (EOF) and reads what the
// agent writes until Serve returns.
//
// Normalization. What varies from run to run is replaced in the agent's
// lines by placeholders, and placeholders in the client's lines by the
// values they stand for:
//
//   - $SID1, $SID2, …: the values of "sessionId" members the agent writes
//     that the client section does not spell out, numbered in the order
//     they first appear (the first session/new's id is $SID1); wherever the
//     value occurs in a line, inside error messages too;
//   - $CALL1, $CALL2, …: likewise for "toolCallId" values;
//   - $CWD: the absolute temporary directory the test gives the sessions as
//     their cwd;
//   - $TIME: the value of every "updatedAt" member.
//
// A "$NAME" in a client line must be one of these, already seen.
//
// Run "go test ./acp -run TestTranscripts -update" to rewrite each agent
// section from what the agent wrote (normalized, in the agent's own key
// order); review the diff line by line against the ACP schema before
// committing it.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata/transcripts")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			runTranscript(t, file)
		})
	}
}

// transcriptWait bounds each wait of a transcript (for a response, an
// awaited line, Serve's return): generous, for a busy machine.
const transcriptWait = 60 * time.Second

// newTranscriptAgent returns the Agent every transcript runs against: the
// default in-process gateway with the direct provider, a memory store, and
// one in-process MCP server, "t" (transcriptServer). It is the one place
// the test constructs an Agent.
func newTranscriptAgent(t *testing.T) *Agent {
	t.Helper()
	core := session.NewCore(&session.CoreOptions{
		InProcess: []session.InProcessServer{{Name: "t", New: func(session.InProcessEnv) *mcp.Server { return transcriptServer() }}},
	})
	return New(core, &Options{Name: "acp-agent", Version: "test"})
}

// transcriptServer is the in-process MCP server of the transcripts:
//
//   - echo (read-only, so never asks permission): "Echo: " + message;
//   - write (not read-only, so asks permission): "Wrote: " + text;
//   - wait (read-only): sends one progress notification ("waiting"), then
//     returns only when its call is cancelled.
func transcriptServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1.0"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo a message.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
	type writeIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "write", Description: "Write some text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Wrote: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Wait until cancelled.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			// The progress says the call runs: a transcript awaits it
			// before it cancels.
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Message: "waiting"}); err != nil {
				return nil, nil, err
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	return srv
}

// transcript is one parsed testdata/transcripts file.
type transcript struct {
	archive *txtar.Archive
	client  []string // the client section's lines, comments and directives included
	agent   []string // the agent section's lines
}

func readTranscript(t *testing.T, file string) *transcript {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tr := &transcript{archive: txtar.Parse(data)}
	seen := map[string]bool{}
	for _, f := range tr.archive.Files {
		if seen[f.Name] {
			t.Fatalf("%s: section %q twice", file, f.Name)
		}
		seen[f.Name] = true
		switch f.Name {
		case "client":
			tr.client = nonEmptyLines(f.Data)
		case "agent":
			tr.agent = nonEmptyLines(f.Data)
		default:
			t.Fatalf("%s: unknown section %q (want client and agent)", file, f.Name)
		}
	}
	if !seen["client"] {
		t.Fatalf("%s: no client section", file)
	}
	if len(bytes.TrimSpace(tr.archive.Comment)) == 0 {
		t.Fatalf("%s: no comment saying what the transcript pins", file)
	}
	return tr
}

func nonEmptyLines(data []byte) []string {
	var out []string
	for l := range strings.Lines(string(data)) {
		if l = strings.TrimRight(l, "\r\n"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func runTranscript(t *testing.T, file string) {
	tr := readTranscript(t, file)
	agent := newTranscriptAgent(t)
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = agent.Serve(context.Background(), agentIn, agentOut)
		agentOut.Close()
	}()
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(clientIn)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, clientIn) // after a scan error, the agent's writes still never block
	}()
	t.Cleanup(func() { // after a failure midway too: end the input, read what is left, wait for Serve
		clientOut.Close()
		deadline := time.After(transcriptWait)
		for range lines {
		}
		select {
		case <-served:
		case <-deadline:
			t.Error("Serve did not return after the end of input")
		}
	})

	p := newTranscriptPlayer(t, tr, lines)
	for i, line := range tr.client {
		if strings.HasPrefix(line, "#") {
			if rest, ok := strings.CutPrefix(line, "#await "); ok {
				p.awaitNext(i, rest)
			}
			continue
		}
		p.wait()
		p.send(clientOut, p.fill(line))
	}
	p.wait()
	clientOut.Close()
	p.drain()

	if *updateTranscripts {
		writeAgentSection(t, file, tr.archive, p.got)
		return
	}
	if diff := diffJSONLines(tr.agent, p.got); diff != "" {
		t.Errorf("%s: the agent's lines differ (-want +got, canonical JSON):\n%s", file, diff)
	}
}

// writeAgentSection rewrites file with its agent section replaced by got.
func writeAgentSection(t *testing.T, file string, arch *txtar.Archive, got []string) {
	t.Helper()
	section := txtar.File{Name: "agent", Data: []byte(strings.Join(got, "\n") + "\n")}
	out := &txtar.Archive{Comment: arch.Comment}
	replaced := false
	for _, f := range arch.Files {
		if f.Name == "agent" {
			f, replaced = section, true
		}
		out.Files = append(out.Files, f)
	}
	if !replaced {
		out.Files = append(out.Files, section)
	}
	if err := os.WriteFile(file, txtar.Format(out), 0o644); err != nil {
		t.Fatal(err)
	}
}
