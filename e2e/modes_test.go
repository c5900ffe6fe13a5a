package e2e

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
)

// needLandlock skips a test of what the kernel enforces on a kernel
// without Landlock ABI min (the unit tests simulate one without it).
func needLandlock(t *testing.T, min int) {
	t.Helper()
	if abi := confine.Supported().ABI; abi < min {
		t.Skipf("kernel Landlock ABI %d, the test needs %d", abi, min)
	}
}

// sandboxFixture is the fixture with the tools of a server that ignores its
// roots (write_path, read_path, dial).
func sandboxFixture(name string) acpsdk.McpServer {
	return acpclient.Stdio(name, fixtureBin, nil, map[string]string{"FIXTURE_SANDBOX_TOOLS": "1"})
}

// modeAgent starts the agent in direct mode with config sandbox.mode mode
// (and more config), the test calls allowed without asking.
func modeAgent(t *testing.T, mode string, more map[string]any) *agent {
	t.Helper()
	cfg := map[string]any{
		"sandbox":     map[string]any{"mode": mode},
		"permissions": map[string]any{"allow": []string{"mcp__acp__run_command", "mcp__fx__*"}},
	}
	for k, v := range more {
		cfg[k] = v
	}
	return startAgentWith(t, nil, "--config", writeConfig(t, cfg))
}

// callText runs a /call and returns the final tool_call_update's text, all
// its blocks.
func (a *agent) callText(t *testing.T, sid, call string) string {
	t.Helper()
	_, out := a.prompt(sid, call)
	u := finalToolUpdate(t, out)
	var b strings.Builder
	for _, c := range u.Content {
		if c.Content != nil && c.Content.Content.Text != nil {
			b.WriteString(c.Content.Content.Text.Text + "\n")
		}
	}
	return b.String()
}

// TestModes_EnforcedByTheKernel runs, in each mode, run_command (a local
// child) and a stdio server that ignores its roots, each writing inside and
// outside the session's directory. Read-only: nothing is written (the
// server's tool is refused before it runs); workspace-write: only inside;
// full access: both. A refused write says the mode and how to change it.
func TestModes_EnforcedByTheKernel(t *testing.T) {
	needLandlock(t, 1)
	for _, mode := range confine.Modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			a := modeAgent(t, string(mode), nil)
			cwd, outside := t.TempDir(), t.TempDir()
			sid := a.newSession(cwd, sandboxFixture("fx"))

			cmdIn := a.callText(t, sid, `/call mcp__acp__run_command {"command": "echo x > cmd-in && echo wrote"}`)
			cmdOut := a.callText(t, sid, `/call mcp__acp__run_command {"command": "echo x > `+outside+`/cmd-out && echo wrote"}`)
			srvIn := a.callText(t, sid, `/call mcp__fx__write_path {"path": "`+filepath.Join(cwd, "srv-in")+`", "text": "x"}`)
			srvOut := a.callText(t, sid, `/call mcp__fx__write_path {"path": "`+filepath.Join(outside, "srv-out")+`", "text": "x"}`)
			exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

			type want struct{ cmdIn, cmdOut, srvIn, srvOut bool }
			w := map[confine.Mode]want{
				confine.ReadOnly:       {},
				confine.WorkspaceWrite: {cmdIn: true, srvIn: true},
				confine.FullAccess:     {true, true, true, true},
			}[mode]
			got := want{exists(filepath.Join(cwd, "cmd-in")), exists(filepath.Join(outside, "cmd-out")), exists(filepath.Join(cwd, "srv-in")), exists(filepath.Join(outside, "srv-out"))}
			if got != w {
				t.Errorf("written (command in, out, server in, out) %+v, want %+v\ncommand in: %s\ncommand out: %s\nserver in: %s\nserver out: %s", got, w, cmdIn, cmdOut, srvIn, srvOut)
			}
			switch mode {
			case confine.ReadOnly:
				if !strings.Contains(cmdIn, "read-only mode: the kernel refuses every write") {
					t.Errorf("run_command writing in read-only: %s; want the mode's note", cmdIn)
				}
				if !strings.Contains(srvIn, "refused: the session is in read-only mode") {
					t.Errorf("a server's write tool in read-only: %s; want refused before it ran", srvIn)
				}
			case confine.WorkspaceWrite:
				for what, out := range map[string]string{"run_command": cmdOut, "the server": srvOut} {
					if !strings.Contains(out, "workspace-write mode: the kernel refuses writes outside") || !strings.Contains(out, "full-access") {
						t.Errorf("%s writing outside: %s; want the mode's note", what, out)
					}
				}
				if !strings.Contains(srvOut, "servers.fx.sandbox.write") {
					t.Errorf("the server writing outside: %s; want the config key that widens it", srvOut)
				}
			}
		})
	}
}

