//go:build linux

package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// swapRounds is how many calls of each tool TestConfinement_SwapRace makes
// while the directory is swapped under them. Before the tools went through
// an os.Root, every run failed: read_file, list_directory and search_files
// escaped within the first few calls, write_file and edit_file dozens of
// times.
const swapRounds = 100

// TestConfinement_SwapRace: a directory inside the session directory is
// swapped, atomically and over and over (renameat2 RENAME_EXCHANGE),
// between a real directory and a symbolic link to a directory outside
// (absolute, or relative climbing out), while read_file, list_directory,
// search_files, write_file and edit_file run on paths through it.
// Whichever state each call sees, none reads the outside file, lists or
// finds an outside name, changes the outside file or creates a file
// outside: the check of a path and its use cannot be split by a swap.
func TestConfinement_SwapRace(t *testing.T) {
	t.Run("absolute link", func(t *testing.T) { swapRace(t, true) })
	t.Run("relative link", func(t *testing.T) { swapRace(t, false) })
}

// swapRace is TestConfinement_SwapRace with an absolute or a relative link.
func swapRace(t *testing.T, absolute bool) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "work"), filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "secret.txt"), "OUTSIDE-SECRET\n")
	write(t, filepath.Join(outside, "outside-only.txt"), "OUTSIDE-SECRET\n")
	write(t, filepath.Join(dir, "d", "secret.txt"), "inside\n")
	link := "../outside"
	if absolute {
		link = outside
	}
	if err := os.Symlink(link, filepath.Join(dir, "swap")); err != nil {
		t.Fatal(err)
	}
	secretBefore, err := os.Stat(filepath.Join(outside, "secret.txt"))
	if err != nil {
		t.Fatal(err)
	}
	d, swap := filepath.Join(dir, "d"), filepath.Join(dir, "swap")
	if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2 RENAME_EXCHANGE: %v", err) // the file system cannot swap atomically
	}

	ctx := context.Background()
	cs := connect(t, ctx, dir)
	var done atomic.Bool
	var swapper sync.WaitGroup
	var swaps atomic.Int64
	swapper.Go(func() {
		for !done.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			swaps.Add(1)
		}
	})

	var escapes atomic.Int64
	escaped := func(format string, args ...any) {
		if escapes.Add(1) <= 5 { // the first few tell the story
			t.Errorf(format, args...)
		}
	}
	callText := func(tool string, args map[string]any) (string, bool) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Errorf("%s: protocol error %v", tool, err)
			return "", true
		}
		var sb strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		return sb.String(), res.IsError
	}
	var workers sync.WaitGroup
	for _, w := range []struct {
		tool string
		args func(i int) map[string]any
	}{
		{"read_file", func(int) map[string]any { return map[string]any{"path": "d/secret.txt"} }},
		{"list_directory", func(int) map[string]any { return map[string]any{"path": "d"} }},
		{"search_files", func(i int) map[string]any {
			if i%2 == 0 {
				return map[string]any{"pattern": "*.txt", "regex": "SECRET"}
			}
			return map[string]any{"pattern": "*.txt", "path": "d"}
		}},
		{"write_file", func(i int) map[string]any {
			return map[string]any{"path": fmt.Sprintf("d/new-%d.txt", i), "content": "x\n"}
		}},
		{"edit_file", func(int) map[string]any {
			return map[string]any{"path": "d/secret.txt", "old_text": "\n", "new_text": "\n", "replace_all": true}
		}},
	} {
		workers.Go(func() {
			for i := range swapRounds {
				got, isErr := callText(w.tool, w.args(i))
				if strings.Contains(got, "OUTSIDE-SECRET") || strings.Contains(got, "outside-only") {
					escaped("%s %v (call %d, isError %v) saw the outside directory: %q", w.tool, w.args(i), i, isErr, got)
				}
			}
		})
	}
	workers.Wait()
	done.Store(true)
	swapper.Wait()

	des, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if len(names) != 2 {
		t.Errorf("write_file created files outside the session directory: %d entries in %s, want 2: %v", len(names), outside, names[:min(len(names), 10)])
	}
	if fi, err := os.Stat(filepath.Join(outside, "secret.txt")); err != nil || !os.SameFile(fi, secretBefore) || read(t, filepath.Join(outside, "secret.txt")) != "OUTSIDE-SECRET\n" {
		t.Errorf("edit_file replaced or changed the outside file (%v)", err)
	}
	if n := escapes.Load(); n > 0 {
		t.Errorf("%d escapes in %d calls of each tool, %d swaps", n, swapRounds, swaps.Load())
	}
	t.Logf("%d swaps during %d calls of each tool", swaps.Load(), swapRounds)
}
