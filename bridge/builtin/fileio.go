package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// errNoFile is the error (wrapped, naming the path) of a file that exists
// neither on disk nor in the editor.
var errNoFile = errors.New("no such file")

// editorReads reports whether the editor offers fs/read_text_file.
func (t *tools) editorReads() bool {
	return t.editor != nil && t.editor.Capabilities().ReadTextFile
}

// editorWrites reports whether the editor offers fs/write_text_file.
func (t *tools) editorWrites() bool {
	return t.editor != nil && t.editor.Capabilities().WriteTextFile
}

// The editor's methods the tools use, as error texts name them.
const (
	methodRead     = "fs/read_text_file"
	methodWrite    = "fs/write_text_file"
	methodTerminal = "terminal/create"
)

// needEditor returns, with editorOnly, the tool error of a call that needs
// methods the editor does not offer (those of methods it lacks named), to
// do what (such as `read "a.go"`); else nil. Without editorOnly a lacking
// method is done locally.
func (t *tools) needEditor(what string, methods ...string) error {
	if !t.editorOnly {
		return nil
	}
	var caps editor.Capabilities
	if t.editor != nil {
		caps = t.editor.Capabilities()
	}
	offered := map[string]bool{methodRead: caps.ReadTextFile, methodWrite: caps.WriteTextFile, methodTerminal: caps.Terminal}
	var lacking []string
	for _, m := range methods {
		if !offered[m] {
			lacking = append(lacking, m)
		}
	}
	if len(lacking) == 0 {
		return nil
	}
	return fmt.Errorf("the editor does not offer %s, and acp-agent runs on a gateway, away from the session's files and processes: it cannot %s itself",
		strings.Join(lacking, " or "), what)
}

// readText returns the whole text of the file tgt: through the editor when
// it offers fs/read_text_file (its text, with the changes the user has not
// saved yet, wins over the disk), else from disk. Both sources are under
// the same rules: no directory, at most MaxFileBytes, no NUL byte in the
// first 8 KiB. A file the editor cannot read and that is not on disk is
// errNoFile; any other editor error names the path and the editor's answer.
// The disk is read through tgt.root only. The editor is asked for tgt's
// pinned real path (editorPath), and its answer is dropped for an error
// naming the path when that path changed during the call (editorDone).
//
// With editorOnly the disk is never looked at: an editor that does not
// offer fs/read_text_file is needEditor's error, and any error of the
// editor names the path and the editor's answer.
func (t *tools) readText(ctx context.Context, tgt target) (string, error) {
	if err := t.needEditor(fmt.Sprintf("read %q", tgt.name), methodRead); err != nil {
		return "", err
	}
	if !t.editorReads() {
		b, err := t.readLocal(tgt)
		return string(b), err
	}
	// The disk tells what the editor cannot be asked for: a directory or
	// another file that is not regular, or a file too large to fetch whole.
	// With editorOnly the disk is not the editor's: not looked at.
	if fi, err := t.statLocal(tgt); err == nil {
		if err := regularFile(fi, tgt.name); err != nil {
			return "", err
		}
		if fi.Size() > MaxFileBytes {
			return "", fmt.Errorf("path %q is %d bytes: files over %d bytes are not read", tgt.name, fi.Size(), MaxFileBytes)
		}
	}
	path, pin, err := t.editorPath(tgt)
	if err != nil {
		return "", err
	}
	s, err := t.editor.ReadTextFile(ctx, path, 0, 0)
	if cerr := t.editorDone(tgt, pin, true); cerr != nil {
		return "", cerr // the text, or the error, may be of a file outside: never shown
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		if t.editorOnly {
			return "", fmt.Errorf("path %q: the editor could not read it: %v", tgt.name, err)
		}
		if _, serr := tgt.root.Stat(tgt.rel); errors.Is(serr, fs.ErrNotExist) {
			return "", fmt.Errorf("path %q: %w", tgt.name, errNoFile)
		}
		return "", fmt.Errorf("path %q: the editor could not read it: %v", tgt.name, err)
	}
	if len(s) > MaxFileBytes {
		return "", fmt.Errorf("path %q is %d bytes in the editor: files over %d bytes are not read", tgt.name, len(s), MaxFileBytes)
	}
	if isBinary([]byte(s[:min(len(s), binarySniff)])) {
		return "", fmt.Errorf("path %q is a binary file (it contains NUL bytes): only text files are read", tgt.name)
	}
	return s, nil
}

