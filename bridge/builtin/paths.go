package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/editor"
)

// tools holds the session directories the tools are confined to, and the
// session's editor.
type tools struct {
	root   string        // the session cwd, absolute
	dirs   []string      // additional directories, absolute
	editor editor.Editor // nil: local only
}

// resolve turns path (relative to the root, or absolute) into the real path
// to operate on, or an error naming path and the rule it breaks: it must not
// be empty, must stay inside the root once cleaned ("..", absolute paths
// elsewhere) and must not lead out of it through a symbolic link (the link
// itself, or any directory on the way). A path that does not exist yet is
// checked through its nearest existing parent.
func (t *tools) resolve(path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", errors.New("path: must be a non-empty path")
	}
	if strings.ContainsRune(path, 0) {
		return "", fmt.Errorf("path %q: must not contain NUL", path)
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(t.root, abs)
	}
	abs = filepath.Clean(abs)
	if !within(t.root, abs) {
		return "", fmt.Errorf("path %q is outside the session directory %s: paths must stay inside it (no \"..\" out of it, no absolute path elsewhere)", path, t.root)
	}
	realRoot, err := filepath.EvalSymlinks(t.root)
	if err != nil {
		return "", fmt.Errorf("session directory %s: %w", t.root, err)
	}
	// The nearest existing ancestor (or abs itself) decides where abs leads.
	existing, rest := abs, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("path %q: %w", path, unwrapPath(err))
		}
		parent := filepath.Dir(existing)
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("path %q is a symbolic link that cannot be followed (%v): links must lead to a file inside the session directory %s", path, unwrapPath(err), t.root)
	}
	real = filepath.Join(real, rest)
	if !within(realRoot, real) {
		return "", fmt.Errorf("path %q leads through a symbolic link to %s, outside the session directory %s: links must not lead out of it", path, real, t.root)
	}
	return real, nil
}

// display is path as the tools report it: relative to the root when inside.
func (t *tools) display(real string) string {
	for _, root := range []string{t.root, evalOr(t.root)} {
		if rel, err := filepath.Rel(root, real); err == nil && within(root, real) {
			return filepath.ToSlash(rel)
		}
	}
	return real
}

func evalOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// within reports whether the clean absolute path p is root or inside it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// unwrapPath drops the *fs.PathError wrapper, whose text repeats the real
// path; the tools name the path the model gave.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
