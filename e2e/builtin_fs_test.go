package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// startModelAgent runs the agent with the client rec and, as its model, the
// fake server of backend name ("openai" or "anthropic", as in
// modelBackends).
func startModelAgent(t *testing.T, name, url string, rec *acpclient.Recorder) *agent {
	t.Helper()
	if name == "openai" {
		return startAgentClient(t, rec, []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + url + "/v1"}, "--model", "openai:gpt-fake")
	}
	cfg := filepath.Join(t.TempDir(), "config.json")
	data, _ := json.Marshal(map[string]any{"model": map[string]any{"provider": "anthropic", "name": "claude-fake", "baseURL": url, "apiKeyEnv": "FAKE_ANTHROPIC_KEY"}})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return startAgentClient(t, rec, []string{"FAKE_ANTHROPIC_KEY=test-key"}, "--config", cfg)
}

// finalUpdates maps each tool call ID to its last tool_call_update with a
// final status.
func finalUpdates(updates []acpsdk.SessionNotification) map[string]*acpsdk.SessionToolCallUpdate {
	ends := map[string]*acpsdk.SessionToolCallUpdate{}
	for _, u := range updates {
		if tu := u.Update.ToolCallUpdate; tu != nil && tu.Status != nil && (*tu.Status == acpsdk.ToolCallStatusCompleted || *tu.Status == acpsdk.ToolCallStatusFailed) {
			ends[string(tu.ToolCallId)] = tu
		}
	}
	return ends
}

// fsScenario is the built-in tools' model scenario: the model reads
// main.go, edits it, updates its plan and ends. It returns the prompt's
// updates after checking what every client sees: the edit asked for
// permission (and the read and the plan did not), the file changed, the
// edit's final update carries the diff and the location, and the plan
// reached the client.
func fsScenario(t *testing.T, a *agent, fake *fakemodel.Server, perms *permissionAnswers, dir, before, after string) []acpsdk.SessionNotification {
	t.Helper()
	file := filepath.Join(dir, "main.go")
	sid := a.newSession(dir)
	fake.Push(
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_read", Name: "mcp__acp__read_file", Args: `{"path":"main.go"}`}}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_edit", Name: "mcp__acp__edit_file", Args: `{"path":"main.go","old_text":"y := 2","new_text":"y := 3"}`}}},
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_plan", Name: "mcp__acp__update_plan", Args: `{"entries":[{"content":"change y","status":"completed"},{"content":"run the tests","status":"pending","priority":"high"}]}`}}},
		fakemodel.Turn{Text: "Done."},
	)
	perms.queue("allow_once")
	stop, out := a.prompt(sid, "set y to 3 in main.go")
	if stop != acpsdk.StopReasonEndTurn || text(out) != "Done." {
		t.Fatalf("stop %s, text %q:\n%s", stop, text(out), dump(out))
	}
	ends := finalUpdates(out)
	for _, id := range []string{"call_read", "call_edit", "call_plan"} {
		if e := ends[id]; e == nil || *e.Status != acpsdk.ToolCallStatusCompleted {
			t.Fatalf("%s did not complete:\n%s", id, dump(out))
		}
	}
	if got := contentText(ends["call_read"]); got != before {
		t.Errorf("read_file gave the model %q, want %q", got, before)
	}
	edit := ends["call_edit"]
	var diff *acpsdk.ToolCallContentDiff
	for _, c := range edit.Content {
		if c.Diff != nil {
			diff = c.Diff
		}
	}
	if diff == nil || diff.Path != file || diff.OldText == nil || *diff.OldText != before || diff.NewText != after {
		t.Errorf("edit_file diff = %+v, want %s from %q to %q", diff, file, before, after)
	}
	if len(edit.Locations) != 1 || edit.Locations[0].Path != file || edit.Locations[0].Line == nil || *edit.Locations[0].Line != 2 {
		t.Errorf("edit_file locations = %+v, want %s:2", edit.Locations, file)
	}
	if raw, _ := json.Marshal(edit.RawOutput); strings.Contains(string(raw), "acp-agent/show") {
		t.Errorf("edit_file's rawOutput repeats the diff it shows: %s", raw)
	}
	if got := contentText(edit); strings.Contains(got, "x := 1") {
		t.Errorf("edit_file's text %q repeats the file: it should stay short", got)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != after {
		t.Errorf("main.go = %q (%v), want %q", b, err, after)
	}
	if q := perms.questions(); len(q) != 1 || !strings.Contains(q[0], "Edit file") { // the tool's annotations.title
		t.Errorf("permission asked for %q, want only the edit", q)
	}
	var plan *acpsdk.SessionUpdatePlan
	kind := acpsdk.ToolKind("")
	for _, u := range out {
		if u.Update.Plan != nil {
			plan = u.Update.Plan
		}
		if tc := u.Update.ToolCall; tc != nil && tc.ToolCallId == "call_plan" {
			kind = tc.Kind
		}
	}
	if plan == nil || len(plan.Entries) != 2 || plan.Entries[0].Content != "change y" || plan.Entries[0].Status != acpsdk.PlanEntryStatusCompleted ||
		plan.Entries[0].Priority != acpsdk.PlanEntryPriorityMedium || plan.Entries[1].Priority != acpsdk.PlanEntryPriorityHigh {
		t.Errorf("plan update = %+v", plan)
	}
	if kind != acpsdk.ToolKindThink {
		t.Errorf("update_plan's kind = %q, want think", kind)
	}
	return out
}

