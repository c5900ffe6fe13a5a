package builtin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outsideSecret is the text of the file outside the session directory that
// the race tests try to have the editor read.
const outsideSecret = "SECRET-OUTSIDE\n"

// swapFixture makes base/work (the session directory) with d/secret.txt
// inside and base/outside/secret.txt (outsideSecret) beside it, and returns
// the session directory, the outside file and swap: a function that
// replaces work/d by a symbolic link to base/outside (absolute, or relative
// climbing out), as a racing process would between the tools' check and
// the editor's use. swap runs once; later calls do nothing.
func swapFixture(t *testing.T, absolute bool) (dir, outsideFile string, swap func(string)) {
	t.Helper()
	base := t.TempDir()
	dir, outside := filepath.Join(base, "work"), filepath.Join(base, "outside")
	outsideFile = filepath.Join(outside, "secret.txt")
	write(t, outsideFile, outsideSecret)
	write(t, filepath.Join(dir, "d", "secret.txt"), "inside\n")
	link := "../outside"
	if absolute {
		link = outside
	}
	done := false
	swap = func(string) {
		if done {
			return
		}
		done = true
		d := filepath.Join(dir, "d")
		if err := os.Rename(d, d+".orig"); err != nil {
			t.Errorf("swap: %v", err)
			return
		}
		if err := os.Symlink(link, d); err != nil {
			t.Errorf("swap: %v", err)
		}
	}
	return dir, outsideFile, swap
}

// TestEditor_SwapDuringReadNeverLeaks is the race of issue 33 made
// deterministic: the editor's fs/read_text_file swaps a directory on the
// way for a symbolic link out after the tools checked the path, then reads
// by name, as a real editor does, and so reads the outside file. The tools
// must notice that the path no longer leads where it did, and the outside
// text must never reach the result. Before the path was pinned and checked
// again after the call, read_file returned SECRET-OUTSIDE.
func TestEditor_SwapDuringReadNeverLeaks(t *testing.T) {
	for _, absolute := range []bool{true, false} {
		name := map[bool]string{true: "absolute link", false: "relative link"}[absolute]
		for _, tool := range []string{"read_file", "edit_file", "write_file"} {
			t.Run(name+"/"+tool, func(t *testing.T) {
				dir, outsideFile, swap := swapFixture(t, absolute)
				ed := newFakeEditor(true, true)
				ed.beforeRead = swap
				args := map[string]any{"path": "d/secret.txt"}
				switch tool {
				case "edit_file":
					args["old_text"], args["new_text"] = "SECRET", "changed"
				case "write_file":
					args["content"] = "new\n"
				}
				res := callWith(t, Options{Root: dir, Editor: ed}, tool, args)
				got := resultText(res)
				if strings.Contains(got, "SECRET-OUTSIDE") || strings.Contains(showText(t, res), "SECRET-OUTSIDE") {
					t.Fatalf("%s gave the outside file's text: %q", tool, got)
				}
				if !slices.Contains(ed.readsReturned(), outsideSecret) {
					t.Fatalf("the editor's reads returned %q: the swap did not make it read outside, the test tests nothing", ed.readsReturned())
				}
				if tool == "write_file" {
					// write_file reads only for its diff: the write itself
					// then finds the link and refuses, before the editor
					// writes.
					mustFail(t, tool, res, `"d/secret.txt"`, "symbolic link outside")
				} else {
					mustFail(t, tool, res, `"d/secret.txt"`, "changed during the call")
				}
				if s := read(t, outsideFile); s != outsideSecret {
					t.Errorf("the outside file changed: %q", s)
				}
				for _, c := range ed.callLog() {
					if c == "write "+filepath.Join(dir, "d", "secret.txt") && tool == "edit_file" {
						t.Errorf("edit_file wrote after a read whose path changed: %q", ed.callLog())
					}
				}
			})
		}
	}
}

// showText is the old and new texts of the diffs res shows the client,
// where a leak would show too.
func showText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	sh := showOf(t, res)
	if sh == nil {
		return ""
	}
	var sb strings.Builder
	for _, d := range sh.Diffs {
		if d.OldText != nil {
			sb.WriteString(*d.OldText)
		}
		sb.WriteString(d.NewText)
	}
	return sb.String()
}

// TestEditor_SwapDuringWriteIsReported: the editor's fs/write_text_file
// swaps a directory on the way for a symbolic link out, then writes by
// name. The editor has then written outside: that cannot be undone from
// here, but the call must not pass for a write inside. It fails, naming
// the path, "changed during the call" and the path the editor was given.
func TestEditor_SwapDuringWriteIsReported(t *testing.T) {
	dir, outsideFile, swap := swapFixture(t, true)
	ed := newFakeEditor(true, true)
	ed.beforeWrite = swap
	res := callWith(t, Options{Root: dir, Editor: ed}, "write_file", map[string]any{"path": "d/secret.txt", "content": "written\n"})
	mustFail(t, "write_file", res, `"d/secret.txt"`, "changed during the call", filepath.Join(dir, "d", "secret.txt"), "may have written")
	// What is reported, not prevented: the editor did write outside.
	if s := read(t, outsideFile); s != "written\n" {
		t.Fatalf("the outside file is %q: the editor did not write through the swapped link, the test tests nothing", s)
	}
}

// TestEditor_GetsTheRealPath: the editor is asked for the path with the
// symbolic links inside the session directory resolved, the one that was
// checked, not the name the model gave.
func TestEditor_GetsTheRealPath(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "d", "f.txt"), "text\n")
	if err := os.Symlink("d", filepath.Join(dir, "ln")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	ed := newFakeEditor(true, true)
	opts := Options{Root: dir, Editor: ed}
	mustOK(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": "ln/f.txt"}))
	mustOK(t, "write_file", callWith(t, opts, "write_file", map[string]any{"path": "ln/new/g.txt", "content": "x"}))
	real := filepath.Join(dir, "d", "f.txt")
	newReal := filepath.Join(dir, "d", "new", "g.txt")
	want := []string{"read " + real, "read " + newReal, "write " + newReal}
	if got := ed.callLog(); !slices.Equal(got, want) {
		t.Errorf("editor calls = %q, want %q", got, want)
	}
}
