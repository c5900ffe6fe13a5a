package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testTools returns the tools of opts, closed with the test.
func testTools(t *testing.T, opts Options) *tools {
	t.Helper()
	tl := newTools(opts)
	t.Cleanup(func() { _ = tl.fs.Close() })
	return tl
}

// TestRoots_ReleasedWithLastSession: the roots are held while the server
// has a session, closed when the last one ends, opened again by the next
// session's first call; Close ends them for good.
func TestRoots_ReleasedWithLastSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "f.txt"), "text\n")
		tl := newTools(Options{Root: dir})
		srv := tl.server()
		ctx := context.Background()
		session := func() (*mcp.ClientSession, *mcp.ServerSession) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			return cs, ss
		}
		read := func(cs *mcp.ClientSession) string {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "f.txt"}})
			if err != nil {
				t.Fatal(err)
			}
			return res.Content[0].(*mcp.TextContent).Text
		}
		open := func() bool {
			tl.fs.mu.Lock()
			defer tl.fs.mu.Unlock()
			return tl.fs.roots != nil
		}

		cs1, ss1 := session()
		cs2, ss2 := session()
		for _, cs := range []*mcp.ClientSession{cs1, cs2} {
			if got := read(cs); got != "text\n" {
				t.Fatalf("read_file = %q", got)
			}
		}
		_, _ = cs1.Close(), ss1.Close()
		synctest.Wait()
		if !open() {
			t.Fatal("the roots were closed while a session was still connected")
		}
		_, _ = cs2.Close(), ss2.Close()
		synctest.Wait()
		if open() {
			t.Fatal("the roots are still open after the last session ended")
		}

		cs3, ss3 := session() // a later connection (a redial) opens them again
		if got := read(cs3); got != "text\n" || !open() {
			t.Fatalf("read_file after the roots were released = %q (open %v)", got, open())
		}
		_ = tl.fs.Close()
		if got := read(cs3); !strings.Contains(got, "closed") {
			t.Errorf("read_file after Close = %q, want the tools closed", got)
		}
		_, _ = cs3.Close(), ss3.Close()
		synctest.Wait()
	})
}