// readLocal reads the text file tgt from disk, through tgt.root, refusing
// directories, what is not a regular file (a FIFO or a device would block
// the read, or never end), files over MaxFileBytes and binary files; the
// errors name tgt.name, the path as the model gave it. The file is opened
// in the root (no symbolic link out followed, on the way or at the end)
// without blocking, and checked on the open descriptor, so a file swapped
// after the check is never read.
func (t *tools) readLocal(tgt target) ([]byte, error) {
	name := tgt.name
	f, err := tgt.root.OpenFile(tgt.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("path %q: %w", name, errNoFile)
		}
		return nil, t.localError(tgt, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", name, unwrapPath(err))
	}
	if err := regularFile(fi, name); err != nil {
		return nil, err
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("path %q is %d bytes: files over %d bytes are not read", name, fi.Size(), MaxFileBytes)
	}
	// Sized from the descriptor, with room to see the end (or a file grown
	// since): one allocation, where io.ReadAll would grow its buffer.
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileBytes+1)); err != nil {
		return nil, fmt.Errorf("path %q: %w", name, unwrapPath(err))
	}
	b := buf.Bytes()
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("path %q is over %d bytes: files that large are not read", name, MaxFileBytes)
	}
	if isBinary(b) {
		return nil, fmt.Errorf("path %q is a binary file (it contains NUL bytes): only text files are read", name)
	}
	return b, nil
}

// writeText creates or overwrites the file tgt with content: through the
// editor when it offers fs/write_text_file (the editor updates its buffer
// and saves it), else on disk keeping the file's permissions. Missing
// parent directories are created on disk first either way, so write_file
// behaves the same with or without an editor. The disk is written through
// tgt.root only. With editorOnly only the editor writes (needEditor's error
// when it does not offer fs/write_text_file), and the parent directories
// are its to create. The editor is asked to write tgt's pinned real path; a
// path that changed during the call is an error saying the editor may have
// written outside (editorDone): reported, not undone.
func (t *tools) writeText(ctx context.Context, tgt target, content string) error {
	if err := t.needEditor(fmt.Sprintf("write %q", tgt.name), methodWrite); err != nil {
		return err
	}
	if dir := filepath.Dir(tgt.rel); dir != "." && !t.editorOnly {
		if err := tgt.root.MkdirAll(dir, 0o755); err != nil {
			if escapes(tgt.root, err) || errors.Is(err, os.ErrClosed) {
				return t.localError(tgt, err)
			}
			return fmt.Errorf("path %q: creating its directory: %w", tgt.name, unwrapPath(err))
		}
	}
	if !t.editorWrites() {
		if err := writeKeepingMode(tgt.root, tgt.rel, []byte(content)); err != nil {
			return t.localError(tgt, err)
		}
		return nil
	}
	path, pin, err := t.editorPath(tgt)
	if err != nil {
		return err
	}
	err = t.editor.WriteTextFile(ctx, path, content)
	if cerr := t.editorDone(tgt, pin, false); cerr != nil {
		return fmt.Errorf("%w: the editor was asked to write %s, and may have written through the change, outside %s; that is not undone", cerr, path, t.allowed())
	}
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("path %q: the editor could not write it: %v", tgt.name, err)
	}
	return nil
}