// TestBuiltin_FSThroughEditor: with a client that offers fs, the built-in
// tools read main.go through fs/read_text_file (its unsaved buffer wins
// over the disk) and write it through fs/write_text_file; the client shows
// the diff.
func TestBuiltin_FSThroughEditor(t *testing.T) {
	t.Parallel()
	for _, be := range modelBackends {
		t.Run(be.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "main.go")
			if err := os.WriteFile(file, []byte("x := 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			fsys := acpclient.NewDirFS(dir)
			unsaved := "x := 1\ny := 2\n" // only in the editor
			fsys.SetUnsaved(file, unsaved)
			perms := &permissionAnswers{}
			rec := &acpclient.Recorder{FS: fsys, Permission: perms.answer}
			fake := be.fake(t)
			a := startModelAgent(t, be.name, fake.URL, rec)
			fsScenario(t, a, fake, perms, dir, unsaved, "x := 1\ny := 3\n")
			var got []string
			for _, c := range fsys.Calls() {
				if c.Path != file {
					t.Errorf("fs call for %s, want only %s", c.Path, file)
				}
				got = append(got, c.Method)
			}
			want := []string{acpsdk.ClientMethodFsReadTextFile, acpsdk.ClientMethodFsReadTextFile, acpsdk.ClientMethodFsWriteTextFile}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("fs calls = %v, want %v (read_file, then edit_file's read and write)", got, want)
			}
			if calls := fsys.Calls(); len(calls) == 3 && calls[2].Content != "x := 1\ny := 3\n" {
				t.Errorf("fs/write_text_file content = %q", calls[2].Content)
			}
		})
	}
}

// TestBuiltin_FSLocal: with a client that offers no fs, the same scenario
// works on the local file (an fs/* request would fail: the client answers
// method not found) and still shows the diff.
func TestBuiltin_FSLocal(t *testing.T) {
	t.Parallel()
	for _, be := range modelBackends {
		t.Run(be.name, func(t *testing.T) {
			dir := t.TempDir()
			before := "x := 1\ny := 2\n"
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
			perms := &permissionAnswers{}
			rec := &acpclient.Recorder{Permission: perms.answer}
			fake := be.fake(t)
			a := startModelAgent(t, be.name, fake.URL, rec)
			fsScenario(t, a, fake, perms, dir, before, "x := 1\ny := 3\n")
		})
	}
}

// TestBuiltin_AdditionalDirectories: the additionalDirectories of
// session/new reach the built-in tools: a file there is read, one outside
// both directories is refused with an error naming them. (One provider:
// the path handling does not depend on it.)
func TestBuiltin_AdditionalDirectories(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir, other, outside := filepath.Join(base, "work"), filepath.Join(base, "other"), filepath.Join(base, "outside")
	for _, d := range []string{dir, other, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inOther, inOutside := filepath.Join(other, "notes.txt"), filepath.Join(outside, "secret.txt")
	for p, s := range map[string]string{inOther: "from the other directory\n", inOutside: "secret\n"} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fake := fakemodel.NewOpenAI(t)
	a := startModelAgent(t, "openai", fake.URL, nil)
	ctx := t.Context()
	from := len(a.Client.Updates())
	res, err := a.Conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: dir, AdditionalDirectories: []string{other}, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	if _, _, err := a.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.Update.AvailableCommandsUpdate != nil }); err != nil {
		t.Fatal(err)
	}
	fake.Push(
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{
			{ID: "call_other", Name: "mcp__acp__read_file", Args: `{"path":"` + inOther + `"}`},
			{ID: "call_outside", Name: "mcp__acp__read_file", Args: `{"path":"` + inOutside + `"}`},
		}},
		fakemodel.Turn{Text: "Read."},
	)
	_, out := a.prompt(string(res.SessionId), "read the notes")
	ends := finalUpdates(out)
	if e := ends["call_other"]; e == nil || *e.Status != acpsdk.ToolCallStatusCompleted || contentText(e) != "from the other directory\n" {
		t.Errorf("read in the additional directory:\n%s", dump(out))
	}
	e := ends["call_outside"]
	if e == nil || *e.Status != acpsdk.ToolCallStatusFailed {
		t.Fatalf("read outside both directories did not fail:\n%s", dump(out))
	}
	if got := contentText(e); !strings.Contains(got, inOutside) || !strings.Contains(got, dir) || !strings.Contains(got, other) {
		t.Errorf("refusal %q does not name the path and both directories", got)
	}
}
