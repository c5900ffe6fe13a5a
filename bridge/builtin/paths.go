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
	dirs   []string      // additional directories, absolute and clean
	editor editor.Editor // nil: local only
}

// target is a path a tool works on, once resolved and checked.
type target struct {
	name string // as the model gave it: error texts name it
	abs  string // clean absolute path, symbolic links kept: what the editor and the client see
	real string // abs with symbolic links resolved: what local operations use
}

// roots are the directories the tools may work in: the root, then dirs.
func (t *tools) roots() []string {
	return append([]string{t.root}, t.dirs...)
}

// allowed names the directories the tools may work in, for error texts.
func (t *tools) allowed() string {
	if len(t.dirs) == 0 {
		return "the session directory " + t.root
	}
	return fmt.Sprintf("the session directory %s and the additional directories %s", t.root, strings.Join(t.dirs, ", "))
}

// resolve turns path (relative to the root, or absolute) into the target to
// operate on, or an error naming path and the rule it breaks: it must not
// be empty, must stay inside the root or one of the additional directories
// once cleaned ("..", absolute paths elsewhere) and must not lead out of
// them through a symbolic link (the link itself, or any directory on the
// way): wherever it leads must be inside one of them too. A path that does
// not exist yet is checked through its nearest existing parent. resolve
// only reads the local file system: it runs before any editor call, so the
// editor is never asked for a path outside the allowed directories.
func (t *tools) resolve(path string) (target, error) {
	if strings.TrimSpace(path) == "" {
		return target{}, errors.New("path: must be a non-empty path")
	}
	if strings.ContainsRune(path, 0) {
		return target{}, fmt.Errorf("path %q: must not contain NUL", path)
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(t.root, abs)
	}
	abs = filepath.Clean(abs)
	inside := false
	for _, r := range t.roots() {
		inside = inside || within(r, abs)
	}
	if !inside {
		return target{}, fmt.Errorf("path %q is outside %s: paths must stay inside them (no \"..\" out of them, no absolute path elsewhere)", path, t.allowed())
	}
	realRoot, err := filepath.EvalSymlinks(t.root)
	if err != nil {
		return target{}, fmt.Errorf("session directory %s: %w", t.root, err)
	}
	realRoots := []string{realRoot}
	for _, d := range t.dirs {
		if r, err := filepath.EvalSymlinks(d); err == nil { // a directory gone since session/new allows nothing
			realRoots = append(realRoots, r)
		}
	}
	// The nearest existing ancestor (or abs itself) decides where abs leads.
	existing, rest := abs, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return target{}, fmt.Errorf("path %q: %w", path, unwrapPath(err))
		}
		parent := filepath.Dir(existing)
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return target{}, fmt.Errorf("path %q is a symbolic link that cannot be followed (%v): links must lead to a file inside %s", path, unwrapPath(err), t.allowed())
	}
	real = filepath.Join(real, rest)
	for _, r := range realRoots {
		if within(r, real) {
			return target{name: path, abs: abs, real: real}, nil
		}
	}
	return target{}, fmt.Errorf("path %q leads through a symbolic link to %s, outside %s: links must not lead out of them", path, real, t.allowed())
}

// display is path as the tools report it to the model: relative to the
// root when inside, else absolute.
func (t *tools) display(p string) string {
	for _, root := range []string{t.root, evalOr(t.root)} {
		if rel, err := filepath.Rel(root, p); err == nil && within(root, p) {
			return filepath.ToSlash(rel)
		}
	}
	return p
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