// editorPath is the path the editor is asked for tgt: with editorOnly its
// clean absolute path as given (the editor's machine is not looked at),
// else the path pinned (see pin.go), whose pin editorDone checks after the
// call.
func (t *tools) editorPath(tgt target) (string, *pinned, error) {
	if t.editorOnly {
		return tgt.abs, nil, nil
	}
	p, err := t.pin(tgt)
	if err != nil {
		return "", nil, err
	}
	return p.abs, &p, nil
}

// editorDone checks, after the editor's call, that the pinned path of tgt
// still leads where it did (recheck; sameFile for a read); nil pin (with
// editorOnly) is no check.
func (t *tools) editorDone(tgt target, pin *pinned, sameFile bool) error {
	if pin == nil {
		return nil
	}
	return t.recheck(tgt, *pin, sameFile)
}

// errNotLocal is statLocal's error with editorOnly.
var errNotLocal = errors.New("the session's files are on the editor's machine")

// statLocal is tgt's file information on disk, through tgt.root; with
// editorOnly it looks at nothing and returns errNotLocal.
func (t *tools) statLocal(tgt target) (fs.FileInfo, error) {
	if t.editorOnly {
		return nil, errNotLocal
	}
	return tgt.root.Stat(tgt.rel)
}

// regularFile refuses what the tools must not read or write as a file: a
// directory, or anything but a regular file (a FIFO, a socket, a device).
func regularFile(fi fs.FileInfo, name string) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("path %q is a directory: use list_directory", name)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("path %q is not a regular file (%s): only regular files are read and written", name, fileKind(fi.Mode()))
	}
	return nil
}

// fileKind names the type of a file that is not regular.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "of type " + m.Type().String()
}

// tempTries is how many names writeKeepingMode tries for its temporary
// file before it gives up (each taken name is a collision, as in
// os.CreateTemp).
const tempTries = 100

// writeKeepingMode writes b to the file rel of root, keeping its
// permissions if it exists (0644 otherwise). It writes a temporary file
// beside it (".<name>.tmp<random>", created new: never an existing file or
// link) and renames it over the file, so the write is whole or not at all,
// and a file hard-linked from elsewhere is replaced here, not written
// through. An existing file that is not regular is refused. Every step goes
// through root: a directory on the way swapped for a symbolic link out
// fails the step, and nothing is created outside.
func writeKeepingMode(root *os.Root, rel string, b []byte) error {
	mode := fs.FileMode(0o644)
	if fi, err := root.Lstat(rel); err == nil {
		switch {
		case fi.IsDir():
			return errors.New("it is a directory")
		case !fi.Mode().IsRegular():
			return fmt.Errorf("it is not a regular file (%s): only regular files are written", fileKind(fi.Mode()))
		}
		mode = fi.Mode().Perm()
	}
	dir, base := filepath.Split(rel)
	var tmp *os.File
	var name string
	var err error
	for range tempTries {
		name = filepath.Join(dir, "."+base+".tmp"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		tmp, err = root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if werr == nil {
		werr = tmp.Chmod(mode) // on the descriptor: Root.Chmod would follow a link swapped in
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Rename(name, rel)
	}
	if werr != nil {
		_ = root.Remove(name)
	}
	return werr
}

// withShow puts sh in the _meta of res (bridge.MetaShow), for the client to
// present the call; the model never sees it.
func withShow(res *mcp.CallToolResult, sh gateway.Show) *mcp.CallToolResult {
	res.Meta = mcp.Meta{bridge.MetaShow: sh}
	return res
}

// lineAt is the 1-based line of byte offset i in s.
func lineAt(s string, i int) int {
	return 1 + strings.Count(s[:i], "\n")
}

// firstChange is the 1-based line of after where it first differs from
// before, or 0 when they are equal.
func firstChange(before, after string) int {
	i := 0
	for i < len(before) && i < len(after) && before[i] == after[i] {
		i++
	}
	if i == len(before) && i == len(after) {
		return 0
	}
	return lineAt(after, i)
}
