package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
)

// TestSession_ThreeServers is the main scenario: a session with the Go
// fixture, server-everything and a server whose command does not exist.
func TestSession_ThreeServers(t *testing.T) {
	a := startAgent(t)
	cwd := t.TempDir()
	log := filepath.Join(cwd, "fixture.log") // in the cwd: the fixture runs in workspace-write mode
	sid := a.newSession(cwd, fixtureServer("fixture", log), everythingServer("everything"),
		acpclient.Stdio("ghost", "acp-agent-e2e-no-such-command", nil, nil))

	t.Run("two connected, one reported failed", func(t *testing.T) {
		startup := text(a.Client.Updates())
		if !strings.Contains(startup, `MCP server "ghost" failed: cannot start command "acp-agent-e2e-no-such-command"`) {
			t.Errorf("startup messages = %q", startup)
		}
		if strings.Contains(startup, `"fixture" failed`) || strings.Contains(startup, `"everything" failed`) {
			t.Errorf("a good server was reported failed: %q", startup)
		}
		_, out := a.prompt(sid, "/servers")
		got := text(out)
		for _, want := range []string{"- fixture: connected (stdio,", "- everything: connected (stdio,", "- ghost: failed (stdio): cannot start command"} {
			if !strings.Contains(got, want) {
				t.Errorf("/servers lacks %q:\n%s", want, got)
			}
		}
	})

	t.Run("/tools lists both servers", func(t *testing.T) {
		stop, out := a.prompt(sid, "/tools")
		got := text(out)
		if stop != acpsdk.StopReasonEndTurn {
			t.Errorf("stop = %s", stop)
		}
		for _, want := range []string{"mcp__fixture__echo (fixture)", "mcp__fixture__slow (fixture)", "mcp__everything__echo (everything)", "mcp__everything__get-sum (everything)", "mcp__fixture__a_tool_with_a_deliberately"} {
			if !strings.Contains(got, want) {
				t.Errorf("/tools lacks %q:\n%s", want, got)
			}
		}
	})

	t.Run("echo through server-everything", func(t *testing.T) {
		stop, out := a.prompt(sid, `/call mcp__everything__echo {"message":"hi"}`)
		var start *acpsdk.SessionUpdateToolCall
		for _, u := range out {
			if u.Update.ToolCall != nil {
				start = u.Update.ToolCall
				break
			}
		}
		if start == nil || start.Title != "Echo Tool (everything)" || start.Status != acpsdk.ToolCallStatusInProgress { // nothing to ask: announced running
			t.Fatalf("tool_call = %+v\n%s", start, dump(out))
		}
		end := finalToolUpdate(t, out)
		if stop != acpsdk.StopReasonEndTurn || *end.Status != acpsdk.ToolCallStatusCompleted || contentText(end) != "Echo: hi" || end.ToolCallId != start.ToolCallId {
			t.Errorf("stop %s, end %+v\n%s", stop, end, dump(out))
		}
	})

	t.Run("image content", func(t *testing.T) {
		for _, tool := range []string{"mcp__fixture__image", "mcp__everything__get-tiny-image"} {
			_, out := a.prompt(sid, "/call "+tool)
			end := finalToolUpdate(t, out)
			var img *acpsdk.ContentBlockImage
			for _, c := range end.Content {
				if c.Content != nil && c.Content.Content.Image != nil {
					img = c.Content.Content.Image
				}
			}
			if img == nil || img.MimeType != "image/png" || img.Data == "" {
				t.Errorf("%s: no PNG image content:\n%s", tool, dump(out))
			}
		}
	})

	t.Run("audio, embedded resource and resource link", func(t *testing.T) {
		_, out := a.prompt(sid, "/call mcp__fixture__audio")
		if c := finalToolUpdate(t, out).Content; len(c) != 1 || c[0].Content.Content.Audio == nil || c[0].Content.Content.Audio.MimeType != "audio/wav" {
			t.Errorf("audio:\n%s", dump(out))
		}
		_, out = a.prompt(sid, "/call mcp__fixture__resource")
		if c := finalToolUpdate(t, out).Content; len(c) != 1 || c[0].Content.Content.Resource == nil ||
			c[0].Content.Content.Resource.Resource.TextResourceContents.Text != "hello from an embedded resource" {
			t.Errorf("resource:\n%s", dump(out))
		}
		_, out = a.prompt(sid, "/call mcp__fixture__resource_link")
		if c := finalToolUpdate(t, out).Content; len(c) != 1 || c[0].Content.Content.ResourceLink == nil || c[0].Content.Content.ResourceLink.Uri != "fixture://files/report.pdf" {
			t.Errorf("resource_link:\n%s", dump(out))
		}
	})

	t.Run("the child environment is sanitized and roots are the cwd", func(t *testing.T) {
		_, out := a.prompt(sid, "/call mcp__fixture__env")
		env := contentText(finalToolUpdate(t, out))
		if strings.Contains(env, "sk-agent-secret") || !strings.Contains(env, "FIXTURE_LOG=") || !strings.Contains(env, "PATH=") {
			t.Errorf("child env:\n%s", env)
		}
		_, out = a.prompt(sid, "/call mcp__fixture__roots")
		if roots := contentText(finalToolUpdate(t, out)); !strings.Contains(roots, "file://"+cwd) {
			t.Errorf("roots = %q, want file://%s", roots, cwd)
		}
	})

	t.Run("isError and unknown tools fail the call, not the session", func(t *testing.T) {
		_, out := a.prompt(sid, `/call mcp__fixture__fail {"message":"boom"}`)
		if end := finalToolUpdate(t, out); *end.Status != acpsdk.ToolCallStatusFailed || !strings.Contains(contentText(end), "boom") {
			t.Errorf("fail: %+v", end)
		}
		_, out = a.prompt(sid, `/call mcp__nope__x {}`)
		if end := finalToolUpdate(t, out); *end.Status != acpsdk.ToolCallStatusFailed || contentText(end) != "unknown tool mcp__nope__x; /tools lists them" {
			t.Errorf("unknown: %+v", end)
		}
	})

	t.Run("slow and session/cancel", func(t *testing.T) {
		done := make(chan acpsdk.StopReason, 1)
		from := len(a.Client.Updates())
		go func() {
			stop, err := a.Prompt(context.Background(), sid, `/call mcp__fixture__slow {"seconds": 60, "steps": 600}`)
			if err != nil {
				t.Errorf("slow prompt: %v", err)
			}
			done <- stop
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		// Wait until the call reports progress, then cancel.
		if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
			u := n.Update.ToolCallUpdate
			return u != nil && u.Status != nil && *u.Status == acpsdk.ToolCallStatusInProgress && strings.Contains(contentText(u), "progress")
		}); err != nil {
			t.Fatalf("no progress update: %v\n%s", err, dump(a.Client.Updates()[from:]))
		}
		waitFile(t, log, "called slow", 10*time.Second)
		cancelled := time.Now()
		if err := a.Conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(sid)}); err != nil {
			t.Fatal(err)
		}
		select {
		case stop := <-done:
			if stop != acpsdk.StopReasonCancelled {
				t.Errorf("stopReason = %s, want cancelled", stop)
			}
			if d := time.Since(cancelled); d > 2*time.Second {
				t.Errorf("the turn ended %v after session/cancel, want within 2s", d)
			}
		case <-ctx.Done():
			t.Fatal("the prompt did not end after session/cancel")
		}
		waitFile(t, log, "cancelled slow", 10*time.Second) // the fixture saw notifications/cancelled
	})

	t.Run("crash fails the call and the next call works", func(t *testing.T) {
		_, out := a.prompt(sid, "/call mcp__fixture__crash")
		end := finalToolUpdate(t, out)
		if *end.Status != acpsdk.ToolCallStatusFailed || !strings.Contains(contentText(end), `MCP server "fixture"`) {
			t.Errorf("crash: %+v\n%s", end, dump(out))
		}
		_, out = a.prompt(sid, `/call mcp__everything__echo {"message":"still here"}`)
		if end := finalToolUpdate(t, out); *end.Status != acpsdk.ToolCallStatusCompleted || contentText(end) != "Echo: still here" {
			t.Errorf("after crash: %+v", end)
		}
		_, out = a.prompt(sid, "/servers")
		if got := text(out); !strings.Contains(got, "- fixture: failed (stdio): connection lost") {
			t.Errorf("/servers after crash:\n%s", got)
		}
	})
}