// A session directory that cannot be opened as a root allows nothing, and
// the error names it; the other directories still work.
func TestRoots_DirectoryThatCannotBeOpened(t *testing.T) {
	base := t.TempDir()
	dir, other := filepath.Join(base, "work"), filepath.Join(base, "other")
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	tl := testTools(t, Options{Root: dir, Dirs: []string{other}}) // other does not exist yet
	write(t, filepath.Join(other, "b.txt"), "b\n")
	ctx := context.Background()
	if _, out, err := tl.readFile(ctx, nil, ReadFileInput{Path: "a.txt"}); err != nil || out.Content != "a\n" {
		t.Errorf("read_file in the cwd = %q, %v", out.Content, err)
	}
	_, _, err := tl.readFile(ctx, nil, ReadFileInput{Path: filepath.Join(other, "b.txt")})
	if err == nil || !strings.Contains(err.Error(), "the additional directory "+other+" cannot be opened") {
		t.Errorf("read_file in a directory that could not be opened: %v", err)
	}
	_, _, err = tl.writeFile(ctx, nil, WriteFileInput{Path: filepath.Join(other, "c.txt"), Content: "c"})
	if err == nil || !strings.Contains(err.Error(), "cannot be opened") {
		t.Errorf("write_file in a directory that could not be opened: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "c.txt")); err == nil {
		t.Error("write_file wrote in a directory that could not be opened")
	}

	// The same for the session directory itself.
	late := filepath.Join(base, "late")
	tl = testTools(t, Options{Root: late})
	write(t, filepath.Join(late, "a.txt"), "a\n")
	_, _, err = tl.readFile(ctx, nil, ReadFileInput{Path: "a.txt"})
	if err == nil || !strings.Contains(err.Error(), "the session directory "+late+" cannot be opened") {
		t.Errorf("read_file in a session directory that could not be opened: %v", err)
	}
	_, _, err = tl.searchFiles(ctx, nil, SearchFilesInput{Pattern: "*"})
	if err == nil || !strings.Contains(err.Error(), "cannot be opened") {
		t.Errorf("search_files in a session directory that could not be opened: %v", err)
	}
}

// TestLocalOps_SwappedAfterCheck is the swap race made deterministic: a
// path is checked (resolve) while the directory on the way is real, then
// the directory is swapped for a symbolic link out, then the operation
// runs. Each refuses, naming the path and the link out; nothing outside is
// read, listed or created.
func TestLocalOps_SwappedAfterCheck(t *testing.T) {
	for _, link := range []string{"absolute", "relative"} {
		t.Run(link, func(t *testing.T) {
			base := t.TempDir()
			dir, outside := filepath.Join(base, "work"), filepath.Join(base, "outside")
			write(t, filepath.Join(outside, "f.txt"), "OUTSIDE\n")
			write(t, filepath.Join(dir, "d", "f.txt"), "inside\n")
			tl := testTools(t, Options{Root: dir})
			ctx := context.Background()
			check := func(path string) target {
				tgt, err := tl.resolve(path)
				if err != nil {
					t.Fatal(err)
				}
				return tgt
			}
			file, sub, newFile, newDeep := check("d/f.txt"), check("d"), check("d/new.txt"), check("d/x/y/new.txt")
			target := outside
			if link == "relative" {
				target = "../outside"
			}
			if err := os.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "d.real")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(dir, "d")); err != nil {
				t.Fatal(err)
			}

			refused := func(what string, err error, path string) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("path %q leads through a symbolic link outside the session directory", path)) {
					t.Errorf("%s through a directory swapped for a link out: %v", what, err)
				}
			}
			b, err := tl.readLocal(file)
			refused("read", err, "d/f.txt")
			if strings.Contains(string(b), "OUTSIDE") {
				t.Errorf("read %q outside", b)
			}
			_, err = readDirIn(ctx, sub.root, sub.rel)
			refused("list", tl.dirError(ctx, sub, err), "d")
			err = walk(ctx, sub.root, sub.rel, func(p string, _ os.DirEntry) error {
				t.Errorf("walk passed %s, outside", p)
				return nil
			})
			refused("walk", tl.dirError(ctx, sub, err), "d")
			refused("write", tl.writeText(ctx, newFile, "x"), "d/new.txt")
			refused("write with new directories", tl.writeText(ctx, newDeep, "x"), "d/x/y/new.txt")
			des, err := os.ReadDir(outside)
			if err != nil || len(des) != 1 {
				t.Errorf("outside holds %v (%v), want f.txt only", des, err)
			}
		})
	}
}

// Symbolic links that stay inside the session directory are followed by
// every tool, relative or absolute, to a file or a directory.
func TestConfinement_LinksInside(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "real", "f.txt"), "hello\n")
	for name, target := range map[string]string{"rel": "real", "abs": filepath.Join(dir, "real")} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"rel", "abs"} {
		if got, isErr := call(t, dir, "read_file", map[string]any{"path": l + "/f.txt"}); isErr || got != "hello\n" {
			t.Errorf("read_file %s/f.txt = %q (isError %v)", l, got, isErr)
		}
		if got, isErr := call(t, dir, "list_directory", map[string]any{"path": l}); isErr || !strings.Contains(got, "f.txt") {
			t.Errorf("list_directory %s = %q (isError %v)", l, got, isErr)
		}
		if got, isErr := call(t, dir, "search_files", map[string]any{"pattern": "*.txt", "path": l, "regex": "hel"}); isErr || !strings.HasSuffix(got, "real/f.txt:1:hello") {
			t.Errorf("search_files in %s = %q (isError %v)", l, got, isErr)
		}
		if got, isErr := call(t, dir, "write_file", map[string]any{"path": l + "/new-" + l + ".txt", "content": "x"}); isErr {
			t.Errorf("write_file %s/new.txt = %q", l, got)
		}
		if s := read(t, filepath.Join(dir, "real", "new-"+l+".txt")); s != "x" {
			t.Errorf("written through %s: %q", l, s)
		}
	}
}

