package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The client of the ACP remote transports (testdata/ts-remote-client.mjs)
// and the TypeScript SDK's reference server (testdata/ts-reference-server.mjs)
// run on the machine's node (20 here), which has no global WebSocket: the
// client takes the npm ws package's.

// tsRemoteRun is what testdata/ts-remote-client.mjs prints at the end.
type tsRemoteRun struct {
	Transport         string         `json:"transport"`
	Scenario          string         `json:"scenario"`
	ProtocolVersion   int            `json:"protocolVersion"`
	AgentCapabilities map[string]any `json:"agentCapabilities"`
	MCPOverACP        bool           `json:"mcpOverAcp"`
	HostedServer      *string        `json:"hostedServer"`
	SessionID         string         `json:"sessionId"`
	SessionIDs        []string       `json:"sessionIds"`
	Turns             []struct {
		SessionID  string  `json:"sessionId"`
		Prompt     string  `json:"prompt"`
		StopReason *string `json:"stopReason"`
		Text       string  `json:"text"`
		ToolCalls  []struct {
			Title  string `json:"title"`
			Status string `json:"status"`
			Text   string `json:"text"`
		} `json:"toolCalls"`
	} `json:"turns"`
	StopReasons      []*string `json:"stopReasons"`
	Texts            []string  `json:"texts"`
	ToolCallStatuses []string  `json:"toolCallStatuses"`
	Permissions      []struct {
		SessionID string `json:"sessionId"`
		OptionID  string `json:"optionId"`
	} `json:"permissions"`
	Replayed []struct {
		SessionID string         `json:"sessionId"`
		Update    map[string]any `json:"update"`
	} `json:"replayed"`
	Closed           []string `json:"closed"`
	ConnectionClosed bool     `json:"connectionClosed"`
	ConnectionError  *string  `json:"connectionError"`
	Errors           []struct {
		Step    string `json:"step"`
		Message string `json:"message"`
		Code    *int   `json:"code"`
		Status  *int   `json:"status"`
	} `json:"errors"`
}

// tsReference is a running testdata/ts-reference-server.mjs.
type tsReference struct {
	URL string // http://127.0.0.1:<port>/acp
	cmd *exec.Cmd
}

// wsURL is the server's /acp for WebSocket clients.
func (s *tsReference) wsURL() string { return "ws" + strings.TrimPrefix(s.URL, "http") }

// urlFor is the server's /acp for the transport ("http" or "ws").
func (s *tsReference) urlFor(transport string) string {
	if transport == "ws" {
		return s.wsURL()
	}
	return s.URL
}

// kill ends the server at once (SIGKILL): its agents get EOF on stdin.
func (s *tsReference) kill() { _ = s.cmd.Process.Kill() }

// agentsGone waits until the server has no agent process left: each
// connection's agent exits once the connection is closed.
func (s *tsReference) agentsGone(t *testing.T) {
	t.Helper()
	if left := waitAllGone(descendants(s.cmd.Process.Pid), 30*time.Second); len(left) > 0 {
		t.Errorf("agent processes %v of closed connections still run", left)
	}
}

// startTSReference starts the SDK's reference server in front of the agent
// binary run with agentArgs, and waits (events, not time) for the URL it
// prints once listening. The server is stopped with SIGTERM when the test
// ends (it closes its connections and waits for its agents).
func startTSReference(t testing.TB, agentArgs ...string) *tsReference {
	t.Helper()
	script, err := filepath.Abs("testdata/ts-reference-server.mjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{script, agentBin}, agentArgs...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} // no API key: direct mode
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("the reference server did not stop on SIGTERM within 30 s\nstderr:\n%s", stderr.String())
		}
	})
	select {
	case url := <-lines:
		if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/acp") {
			t.Fatalf("the reference server printed %q, want its http://127.0.0.1:<port>/acp\nstderr:\n%s", url, stderr.String())
		}
		return &tsReference{URL: url, cmd: cmd}
	case <-time.After(60 * time.Second):
		t.Fatalf("the reference server printed no URL within 60 s\nstderr:\n%s", stderr.String())
	}
	return nil
}

