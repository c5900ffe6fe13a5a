package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The editor opens the paths it is given by name, in its own process, where
// no os.Root confines it: a directory on the way swapped for a symbolic link
// out, after resolve checked the path, would lead its read or write outside.
// So a path goes to the editor pinned: resolved through the root, at the
// moment of the call, to a real path with no symbolic link on the way (links
// inside the root resolved, any that leads out refused), each directory on
// the way and the file identified (device and inode) both through the root
// and by the name the editor gets, which must agree. After the call the same
// name is identified again; if anything on the way is no longer the same
// directory (or, for a read, the same file), or has become a link, the call
// is a tool error naming the path: a read's text never reaches the model; a
// write may have gone through the link in that window, which is reported,
// not undone.
//
// What this does not see: a swap undone before the check after the call (a
// directory swapped for a link and back while the editor read) leaves the
// same inodes in place. The window is the editor's call itself.

// maxLinks is how many symbolic links pin follows in one path before it
// gives up, as the kernel's ELOOP does (40).
const maxLinks = 40

// pinned is a target's path as the editor is asked for it: no symbolic link
// on the way, and what each step was when it was pinned.
type pinned struct {
	rel  string        // relative to the root, no symbolic link on the way ("." is the root)
	abs  string        // base/rel: the real absolute path the editor is given
	dirs []fs.FileInfo // the root itself, then each directory on the way to rel's last element
	file fs.FileInfo   // rel's last element, nil when it did not exist
}

// errChanged is the error of a pinned path that no longer leads where it
// did.
var errChanged = errors.New("changed during the call")

// pin resolves tgt through its root, now, to the real path the editor is to
// be given, and identifies each directory on the way and the file. A path
// that leads out of the root, through a link or a directory swapped for one,
// is the error of resolve.
func (t *tools) pin(tgt target) (pinned, error) {
	rel, err := realRel(tgt.root, tgt.base, tgt.rel)
	if err != nil {
		if errors.Is(err, errLeaves) || escapes(tgt.root, err) {
			return pinned{}, fmt.Errorf("path %q leads through a symbolic link outside %s: links must not lead out of them", tgt.name, t.allowed())
		}
		return pinned{}, t.localError(tgt, err)
	}
	p := pinned{rel: rel, abs: filepath.Join(tgt.base, rel)}
	p.dirs, p.file, err = identify(tgt.root, tgt.base, rel)
	if err != nil {
		return pinned{}, fmt.Errorf("path %q %w (%v): it was not sent to the editor", tgt.name, errChanged, err)
	}
	return p, nil
}

// recheck identifies p's path again after the editor's call and returns an
// error naming tgt and errChanged if a directory on the way is not the one
// pinned, or something on the way is now a symbolic link. With sameFile
// (a read) the file must be the one pinned too (absent if it was); without
// (a write, which may replace the file by a new one) it must be absent or a
// regular file, not a link.
func (t *tools) recheck(tgt target, p pinned, sameFile bool) error {
	dirs, file, err := identify(tgt.root, tgt.base, p.rel)
	if err != nil {
		return fmt.Errorf("path %q %w: %v", tgt.name, errChanged, err)
	}
	if sameFile && len(dirs) != len(p.dirs) {
		return fmt.Errorf("path %q %w: a directory on the way appeared or went away", tgt.name, errChanged)
	}
	for i, d := range dirs[:min(len(dirs), len(p.dirs))] {
		if !os.SameFile(d, p.dirs[i]) {
			return fmt.Errorf("path %q %w: the directory %s was replaced", tgt.name, errChanged, filepath.Join(tgt.base, prefix(p.rel, i)))
		}
	}
	switch {
	case sameFile && (file == nil) != (p.file == nil):
		return fmt.Errorf("path %q %w: the file appeared or went away", tgt.name, errChanged)
	case sameFile && file != nil && !os.SameFile(file, p.file):
		return fmt.Errorf("path %q %w: the file was replaced", tgt.name, errChanged)
	}
	return nil
}