// escapes recognises os.Root's refusal of a path out of it, and nothing
// else.
func TestEscapes(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("..", filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, out := r.Open("up/x")
	_, missing := r.Open("missing")
	if !escapes(r, out) || escapes(r, missing) || escapes(r, nil) {
		t.Errorf("escapes: link out %v (%v), missing %v (%v), nil %v", escapes(r, out), out, escapes(r, missing), missing, escapes(r, nil))
	}
	_ = r.Close()
	_, closed := r.Open("x")
	if escapes(r, out) || escapes(r, closed) {
		t.Errorf("escapes on a closed root: %v, %v", escapes(r, out), escapes(r, closed))
	}
}

// cancelAfter is a context cancelled at the limit-th look at Err: the
// handler's own pace decides when, not a clock.
type cancelAfter struct {
	context.Context
	cancel context.CancelFunc
	looks  atomic.Int64
	limit  int64
}

func newCancelAfter(limit int64) *cancelAfter {
	ctx, cancel := context.WithCancel(context.Background())
	return &cancelAfter{Context: ctx, cancel: cancel, limit: limit}
}

func (c *cancelAfter) Err() error {
	if c.looks.Add(1) == c.limit {
		c.cancel()
	}
	return c.Context.Err()
}

// afterCancel is how many more looks at a cancelled context the handlers
// take on their way out (telling the cancel from a failure). Each entry, each
// chunk of a directory and each scanCheck lines cost one look, so no more
// than that means nothing more was read.
const afterCancel = 2

// search_files and list_directory stop at the first look at the context
// after it ends, between two entries, two chunks of a directory or within a
// long file, and return its cause, with hundreds of entries left. An
// expired deadline stops them before any work.
func TestWalks_StopWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	for d := range 20 {
		for f := range 20 {
			write(t, filepath.Join(dir, fmt.Sprintf("d%02d/f%02d.txt", d, f)), "x\n")
		}
	}
	write(t, filepath.Join(dir, "long.txt"), strings.Repeat("line\n", 100*scanCheck))
	for f := range 3 * dirChunk {
		write(t, filepath.Join(dir, "wide", fmt.Sprintf("f%04d.txt", f)), "")
	}
	tl := testTools(t, Options{Root: dir})
	for _, limit := range []int64{1, 7, 150, 420, 500, 566, 700} { // in a directory, in long.txt, in wide, in its entries
		ctx := newCancelAfter(limit)
		_, out, err := tl.searchFiles(ctx, nil, SearchFilesInput{Pattern: "*.txt", Regex: "never"})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("search_files cancelled at look %d: %v (%d lines)", limit, err, len(out.Lines))
		}
		if n := ctx.looks.Load(); n > limit+afterCancel {
			t.Errorf("search_files cancelled at look %d looked %d times: it went on after the cancel", limit, n)
		}
	}
	for _, limit := range []int64{1, 2} {
		ctx := newCancelAfter(limit)
		if _, _, err := tl.listDirectory(ctx, nil, ListDirectoryInput{Path: "wide"}); !errors.Is(err, context.Canceled) {
			t.Errorf("list_directory cancelled at look %d: %v", limit, err)
		}
		if n := ctx.looks.Load(); n > limit+afterCancel {
			t.Errorf("list_directory cancelled at look %d looked %d times: it went on after the cancel", limit, n)
		}
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, _, err := tl.searchFiles(expired, nil, SearchFilesInput{Pattern: "*"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("search_files past its deadline: %v", err)
	}
	if _, _, err := tl.listDirectory(expired, nil, ListDirectoryInput{Path: "."}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("list_directory past its deadline: %v", err)
	}
}