// tsRemoteClient is the command of one run of testdata/ts-remote-client.mjs.
func tsRemoteClient(t *testing.T, ctx context.Context, transport, url, cwd string, args ...string) *exec.Cmd {
	t.Helper()
	script, err := filepath.Abs("testdata/ts-remote-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "node", append([]string{script, transport, url, cwd}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	return cmd
}

// runTSRemote runs the client to its end and returns what it printed.
func runTSRemote(t *testing.T, transport, url, cwd string, args ...string) tsRemoteRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := tsRemoteClient(t, ctx, transport, url, cwd, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ts-remote-client.mjs %s %s: %v\nstdout:\n%s\nstderr:\n%s", transport, args, err, stdout.String(), stderr.String())
	}
	return decodeTSRemote(t, stdout.Bytes())
}

func decodeTSRemote(t *testing.T, b []byte) tsRemoteRun {
	t.Helper()
	var run tsRemoteRun
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatalf("client output: %v\n%s", err, b)
	}
	return run
}

// str is *p, or "<null>".
func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// checkDefaultTurns checks the /tools and /call turns of session sid.
func checkDefaultTurns(t *testing.T, run tsRemoteRun, sid string) {
	t.Helper()
	var turns int
	for _, turn := range run.Turns {
		if turn.SessionID != sid {
			continue
		}
		turns++
		if str(turn.StopReason) != "end_turn" {
			t.Errorf("%s %q: stopReason %s, want end_turn", sid, turn.Prompt, str(turn.StopReason))
		}
		switch {
		case turn.Prompt == "/tools":
			if !strings.Contains(turn.Text, "mcp__tsclient__echo (tsclient) — Echo a message from the remote TypeScript editor.") {
				t.Errorf("%s /tools = %q, want the client-hosted echo listed", sid, turn.Text)
			}
		case strings.HasPrefix(turn.Prompt, "/call mcp__tsclient__echo "):
			if len(turn.ToolCalls) != 1 || turn.ToolCalls[0].Status != "completed" || turn.ToolCalls[0].Text != "TS remote editor echo: hi from the remote TS client" {
				t.Errorf("%s /call: tool calls %+v, want the echo completed", sid, turn.ToolCalls)
			}
		default:
			t.Errorf("%s: unexpected turn %q", sid, turn.Prompt)
		}
	}
	if turns != 2 {
		t.Errorf("%s: %d turns, want /tools and /call", sid, turns)
	}
}

