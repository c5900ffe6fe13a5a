package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// TestDirs: the additional directories (ACP additionalDirectories) are as
// open to the tools as the session directory, under the same rules; a path
// outside all of them is refused with an error that lists them.
func TestDirs(t *testing.T) {
	base := t.TempDir()
	dir, other, outside := filepath.Join(base, "work"), filepath.Join(base, "other"), filepath.Join(base, "outside")
	write(t, filepath.Join(dir, "a.txt"), "in root\n")
	write(t, filepath.Join(other, "b.txt"), "in other\n")
	write(t, filepath.Join(outside, "c.txt"), "secret\n")
	if err := os.Symlink(other, filepath.Join(dir, "to-other")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(other, "to-outside")); err != nil {
		t.Fatal(err)
	}
	opts := Options{Root: dir, Dirs: []string{other}}
	b := filepath.Join(other, "b.txt")

	if got := mustOK(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": b})); got != "in other\n" {
		t.Errorf("read_file in an additional directory = %q", got)
	}
	for _, p := range []string{"../other/b.txt", "to-other/b.txt"} {
		if got := mustOK(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": p})); got != "in other\n" {
			t.Errorf("read_file %q = %q", p, got)
		}
	}
	res := callWith(t, opts, "edit_file", map[string]any{"path": b, "old_text": "other", "new_text": "the other"})
	mustOK(t, "edit_file", res)
	if s := read(t, b); s != "in the other\n" {
		t.Errorf("edited file = %q", s)
	}
	if sh := showOf(t, res); sh == nil || len(sh.Diffs) != 1 || sh.Diffs[0].Path != b {
		t.Errorf("edit_file show = %+v, want a diff of %s", sh, b)
	}
	nf := filepath.Join(other, "sub", "new.txt")
	if got := mustOK(t, "write_file", callWith(t, opts, "write_file", map[string]any{"path": nf, "content": "x"})); got != "Created "+nf+" (1 bytes)" {
		t.Errorf("write_file in an additional directory = %q, want its absolute path", got)
	}
	if got := mustOK(t, "list_directory", callWith(t, opts, "list_directory", map[string]any{"path": other})); !strings.Contains(got, "b.txt (13 bytes)") {
		t.Errorf("list_directory = %q", got)
	}
	if got := mustOK(t, "search_files", callWith(t, opts, "search_files", map[string]any{"pattern": "*.txt", "path": other, "regex": "the other"})); got != b+":1:in the other" {
		t.Errorf("search_files = %q", got)
	}

	// Outside both, directly or through a link from the additional
	// directory: refused, naming both directories.
	for _, tc := range []struct{ tool, path, want string }{
		{"read_file", filepath.Join(outside, "c.txt"), "is outside"},
		{"read_file", "../outside/c.txt", "is outside"},
		{"read_file", filepath.Join(other, "to-outside", "c.txt"), "symbolic link"},
		{"write_file", filepath.Join(outside, "new.txt"), "is outside"},
		{"list_directory", outside, "is outside"},
		{"search_files", outside, "is outside"},
	} {
		args := map[string]any{"path": tc.path}
		switch tc.tool {
		case "write_file":
			args["content"] = "x"
		case "search_files":
			args["pattern"] = "*"
		}
		mustFail(t, tc.tool+" "+tc.path, callWith(t, opts, tc.tool, args), tc.path, tc.want, "the session directory "+dir, "additional directories "+other)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("write_file created a file outside both directories")
	}
	// Without Dirs, the other directory is outside.
	mustFail(t, "read_file", callWith(t, Options{Root: dir}, "read_file", map[string]any{"path": b}), b, "outside the session directory "+dir)
}

// TestShow_Local: without an editor, write_file and edit_file still show
// their diff and location, read_file its location; the model's text stays
// short.
func TestShow_Local(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	opts := Options{Root: dir}
	long := strings.Repeat("line\n", 100)
	res := callWith(t, opts, "write_file", map[string]any{"path": "f.txt", "content": long})
	if got := mustOK(t, "write_file", res); got != "Created f.txt (500 bytes)" {
		t.Errorf("write_file text = %q, want it short", got)
	}
	sh := showOf(t, res)
	if sh == nil || len(sh.Diffs) != 1 || sh.Diffs[0] != (gateway.Diff{Path: p, NewText: long}) {
		t.Fatalf("write_file show = %+v, want a diff of a new file", sh)
	}
	if len(sh.Locations) != 1 || sh.Locations[0].Path != p {
		t.Errorf("write_file locations = %+v", sh.Locations)
	}
	after := strings.Replace(long, "line\n", "LINE\n", 1)
	after = after[:50] + "changed\n" + after[50:]
	res = callWith(t, opts, "write_file", map[string]any{"path": "f.txt", "content": after})
	if sh := showOf(t, res); sh == nil || sh.Diffs[0].OldText == nil || *sh.Diffs[0].OldText != long || sh.Locations[0].Line != 1 {
		t.Fatalf("overwrite show = %+v, want the old text and line 1", sh)
	}
	res = callWith(t, opts, "edit_file", map[string]any{"path": "f.txt", "old_text": "changed\n", "new_text": "edited\n"})
	if got := mustOK(t, "edit_file", res); strings.Contains(got, "line") {
		t.Errorf("edit_file text = %q, want it short", got)
	}
	sh = showOf(t, res)
	if sh == nil || len(sh.Diffs) != 1 || *sh.Diffs[0].OldText != after || sh.Diffs[0].NewText != strings.Replace(after, "changed", "edited", 1) {
		t.Fatalf("edit_file show = %+v", sh)
	}
	if sh.Locations[0] != (gateway.Location{Path: p, Line: 11}) {
		t.Errorf("edit_file location = %+v, want line 11", sh.Locations[0])
	}
	res = callWith(t, opts, "read_file", map[string]any{"path": "f.txt", "offset": 7})
	if sh := showOf(t, res); sh == nil || len(sh.Locations) != 1 || sh.Locations[0] != (gateway.Location{Path: p, Line: 7}) {
		t.Errorf("read_file show = %+v, want %s:7", sh, p)
	}
	// Failed calls show nothing.
	res = callWith(t, opts, "edit_file", map[string]any{"path": "f.txt", "old_text": "absent", "new_text": "x"})
	if sh := showOf(t, res); !res.IsError || sh != nil {
		t.Errorf("failed edit: isError %v, show %+v", res.IsError, sh)
	}
}