// errLeaves is realRel's error of a symbolic link that leads out of the
// root.
var errLeaves = errors.New("a symbolic link leads out of the directory")

// realRel resolves rel (clean, relative to root, whose directory's real path
// is base) element by element through root: each is looked at with Lstat in
// the root, a symbolic link is read in the root and its target resolved in
// turn (a relative one from the directory holding it, an absolute one only
// inside base); ".." never climbs above the root. It returns the path
// relative to the root with no link on the way; the elements from the first
// that does not exist on are kept as they are. A link that leads out is
// errLeaves.
func realRel(root *os.Root, base, rel string) (string, error) {
	var done []string
	todo := split(rel)
	for links := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", errLeaves
			}
			done = done[:len(done)-1]
			continue
		}
		cur := filepath.Join(append(done, c)...)
		fi, err := root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below a missing element exists: no link to follow.
			// A ".." after it would be the kernel's ENOENT.
			for _, r := range todo {
				if r == ".." {
					return "", err
				}
			}
			return filepath.Join(append(append(done, c), todo...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(todo) > 0 && !fi.IsDir() {
				return "", &fs.PathError{Op: "open", Path: cur, Err: syscall.ENOTDIR}
			}
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", &fs.PathError{Op: "open", Path: cur, Err: syscall.ELOOP}
		}
		to, err := root.Readlink(cur)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(to) {
			to = filepath.Clean(to)
			if !within(base, to) {
				return "", errLeaves
			}
			r, _ := filepath.Rel(base, to)
			done = nil
			to = r
		}
		todo = append(split(to), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return filepath.Join(done...), nil
}

// split is the elements of a relative path.
func split(rel string) []string {
	return strings.Split(filepath.ToSlash(rel), "/")
}

// prefix is the first n elements of rel ("." for none).
func prefix(rel string, n int) string {
	if n == 0 || rel == "." {
		return "."
	}
	return filepath.Join(split(rel)[:n]...)
}

// identify looks at each step of rel (relative to root, whose directory is
// base), the root itself first, twice: through root (Lstat, no link
// followed), and by the absolute name the editor is given (os.Lstat of
// base/step, which follows any link on the way). Both must be the same
// directory, none a link, for the directories; and the same file, not a
// link, or absent both ways, for the last element. It returns the
// directories and the file (nil when absent); a step absent both ways ends
// the list there (a file to be created, with its directories).
func identify(root *os.Root, base, rel string) (dirs []fs.FileInfo, file fs.FileInfo, err error) {
	n := 0
	if rel != "." {
		n = len(split(rel))
	}
	for i := 0; i <= n; i++ {
		step := prefix(rel, i)
		last := i == n && n > 0
		in, ierr := root.Lstat(step)
		byName, nerr := os.Lstat(filepath.Join(base, step))
		switch {
		case errors.Is(ierr, fs.ErrNotExist) && errors.Is(nerr, fs.ErrNotExist):
			return dirs, nil, nil // nothing from here on exists
		case ierr != nil:
			return nil, nil, fmt.Errorf("%s: %v", filepath.Join(base, step), unwrapPath(ierr))
		case nerr != nil:
			return nil, nil, fmt.Errorf("%s: %v", filepath.Join(base, step), unwrapPath(nerr))
		case in.Mode()&fs.ModeSymlink != 0 || byName.Mode()&fs.ModeSymlink != 0:
			return nil, nil, fmt.Errorf("%s is a symbolic link", filepath.Join(base, step))
		case !os.SameFile(in, byName):
			return nil, nil, fmt.Errorf("%s is not what the session directory holds there (a directory on the way was swapped)", filepath.Join(base, step))
		case !last && !in.IsDir():
			return nil, nil, fmt.Errorf("%s is not a directory", filepath.Join(base, step))
		}
		if last {
			return dirs, in, nil
		}
		dirs = append(dirs, in)
	}
	return dirs, nil, nil
}