// TestTSRemoteClient_AgainstSDKReferenceServer runs the network client of
// testdata/ts-remote-client.mjs against the TypeScript SDK's own server
// (testdata/ts-reference-server.mjs, the stdio agent behind it), over
// Streamable HTTP and WebSocket, in each scenario, so that the client the
// gateway's tests use is known to speak the SDK's transports: it reads
// mcpCapabilities.acp, hosts an MCP server over ACP, answers the
// permission request, collects the updates per session, reloads a
// session, and reports a server that dies under it.
func TestTSRemoteClient_AgainstSDKReferenceServer(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"http", "ws"} {
		t.Run(transport+"/default", func(t *testing.T) {
			t.Parallel()
			srv := startTSReference(t, "--store", "memory")
			run := runTSRemote(t, transport, srv.urlFor(transport), t.TempDir(), "--token", "not-checked-by-the-reference")
			if len(run.Errors) != 0 || run.ConnectionClosed {
				t.Fatalf("errors %+v, connection closed early %v (%s)", run.Errors, run.ConnectionClosed, str(run.ConnectionError))
			}
			if run.Transport != transport || run.ProtocolVersion != 1 || !run.MCPOverACP || str(run.HostedServer) != "tsclient" {
				t.Errorf("transport %q, protocol %d, mcpOverAcp %v, hosted %s", run.Transport, run.ProtocolVersion, run.MCPOverACP, str(run.HostedServer))
			}
			checkDefaultTurns(t, run, run.SessionID)
			if !slices.Equal(run.ToolCallStatuses, []string{"completed"}) {
				t.Errorf("tool call statuses %v", run.ToolCallStatuses)
			}
			if len(run.Permissions) != 1 || run.Permissions[0].OptionID != "allow_once" || run.Permissions[0].SessionID != run.SessionID {
				t.Errorf("permissions %+v, want the /call allowed once", run.Permissions)
			}
			if !slices.Equal(run.Closed, []string{run.SessionID}) {
				t.Errorf("closed %v, want %s", run.Closed, run.SessionID)
			}
			srv.agentsGone(t)
		})

		t.Run(transport+"/two-sessions", func(t *testing.T) {
			t.Parallel()
			srv := startTSReference(t, "--store", "memory")
			run := runTSRemote(t, transport, srv.urlFor(transport), t.TempDir(), "--scenario", "two-sessions")
			if len(run.Errors) != 0 {
				t.Fatalf("errors %+v", run.Errors)
			}
			if len(run.SessionIDs) != 2 || run.SessionIDs[0] == run.SessionIDs[1] {
				t.Fatalf("sessions %v, want two", run.SessionIDs)
			}
			for _, sid := range run.SessionIDs {
				checkDefaultTurns(t, run, sid)
			}
			if len(run.Permissions) != 2 || len(run.Closed) != 2 {
				t.Errorf("permissions %+v, closed %v: want two of each", run.Permissions, run.Closed)
			}
			srv.agentsGone(t)
		})

		t.Run(transport+"/load", func(t *testing.T) {
			t.Parallel()
			// One agent process per connection: the session outlives the
			// first in a SQLite store they share.
			srv := startTSReference(t, "--store", filepath.Join(t.TempDir(), "sessions.db"))
			cwd := t.TempDir()
			first := runTSRemote(t, transport, srv.urlFor(transport), cwd)
			if len(first.Errors) != 0 || first.SessionID == "" {
				t.Fatalf("first connection: errors %+v, session %q", first.Errors, first.SessionID)
			}
			srv.agentsGone(t) // the store is the next agent's alone
			run := runTSRemote(t, transport, srv.urlFor(transport), cwd, "--scenario", "load", "--session", first.SessionID)
			if len(run.Errors) != 0 || run.SessionID != first.SessionID {
				t.Fatalf("load: errors %+v, session %q, want %q", run.Errors, run.SessionID, first.SessionID)
			}
			var kinds []string
			replay := ""
			for _, u := range run.Replayed {
				kind, _ := u.Update["sessionUpdate"].(string)
				kinds = append(kinds, kind)
				b, _ := json.Marshal(u.Update)
				replay += string(b) + "\n"
			}
			for _, want := range []string{`"text":"/tools"`, `mcp__tsclient__echo (tsclient)`, `"status":"completed"`, `TS remote editor echo: hi from the remote TS client`} {
				if !strings.Contains(replay, want) {
					t.Errorf("the replay lacks %s:\n%s", want, replay)
				}
			}
			if !slices.Contains(kinds, "user_message_chunk") || !slices.Contains(kinds, "agent_message_chunk") || !slices.Contains(kinds, "tool_call") {
				t.Errorf("replayed updates %v", kinds)
			}

			missing := runTSRemote(t, transport, srv.urlFor(transport), cwd, "--scenario", "load", "--session", "sess_NOSUCHSESSION")
			if len(missing.Errors) != 1 || missing.Errors[0].Step != "session/load" || missing.Errors[0].Code == nil {
				t.Errorf("load of an unknown session: errors %+v, want session/load's JSON-RPC error", missing.Errors)
			}
		})

		t.Run(transport+"/stay", func(t *testing.T) {
			t.Parallel()
			srv := startTSReference(t, "--store", "memory")
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := tsRemoteClient(t, ctx, transport, srv.urlFor(transport), t.TempDir(), "--scenario", "stay")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(stdout)
			line, err := r.ReadBytes('\n') // the client's ready line; the context bounds it
			var ready struct {
				Ready     bool   `json:"ready"`
				SessionID string `json:"sessionId"`
			}
			if err != nil || json.Unmarshal(line, &ready) != nil || !ready.Ready || ready.SessionID == "" {
				t.Fatalf("ready line %q: %v\nstderr:\n%s", line, err, stderr.String())
			}
			agents := descendants(srv.cmd.Process.Pid)
			srv.kill()
			if left := waitAllGone(append(agents, srv.cmd.Process.Pid), 30*time.Second); len(left) > 0 {
				t.Errorf("processes %v outlived the killed server", left)
			}
			_ = stdin.Close()
			rest, _ := io.ReadAll(r)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("client: %v\nstdout:\n%s\nstderr:\n%s", err, rest, stderr.String())
			}
			run := decodeTSRemote(t, rest)
			if run.SessionID != ready.SessionID || len(run.StopReasons) != 2 || str(run.StopReasons[0]) != "end_turn" || run.StopReasons[1] != nil {
				t.Errorf("session %s, stop reasons %v: want the first turn ended, the one after the kill failed", run.SessionID, run.StopReasons)
			}
			if !run.ConnectionClosed {
				t.Error("the client did not see its connection end")
			}
			if len(run.Errors) != 1 || run.Errors[0].Step != "session/prompt /tools" {
				t.Errorf("errors %+v, want the prompt after the kill", run.Errors)
			}
		})
	}
}
