package acp

import (
	"context"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
)

// TestAgent_Modes checks the session's mode as the editor sees it: the
// config option (category mode) and ACP's modes in session/new; a change by
// session/set_config_option answered with the new options and followed by
// current_mode_update and a message; a change by session/set_mode followed
// by config_option_update; an unknown mode refused naming the valid ones;
// the mode kept by session/load; /status.
func TestAgent_Modes(t *testing.T) {
	h := startAgentWith(t, testOptions{})
	cwd := t.TempDir()
	res, err := h.conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	sid := res.SessionId
	o := res.ConfigOptions[0].Select
	if o == nil || o.Id != modeConfigID || o.Category == nil || *o.Category != acpsdk.SessionConfigOptionCategoryMode || o.CurrentValue != "full-access" || len(*o.Options.Ungrouped) != 3 {
		t.Fatalf("first config option %+v, want the mode selector", res.ConfigOptions[0])
	}
	if res.Modes == nil || res.Modes.CurrentModeId != "full-access" || len(res.Modes.AvailableModes) != 3 || res.Modes.AvailableModes[0].Id != "read-only" {
		t.Fatalf("modes %+v", res.Modes)
	}

	wait := func(from int, what string, match func(acpsdk.SessionUpdate) bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if _, _, err := h.client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.SessionId == sid && match(n.Update) }); err != nil {
			t.Fatalf("no %s: %v", what, err)
		}
	}
	from := len(h.client.Updates())
	set, err := h.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: modeConfigID, Value: "read-only"}})
	if err != nil || set.ConfigOptions[0].Select.CurrentValue != "read-only" {
		t.Fatalf("set_config_option mode: %+v, %v", set, err)
	}
	wait(from, "current_mode_update", func(u acpsdk.SessionUpdate) bool {
		return u.CurrentModeUpdate != nil && u.CurrentModeUpdate.CurrentModeId == "read-only"
	})
	wait(from, "mode message", func(u acpsdk.SessionUpdate) bool {
		return u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil && strings.HasPrefix(u.AgentMessageChunk.Content.Text.Text, "Mode: Read only.")
	})

	from = len(h.client.Updates())
	if _, err := h.conn.SetSessionMode(t.Context(), acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "full-access"}); err != nil {
		t.Fatal(err)
	}
	wait(from, "config_option_update", func(u acpsdk.SessionUpdate) bool {
		return u.ConfigOptionUpdate != nil && u.ConfigOptionUpdate.ConfigOptions[0].Select.CurrentValue == "full-access"
	})
	wait(from, "the plain words of full access", func(u acpsdk.SessionUpdate) bool {
		return u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil && strings.Contains(u.AgentMessageChunk.Content.Text.Text, "run unconfined and can change anything you can")
	})

	_, err = h.conn.SetSessionMode(t.Context(), acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "yolo"})
	if re := requestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, "read-only, workspace-write or full-access") {
		t.Errorf("unknown mode: %d %q", re.Code, re.Message)
	}
	_, err = h.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: modeConfigID, Value: "yolo"}})
	if re := requestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, "read-only, workspace-write or full-access") {
		t.Errorf("unknown mode value: %d %q", re.Code, re.Message)
	}

	from = len(h.client.Updates())
	if _, err := h.conn.SetSessionMode(t.Context(), acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "workspace-write"}); err != nil {
		t.Fatal(err)
	}
	wait(from, "mode message", func(u acpsdk.SessionUpdate) bool {
		return u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil && strings.HasPrefix(u.AgentMessageChunk.Content.Text.Text, "Mode: Workspace write.")
	})
	_, out := h.prompt(t.Context(), string(sid), "/status")
	if got := joinText(out); !strings.HasPrefix(got, "Mode: Workspace write (workspace-write).") {
		t.Errorf("/status = %q", got)
	}
	loaded, err := h.conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil || loaded.Modes == nil || loaded.Modes.CurrentModeId != "workspace-write" || loaded.ConfigOptions[0].Select.CurrentValue != "workspace-write" {
		t.Errorf("session/load: %+v, %v; want the stored workspace-write", loaded, err)
	}
}

// TestAgent_ModeNotEnforcedNotice simulates a kernel without Landlock: the
// session says once, after session/new, that its mode is not enforced.
func TestAgent_ModeNotEnforcedNotice(t *testing.T) {
	none := confine.Support{OS: "linux"}
	h := startAgentOn(t, newTestAgent(&testOptions{Bridge: bridge.Options{Confine: &bridge.Confine{Support: &none}}, DefaultMode: confine.WorkspaceWrite}))
	from := len(h.client.Updates())
	sid := h.newSession()
	var said []string
	for _, n := range h.client.Updates()[from:] {
		if n.SessionId == acpsdk.SessionId(sid) && n.Update.AgentMessageChunk != nil && n.Update.AgentMessageChunk.Content.Text != nil {
			said = append(said, n.Update.AgentMessageChunk.Content.Text.Text)
		}
	}
	if len(said) != 1 || !strings.HasPrefix(said[0], "Workspace write is not enforced: no Landlock") {
		t.Errorf("after session/new: %q; want one message saying the mode is not enforced", said)
	}
}
