package builtin

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// dirChunk is how many entries of a directory are read at a time, between
// two looks at the context.
const dirChunk = 256

// errNotDir is readDirIn's error for a file that is not a directory.
var errNotDir = errors.New("not a directory")

// readDirIn returns the entries of the directory name of root, sorted by
// name. The directory is opened in root (no symbolic link out followed)
// without blocking (a FIFO swapped in does not hang the call), checked on
// its descriptor (errNotDir), and read dirChunk entries at a time, ctx
// looked at before each chunk: ending ctx ends the read with its cause.
// The entries' FileInfo is read relative to the directory's descriptor
// (os does so for a file opened in a Root), never by a path name.
func readDirIn(ctx context.Context, root *os.Root, name string) ([]fs.DirEntry, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, errNotDir
	}
	var all []fs.DirEntry
	for {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		des, err := f.ReadDir(dirChunk)
		all = append(all, des...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(all, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return all, nil
}

// walk calls fn for each entry under the directory dir of root (a name
// relative to root, "." for root itself), depth first and in lexical order
// as fs.WalkDir does, with the entry's path relative to dir,
// slash-separated; dir itself is not passed to fn. fn returning
// fs.SkipDir for a directory skips its entries; any other error stops the
// walk and is walk's error.
//
// Every directory is read with readDirIn, in root: a directory swapped for
// a symbolic link that leads out of root is refused by the root, and
// skipped like any directory that cannot be read (gone, no permission);
// symbolic links are passed to fn as such, never followed. Only dir itself
// failing is walk's error. ctx is looked at before each entry and each
// chunk of entries: once it ends, walk returns its cause.
func walk(ctx context.Context, root *os.Root, dir string, fn func(sub string, de fs.DirEntry) error) error {
	des, err := readDirIn(ctx, root, dir)
	if err != nil {
		return err
	}
	return walkEntries(ctx, root, dir, "", des, fn)
}

// walkEntries is walk over des, the entries of the directory sub of dir.
func walkEntries(ctx context.Context, root *os.Root, dir, sub string, des []fs.DirEntry, fn func(sub string, de fs.DirEntry) error) error {
	for _, de := range des {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		p := path.Join(sub, de.Name())
		err := fn(p, de)
		switch {
		case errors.Is(err, fs.SkipDir) && de.IsDir():
			continue
		case err != nil:
			return err
		case !de.IsDir():
			continue
		}
		children, err := readDirIn(ctx, root, filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			if err := context.Cause(ctx); err != nil {
				return err
			}
			continue // unreadable directories are skipped
		}
		if err := walkEntries(ctx, root, dir, p, children, fn); err != nil {
			return err
		}
	}
	return nil
}
