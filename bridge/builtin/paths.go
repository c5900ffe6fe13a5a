package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
)

// tools holds the session directories the tools are confined to, opened
// as roots, and the session's editor.
type tools struct {
	root       string          // the session cwd, absolute
	dirs       []string        // additional directories, absolute and clean
	fs         *rootSet        // root, then dirs, opened: every local file operation goes through them; nil when editorOnly
	editor     editor.Editor   // nil: local only (nothing at all when editorOnly)
	editorOnly bool            // Options.EditorOnly: nothing local, only the editor's methods
	confine    *bridge.Confine // Options.Confine: run_command's confinement, or nil
}

// newTools returns the tools of opts, their directories opened as roots
// unless opts.EditorOnly; the caller closes t.fs.
func newTools(opts Options) *tools {
	t := &tools{root: filepath.Clean(opts.Root), editor: opts.Editor, editorOnly: opts.EditorOnly, confine: opts.Confine}
	for _, d := range opts.Dirs {
		if filepath.IsAbs(d) {
			t.dirs = append(t.dirs, filepath.Clean(d))
		}
	}
	if !t.editorOnly {
		t.fs = openRoots(t.roots())
	}
	return t
}

// target is a path a tool works on, once resolved and checked. Local
// operations use it as (root, rel) only, never by an absolute name, so
// that what was checked is what is used: a directory on the way swapped for
// a symbolic link after the check cannot lead them out of root (os.Root
// refuses it), and one that stays inside is followed.
type target struct {
	name string   // as the model gave it: error texts name it
	abs  string   // clean absolute path, symbolic links kept: what the client is shown (the editor gets the pinned real path, pin.go)
	real string   // abs with symbolic links resolved, as they were at the check: what the results show
	root *os.Root // the session directory that holds real, opened as a root; nil when editorOnly
	base string   // the path of root's directory, symbolic links resolved: real is base/rel
	rel  string   // real relative to base ("." for base itself): the name local operations use in root
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
//
// resolve checks by name, for its error texts; the enforcement is the root
// of the directory that holds the resolved path (target.root), which every
// local operation goes through. A directory that cannot be opened as a
// root allows nothing: the error names it.
//
// With editorOnly, resolve checks by name only and reads nothing: the path
// is the editor's, on its machine (resolveName).
func (t *tools) resolve(path string) (target, error) {
	abs, err := t.resolveName(path)
	if err != nil || t.editorOnly {
		return target{name: path, abs: abs, real: abs}, err
	}
	// realRoots[i] is the directory of index i (t.roots()) with its
	// symbolic links resolved, "" when it is gone.
	realRoot, err := filepath.EvalSymlinks(t.root)
	if err != nil {
		return target{}, fmt.Errorf("session directory %s: %w", t.root, err)
	}
	realRoots := []string{realRoot}
	for _, d := range t.dirs {
		r, err := filepath.EvalSymlinks(d)
		if err != nil { // a directory gone since session/new allows nothing
			r = ""
		}
		realRoots = append(realRoots, r)
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
	for i, r := range realRoots {
		if r == "" || !within(r, real) {
			continue
		}
		root, err := t.fs.root(i)
		if err != nil {
			return target{}, fmt.Errorf("path %q: %w", path, err)
		}
		rel, err := filepath.Rel(r, real)
		if err != nil {
			return target{}, fmt.Errorf("path %q: %w", path, err)
		}
		return target{name: path, abs: abs, real: real, root: root, base: r, rel: rel}, nil
	}
	return target{}, fmt.Errorf("path %q leads through a symbolic link to %s, outside %s: links must not lead out of them", path, real, t.allowed())
}

// resolveName is the check of resolve by name: path must not be empty,
// and once made absolute (relative to the root) and cleaned, it must be
// inside the root or one of the additional directories. It returns the
// clean absolute path, and reads nothing.
func (t *tools) resolveName(path string) (string, error) {
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
	for _, r := range t.roots() {
		if within(r, abs) {
			return abs, nil
		}
	}
	return "", fmt.Errorf("path %q is outside %s: paths must stay inside them (no \"..\" out of them, no absolute path elsewhere)", path, t.allowed())
}

// localError is the tool error of a local operation on tgt that failed
// with err: a path that leads out of its root (a directory on the way
// swapped for a symbolic link out after resolve checked it) in the words of
// resolve, closed tools as errClosed, anything else naming the path.
func (t *tools) localError(tgt target, err error) error {
	switch {
	case errors.Is(err, os.ErrClosed):
		return fmt.Errorf("path %q: %w", tgt.name, errClosed)
	case escapes(tgt.root, err):
		return fmt.Errorf("path %q leads through a symbolic link outside %s: links must not lead out of them", tgt.name, t.allowed())
	}
	return fmt.Errorf("path %q: %w", tgt.name, unwrapPath(err))
}

// display is path as the tools report it to the model: relative to the
// root when inside, else absolute.
func (t *tools) display(p string) string {
	roots := []string{t.root}
	if !t.editorOnly { // the root's links are on the editor's machine
		roots = append(roots, evalOr(t.root))
	}
	for _, root := range roots {
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

// unwrapPath drops the *fs.PathError or *os.LinkError (of a rename)
// wrapper, whose text repeats the real path or a temporary file's name; the
// tools name the path the model gave.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
