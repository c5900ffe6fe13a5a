package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRealRel: a path is resolved through the root to one with no symbolic
// link on the way; links inside are followed (relative, absolute inside,
// chains, ".." within), any that leads out is errLeaves, a loop fails.
func TestRealRel(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "work")
	write(t, filepath.Join(dir, "a", "b", "f.txt"), "x")
	write(t, filepath.Join(base, "outside.txt"), "x")
	for name, to := range map[string]string{
		"rel":     "a/b",
		"abs":     filepath.Join(dir, "a"),
		"chain":   "rel",
		"updown":  "a/../a/b",
		"a/sib":   "../a/b/f.txt",
		"out":     "../outside.txt",
		"absout":  filepath.Join(base, "outside.txt"),
		"deepout": "a/../../outside.txt",
		"loop1":   "loop2",
		"loop2":   "loop1",
	} {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		rel, want string
		err       error
	}{
		{".", ".", nil},
		{"a/b/f.txt", "a/b/f.txt", nil},
		{"rel/f.txt", "a/b/f.txt", nil},
		{"abs/b/f.txt", "a/b/f.txt", nil},
		{"chain/f.txt", "a/b/f.txt", nil},
		{"updown/f.txt", "a/b/f.txt", nil},
		{"a/sib", "a/b/f.txt", nil},
		{"rel/new/g.txt", "a/b/new/g.txt", nil},
		{"out", "", errLeaves},
		{"absout", "", errLeaves},
		{"deepout", "", errLeaves},
		{"loop1/x", "", nil}, // an error, not errLeaves
	} {
		got, err := realRel(root, real, tt.rel)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("realRel(%q) = %q, want an error", tt.rel, got)
		case tt.err != nil && !errors.Is(err, tt.err):
			t.Errorf("realRel(%q) error %v, want %v", tt.rel, err, tt.err)
		case tt.want != "" && (err != nil || got != tt.want):
			t.Errorf("realRel(%q) = %q, %v; want %q", tt.rel, got, err, tt.want)
		}
	}
}
