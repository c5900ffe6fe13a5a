package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// A store with corrupt pages stops the agent at start, with a message naming
// the file and what to do.
func TestStore_CorruptStoreStopsTheAgentAtStart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	big := strings.Repeat("x", 2000)
	for i := range 40 {
		id := "sess_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if err := st.Create(t.Context(), store.Record{ID: id, Key: "acp:" + id, Cwd: "/" + big, Created: now, Updated: now}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 20*4096 {
		t.Fatalf("store: %d bytes, %v", len(data), err)
	}
	copy(data[2*4096:12*4096], bytes.Repeat([]byte{0xA5, 0x17, 0x00, 0xFF}, 10*1024)) // page 1, the schema, stays
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentBin, "--store", path)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // stdin is /dev/null: a healthy agent exits 0 at once
	err = cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Errorf("agent on a corrupt store: %v, want exit status 1", err)
	}
	for _, want := range []string{path, "the database is damaged", "move the file away", "--store memory"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// Across an agent restart and session/load: the session's model is restored,
// and a new direct /call gets an ID distinct from the replayed call's.
func TestStore_ModelAndCallIDsSurviveRestart(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "sessions.db")
	fake := fakemodel.NewOpenAI(t)
	cwd := t.TempDir()
	a := storeAgent(t, store, fake.URL)
	sid := a.newSession(cwd, fixtureServer("fixture", ""))
	if _, err := a.Conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
		SessionId: acpsdk.SessionId(sid), ConfigId: "model", Value: "direct"}}); err != nil {
		t.Fatal(err)
	}
	first := finalToolUpdate(t, func() []acpsdk.SessionNotification {
		_, out := a.prompt(sid, `/call mcp__fixture__echo {"message":"one"}`)
		return out
	}())
	if err := a.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	b := storeAgent(t, store, fake.URL)
	from := len(b.Client.Updates())
	res, err := b.Conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{fixtureServer("fixture", "")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ConfigOptions) != 2 || res.ConfigOptions[0].Select.CurrentValue != "workspace-write" || res.ConfigOptions[1].Select.CurrentValue != "direct" {
		t.Errorf("session/load configOptions = %+v, want the default mode and the model direct restored", res.ConfigOptions)
	}
	var replayed []acpsdk.ToolCallId
	for _, n := range b.Client.Updates()[from:] {
		if n.Update.ToolCall != nil {
			replayed = append(replayed, n.Update.ToolCall.ToolCallId)
		}
	}
	if len(replayed) != 1 || replayed[0] != first.ToolCallId {
		t.Fatalf("replayed calls %v, want [%s]", replayed, first.ToolCallId)
	}
	// A plain prompt runs on the restored model (direct: the help text), not
	// on the fake model.
	if _, out := b.prompt(sid, "hello"); !strings.Contains(text(out), "direct mode") {
		t.Errorf("after load the prompt ran on another model: %q", text(out))
	}
	_, out := b.prompt(sid, `/call mcp__fixture__echo {"message":"two"}`)
	if second := finalToolUpdate(t, out); second.ToolCallId == first.ToolCallId {
		t.Errorf("the call after load reuses the ID %s of the replayed call", first.ToolCallId)
	}
}