// TestModes_ServerRules checks a server's own rules in the default mode:
// network false refuses it a TCP connect to a loopback listener another
// server of the same session reaches; a read list keeps it from a file
// outside the list, not from one inside.
func TestModes_ServerRules(t *testing.T) {
	needLandlock(t, 4)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // ends when ln is closed
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	cwd, secret := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "key"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "notes"), []byte("visible"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := modeAgent(t, "workspace-write", map[string]any{"servers": map[string]any{
		"fx":     map[string]any{"sandbox": map[string]any{"network": false, "read": []string{cwd}}},
		"fxopen": map[string]any{},
	}, "permissions": map[string]any{"allow": []string{"mcp__fx*"}}})
	sid := a.newSession(cwd, sandboxFixture("fx"), sandboxFixture("fxopen"))
	addr := ln.Addr().String()
	if out := a.callText(t, sid, `/call mcp__fx__dial {"addr": "`+addr+`"}`); !strings.Contains(out, "permission denied") || !strings.Contains(out, "servers.fx.sandbox.network false") {
		t.Errorf("network false, dial: %s; want refused, naming the rule", out)
	}
	if out := a.callText(t, sid, `/call mcp__fxopen__dial {"addr": "`+addr+`"}`); !strings.Contains(out, "connected to "+addr) {
		t.Errorf("a server without the rule, dial: %s", out)
	}
	if out := a.callText(t, sid, `/call mcp__fx__read_path {"path": "`+filepath.Join(secret, "key")+`"}`); strings.Contains(out, "s3cret") || !strings.Contains(out, "permission denied") || !strings.Contains(out, "servers.fx.sandbox.read") {
		t.Errorf("a file outside the read list: %s; want refused", out)
	}
	if out := a.callText(t, sid, `/call mcp__fx__read_path {"path": "`+filepath.Join(cwd, "notes")+`"}`); !strings.Contains(out, "visible") {
		t.Errorf("a file inside the read list: %s", out)
	}
}

// TestModes_SwitchBySetConfigOption switches a workspace-write session to
// full access with session/set_config_option: the response and a
// current_mode_update say so, the user is told which server keeps the old
// mode, /status shows it, the next run_command writes outside the cwd, and
// the server, started before the switch, still cannot; session/load starts
// it again under full access, and the mode is kept.
func TestModes_SwitchBySetConfigOption(t *testing.T) {
	needLandlock(t, 1)
	a := modeAgent(t, "workspace-write", nil)
	cwd, outside := t.TempDir(), t.TempDir()
	sid := a.newSession(cwd, sandboxFixture("fx"))
	write := `/call mcp__acp__run_command {"command": "echo x > ` + outside + `/f && echo wrote"}`
	if out := a.callText(t, sid, write); !strings.Contains(out, "Permission denied") {
		t.Fatalf("before the switch: %s", out)
	}

	from := len(a.Client.Updates())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := a.Conn.SetSessionConfigOption(ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
		SessionId: acpsdk.SessionId(sid), ConfigId: "mode", Value: "full-access"}})
	if err != nil || res.ConfigOptions[0].Select == nil || res.ConfigOptions[0].Select.CurrentValue != "full-access" {
		t.Fatalf("set_config_option mode: %+v, %v", res, err)
	}
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		return n.Update.CurrentModeUpdate != nil && n.Update.CurrentModeUpdate.CurrentModeId == "full-access"
	}); err != nil {
		t.Fatalf("no current_mode_update: %v", err)
	}
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		s := acpclient.Text(n)
		return strings.Contains(s, "Mode: Full access.") && strings.Contains(s, "keep the mode they started under") && strings.Contains(s, ": fx.")
	}); err != nil {
		t.Fatalf("the user was not told which server keeps its mode: %v\n%s", err, text(a.Client.Updates()[from:]))
	}
	if _, out := a.prompt(sid, "/status"); !strings.Contains(text(out), "- fx: runs under workspace-write; it keeps it") {
		t.Errorf("/status: %s", text(out))
	}
	if out := a.callText(t, sid, write); !strings.Contains(out, "wrote") {
		t.Errorf("run_command after the switch: %s", out)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err != nil {
		t.Errorf("the command's file: %v", err)
	}
	srv := `/call mcp__fx__write_path {"path": "` + filepath.Join(outside, "g") + `", "text": "x"}`
	if out := a.callText(t, sid, srv); !strings.Contains(out, "permission denied") {
		t.Errorf("the server started before the switch: %s; want it still confined", out)
	}

	loaded, err := a.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{sandboxFixture("fx")}})
	if err != nil || loaded.Modes == nil || loaded.Modes.CurrentModeId != "full-access" {
		t.Fatalf("session/load: %+v, %v; want full access kept", loaded, err)
	}
	if out := a.callText(t, sid, srv); !strings.Contains(out, "wrote") {
		t.Errorf("the server after session/load: %s", out)
	}
	if _, err := os.Stat(filepath.Join(outside, "g")); errors.Is(err, os.ErrNotExist) {
		t.Error("the server's file after session/load is missing")
	}
}

// TestModes_EditorTerminal runs run_command in the editor's terminal (on
// the agent's machine) in workspace-write mode: a write outside the cwd is
// refused there too.
func TestModes_EditorTerminal(t *testing.T) {
	needLandlock(t, 1)
	terms := &acpclient.LocalTerminals{}
	t.Cleanup(terms.Close)
	cfg := writeConfig(t, map[string]any{"permissions": map[string]any{"allow": []string{"mcp__acp__run_command"}}})
	a := startAgentClient(t, &acpclient.Recorder{Terminals: terms}, nil, "--config", cfg)
	cwd, outside := t.TempDir(), t.TempDir()
	sid := a.newSession(cwd)
	out := a.callText(t, sid, `/call mcp__acp__run_command {"command": "echo x > in && echo x > `+outside+`/out"}`)
	if _, err := os.Stat(filepath.Join(cwd, "in")); err != nil {
		t.Errorf("inside the cwd: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "out")); !errors.Is(err, os.ErrNotExist) || !strings.Contains(out, "workspace-write mode") {
		t.Errorf("outside the cwd, in the editor's terminal: %v\n%s", err, out)
	}
}