// TestSession_CloseEndsEveryProcess checks that session/close leaves no
// child or grandchild of the session running.
func TestSession_CloseEndsEveryProcess(t *testing.T) {
	a := startAgent(t)
	cwd := t.TempDir()
	log := filepath.Join(cwd, "fixture.log") // in the cwd: the fixture runs in workspace-write mode
	sid := a.newSession(cwd, fixtureServer("fixture", log), everythingServer("everything"))
	_, out := a.prompt(sid, "/call mcp__fixture__spawn_grandchild")
	grandchild, err := strconv.Atoi(strings.TrimSpace(contentText(finalToolUpdate(t, out))))
	if err != nil {
		t.Fatalf("spawn_grandchild: %v\n%s", err, dump(out))
	}
	pids := descendants(a.Cmd.Process.Pid)
	var sawNode, sawGrandchild bool
	for _, p := range pids {
		sawNode = sawNode || strings.Contains(cmdline(p), "server-everything")
		sawGrandchild = sawGrandchild || p == grandchild
	}
	if !sawNode || !sawGrandchild {
		t.Fatalf("expected node and the fixture's grandchild among %v", pids)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	closed := time.Now()
	if _, err := a.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)}); err != nil {
		t.Fatal(err)
	}
	if left := waitAllGone(pids, 7*time.Second-time.Since(closed)); len(left) > 0 {
		for _, p := range left {
			t.Errorf("process %d (%s) survived session/close", p, cmdline(p))
		}
	}
	if _, err := a.Prompt(ctx, sid, "/tools"); err == nil {
		t.Error("prompt on a closed session succeeded")
	}
}

// TestSession_AgentExitEndsEverything checks that the agent ending — the
// editor quitting (stdin EOF), SIGTERM or SIGINT — with a live session leaves
// no child or grandchild behind.
func TestSession_AgentExitEndsEverything(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		end  func(a *agent) error
	}{
		{"stdin EOF", func(a *agent) error { return a.CloseStdin() }},
		{"SIGTERM", func(a *agent) error { return a.Cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGINT", func(a *agent) error { return a.Cmd.Process.Signal(syscall.SIGINT) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := startAgent(t)
			sid := a.newSession(t.TempDir(), fixtureServer("fixture", filepath.Join(t.TempDir(), "log")), everythingServer("everything"))
			_, out := a.prompt(sid, "/call mcp__fixture__spawn_grandchild")
			finalToolUpdate(t, out)
			pids := descendants(a.Cmd.Process.Pid)
			if len(pids) < 3 {
				t.Fatalf("descendants = %v, want the fixture, its grandchild and node", pids)
			}
			if err := tt.end(a); err != nil {
				t.Fatal(err)
			}
			if err := a.Wait(20 * time.Second); err != nil && !strings.Contains(err.Error(), "exit status") {
				t.Fatalf("agent after %s: %v", tt.name, err)
			}
			for _, p := range waitAllGone(pids, 10*time.Second) {
				t.Errorf("process %d (%s) survived the agent", p, cmdline(p))
			}
		})
	}
}
