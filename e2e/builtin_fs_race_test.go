package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// swappingFS is an editor's file system (a DirFS, which confines paths by
// name only, as an editor does) whose first fs/read_text_file first swaps
// the directory swapDir for a symbolic link to linkTo: the race of a
// process that changes the session directory between the agent's check of
// a path and the editor's read of it, made deterministic.
type swappingFS struct {
	*acpclient.DirFS
	swapDir, linkTo string

	once sync.Once
	err  error // the swap's error, read after the read
}

func (f *swappingFS) ReadTextFile(ctx context.Context, req acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	f.once.Do(func() {
		if f.err = os.Rename(f.swapDir, f.swapDir+".orig"); f.err == nil {
			f.err = os.Symlink(f.linkTo, f.swapDir)
		}
	})
	return f.DirFS.ReadTextFile(ctx, req)
}

// TestBuiltin_EditorSwapRaceNeverLeaks: read_file goes through the editor's
// fs/read_text_file, whose handler swaps the directory holding the file for
// a symbolic link to a directory outside the session before reading the
// path by name, and so reads SECRET-OUTSIDE. The agent must see that the
// path changed during the call: the tool call fails naming the path, and
// the outside text reaches neither the model nor the client. Before the
// agent pinned the editor's path and checked it again after the call, the
// model was given SECRET-OUTSIDE.
func TestBuiltin_EditorSwapRaceNeverLeaks(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir, outside := filepath.Join(base, "work"), filepath.Join(base, "outside")
	for p, s := range map[string]string{
		filepath.Join(dir, "d", "secret.txt"): "inside\n",
		filepath.Join(outside, "secret.txt"):  "SECRET-OUTSIDE\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys := &swappingFS{DirFS: acpclient.NewDirFS(dir), swapDir: filepath.Join(dir, "d"), linkTo: outside}
	fake := fakemodel.NewOpenAI(t)
	a := startModelAgent(t, "openai", fake.URL, &acpclient.Recorder{FS: fsys})
	sid := a.newSession(dir)
	fake.Push(
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{ID: "call_read", Name: "mcp__acp__read_file", Args: `{"path":"d/secret.txt"}`}}},
		fakemodel.Turn{Text: "Done."},
	)
	stop, out := a.prompt(sid, "read d/secret.txt")
	if stop != acpsdk.StopReasonEndTurn {
		t.Fatalf("stop %s:\n%s", stop, dump(out))
	}
	if fsys.err != nil {
		t.Fatalf("the swap failed: %v", fsys.err)
	}
	calls := fsys.Calls()
	if len(calls) != 1 || calls[0].Method != acpsdk.ClientMethodFsReadTextFile || calls[0].Path != filepath.Join(dir, "d", "secret.txt") {
		t.Fatalf("fs calls %+v, want one fs/read_text_file of %s", calls, filepath.Join(dir, "d", "secret.txt"))
	}
	if b, err := os.ReadFile(calls[0].Path); err != nil || string(b) != "SECRET-OUTSIDE\n" {
		t.Fatalf("after the swap the editor's path reads %q (%v): the test does not make the editor read outside", b, err)
	}
	end := finalUpdates(out)["call_read"]
	if end == nil || *end.Status != acpsdk.ToolCallStatusFailed {
		t.Fatalf("read_file did not fail:\n%s", dump(out))
	}
	if got := contentText(end); !strings.Contains(got, `"d/secret.txt"`) || !strings.Contains(got, "changed during the call") {
		t.Errorf("read_file's error %q does not name the path and say it changed during the call", got)
	}
	if strings.Contains(dump(out), "SECRET-OUTSIDE") {
		t.Errorf("the client was shown the outside file:\n%s", dump(out))
	}
	for i, r := range fake.Requests() {
		if strings.Contains(string(r.Body), "SECRET-OUTSIDE") {
			t.Errorf("model request %d holds the outside file's text:\n%s", i, r.Body)
		}
	}
}
