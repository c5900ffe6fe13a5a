package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO (or a device) is refused at once by read_file, write_file and
// edit_file: reading or writing it would block the call, or never end.
func TestSpecialFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err) // not a skip of the product: the platform lacks FIFOs
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "pipe"}},
		{"write_file", map[string]any{"path": "pipe", "content": "x"}},
		{"edit_file", map[string]any{"path": "pipe", "old_text": "a", "new_text": "b"}},
	} {
		got, isErr := call(t, dir, tc.tool, tc.args)
		if !isErr || !strings.Contains(got, "not a regular file (a named pipe)") {
			t.Errorf("%s on a FIFO: %q (isError %v), want it refused as not a regular file", tc.tool, got, isErr)
		}
	}
	got, isErr := call(t, dir, "read_file", map[string]any{"path": "/dev/null"})
	if !isErr {
		t.Errorf("read_file /dev/null (outside the directory, and a device) = %q", got)
	}
}

// write_file replaces the file: a hard link to it from elsewhere keeps the
// old content (it is not written through), and the file keeps its mode.
func TestWriteFile_ReplacesHardLinks(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "work"), filepath.Join(base, "secret.txt")
	write(t, outside, "outside\n")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(outside, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "linked.txt")); err != nil {
		t.Skipf("link: %v", err)
	}
	if got, isErr := call(t, dir, "write_file", map[string]any{"path": "linked.txt", "content": "new\n"}); isErr {
		t.Fatalf("write_file: %s", got)
	}
	if got := read(t, outside); got != "outside\n" {
		t.Errorf("the outside file, hard-linked into the directory, now reads %q: the write went through the link", got)
	}
	if got := read(t, filepath.Join(dir, "linked.txt")); got != "new\n" {
		t.Errorf("linked.txt = %q", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "linked.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after the write: %v, %v; want 0600 kept", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".linked.txt.tmp*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// A pattern of many "**" over a deep tree is matched in bounded time (it
// backtracked exponentially before, for ever in practice).
func TestSearchFiles_ManyDoubleStars(t *testing.T) {
	dir := t.TempDir()
	deep := dir
	for i := range 24 {
		deep = filepath.Join(deep, "d"+string(rune('a'+i%26)))
	}
	write(t, filepath.Join(deep, "x.go"), "package x\n")
	write(t, filepath.Join(deep, "y.txt"), "y\n")
	pattern := strings.Repeat("**/", 14) + "*.txt"
	got, isErr := call(t, dir, "search_files", map[string]any{"pattern": pattern})
	if isErr || !strings.HasSuffix(strings.TrimSpace(got), "y.txt") || strings.Contains(got, "x.go") {
		t.Errorf("search_files %s = %q", pattern, got)
	}
	for _, tc := range []struct {
		pat, rel string
		want     bool
	}{
		{"**/*.go", "a/b/c.go", true}, {"**/*.go", "c.go", true}, {"a/**/c.go", "a/c.go", true},
		{"a/**/c.go", "a/x/y/c.go", true}, {"a/**/c.go", "b/x/c.go", false}, {"**/b/**", "a/b/c/d", true},
		{"**/b/**", "a/c/d", false}, {"*/c.go", "a/b/c.go", false}, {"a/*/c.go", "a/b/c.go", true},
	} {
		if got := matchGlob(tc.pat, tc.rel); got != tc.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tc.pat, tc.rel, got, tc.want)
		}
	}
}
