package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// connect connects a client to a new built-in server for dir over in-memory
// transports, as the bridge does; both end with the test.
func connect(t *testing.T, ctx context.Context, dir string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := New(&Options{Root: dir}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls tool on a new built-in server for dir over in-memory
// transports, as the bridge does, and returns the result's text and isError.
func call(t *testing.T, dir, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connect(t, ctx, dir)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// escapeFixture makes base/work (dir) holding ok.txt, "link" (a symbolic
// link to base/secret.txt, outside) and "up" (a link to base).
func escapeFixture(t *testing.T) (base, dir, outside string) {
	t.Helper()
	base = t.TempDir()
	dir = filepath.Join(base, "work")
	outside = filepath.Join(base, "secret.txt")
	write(t, outside, "secret\n")
	write(t, filepath.Join(dir, "ok.txt"), "fine\n")
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	return base, dir, outside
}

func TestConfinement(t *testing.T) {
	base, dir, outside := escapeFixture(t)
	if err := os.Symlink(filepath.Join(base, "gone.txt"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ok.txt", filepath.Join(dir, "inside")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "bin.dat"), "ab\x00cd")
	huge := filepath.Join(dir, "huge.txt")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()

	for _, tc := range []struct {
		name, tool, path, want string
	}{
		{"dotdot", "read_file", "../secret.txt", "outside the session directory"},
		{"dotdot inside", "read_file", "sub/../../secret.txt", "outside the session directory"},
		{"absolute outside", "read_file", outside, "outside the session directory"},
		{"symlink out", "read_file", "link", "symbolic link"},
		{"through symlinked dir", "read_file", "up/secret.txt", "symbolic link"},
		{"write through symlinked dir", "write_file", "up/new.txt", "symbolic link"},
		{"write dotdot", "write_file", "../new.txt", "outside the session directory"},
		{"edit symlink out", "edit_file", "link", "symbolic link"},
		{"write through dangling symlink out", "write_file", "dangling", "symbolic link"},
		{"list outside", "list_directory", "..", "outside the session directory"},
		{"search outside", "search_files", "..", "outside the session directory"},
		{"list through symlinked dir", "list_directory", "up", "symbolic link"},
		{"search through symlinked dir", "search_files", "up", "symbolic link"},
		{"missing", "read_file", "nope.txt", "no such file"},
		{"binary", "read_file", "bin.dat", "binary file"},
		{"huge", "read_file", "huge.txt", "files over"},
		{"empty", "read_file", "", "non-empty path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"path": tc.path}
			switch tc.tool {
			case "write_file":
				args["content"] = "x"
			case "edit_file":
				args["old_text"], args["new_text"] = "a", "b"
			case "search_files":
				args["pattern"] = "*"
			}
			got, isErr := call(t, dir, tc.tool, args)
			if !isErr || !strings.Contains(got, tc.want) {
				t.Fatalf("%s %q = %q (isError %v), want an error containing %q", tc.tool, tc.path, got, isErr, tc.want)
			}
			if tc.path != "" && !strings.Contains(got, tc.path) {
				t.Errorf("error %q does not name the path %q", got, tc.path)
			}
		})
	}
	if s := read(t, outside); s != "secret\n" {
		t.Errorf("outside file changed: %q", s)
	}
	if _, err := os.Stat(filepath.Join(base, "new.txt")); err == nil {
		t.Error("write_file created a file outside the session directory")
	}
	if _, err := os.Stat(filepath.Join(base, "gone.txt")); err == nil {
		t.Error("write_file created the target of a link out of the session directory")
	}
	// search_files does not follow links out.
	if got, isErr := call(t, dir, "search_files", map[string]any{"pattern": "**/*.txt", "regex": "secret"}); isErr || got != "no matches" {
		t.Errorf("search_files found text outside through a link: %q (isError %v)", got, isErr)
	}
	// Inside paths work, relative or absolute, and links that stay inside.
	for _, p := range []string{"ok.txt", filepath.Join(dir, "ok.txt"), "./sub/../ok.txt", "inside"} {
		if got, isErr := call(t, dir, "read_file", map[string]any{"path": p}); isErr || got != "fine\n" {
			t.Errorf("read_file %q = %q (isError %v)", p, got, isErr)
		}
	}
}

func TestReadFileLines(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f.txt"), "one\ntwo\nthree\nfour\n")
	got, isErr := call(t, dir, "read_file", map[string]any{"path": "f.txt", "offset": 2, "limit": 2})
	if isErr || !strings.HasPrefix(got, "two\nthree\n") || !strings.Contains(got, "offset 4") {
		t.Fatalf("read_file offset 2 limit 2 = %q (isError %v)", got, isErr)
	}
	if got, isErr := call(t, dir, "read_file", map[string]any{"path": "f.txt", "offset": 9}); !isErr || !strings.Contains(got, "has 4 lines") {
		t.Fatalf("offset past the end = %q (isError %v)", got, isErr)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	got, isErr := call(t, dir, "write_file", map[string]any{"path": "a/b/c.txt", "content": "hello"})
	if isErr || !strings.Contains(got, "Created a/b/c.txt") {
		t.Fatalf("write_file = %q (isError %v)", got, isErr)
	}
	if s := read(t, filepath.Join(dir, "a/b/c.txt")); s != "hello" {
		t.Fatalf("file = %q", s)
	}
	if got, isErr = call(t, dir, "write_file", map[string]any{"path": "a/b/c.txt", "content": "bye"}); isErr || !strings.Contains(got, "Wrote") {
		t.Fatalf("overwrite = %q (isError %v)", got, isErr)
	}
	if s := read(t, filepath.Join(dir, "a/b/c.txt")); s != "bye" {
		t.Fatalf("file = %q", s)
	}
	if got, isErr = call(t, dir, "write_file", map[string]any{"path": "a", "content": "x"}); !isErr || !strings.Contains(got, "directory") {
		t.Fatalf("write over a directory = %q (isError %v)", got, isErr)
	}
}

func TestEditFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.go")
	write(t, p, "a := 1\nb := 1\n")
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing", map[string]any{"old_text": "c := 1", "new_text": "x"}, "was not found"},
		{"ambiguous", map[string]any{"old_text": ":= 1", "new_text": "x"}, "occurs 2 times"},
		{"empty old", map[string]any{"old_text": "", "new_text": "x"}, "must not be empty"},
		{"missing file", map[string]any{"path": "nope.go", "old_text": "a", "new_text": "x"}, "no such file"},
	} {
		args := map[string]any{"path": "f.go"}
		for k, v := range tc.args {
			args[k] = v
		}
		if got, isErr := call(t, dir, "edit_file", args); !isErr || !strings.Contains(got, tc.want) {
			t.Errorf("%s: edit_file = %q (isError %v), want %q", tc.name, got, isErr, tc.want)
		}
	}
	if s := read(t, p); s != "a := 1\nb := 1\n" {
		t.Fatalf("failed edits changed the file: %q", s)
	}
	if got, isErr := call(t, dir, "edit_file", map[string]any{"path": "f.go", "old_text": "b := 1", "new_text": "b := 2"}); isErr {
		t.Fatalf("edit = %q", got)
	}
	if got, isErr := call(t, dir, "edit_file", map[string]any{"path": "f.go", "old_text": ":= ", "new_text": "= ", "replace_all": true}); isErr || !strings.Contains(got, "2 replacement") {
		t.Fatalf("replace_all = %q (isError %v)", got, isErr)
	}
	if s := read(t, p); s != "a = 1\nb = 2\n" {
		t.Fatalf("file = %q", s)
	}
}

func TestListDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f.txt"), "12345")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, isErr := call(t, dir, "list_directory", map[string]any{"path": "."})
	if isErr || !strings.Contains(got, "f.txt (5 bytes)") || !strings.Contains(got, "sub/") {
		t.Fatalf("list_directory = %q (isError %v)", got, isErr)
	}
	if got, isErr := call(t, dir, "list_directory", map[string]any{"path": "nope"}); !isErr || !strings.Contains(got, "no such directory") {
		t.Fatalf("missing dir = %q (isError %v)", got, isErr)
	}
}

func TestSearchFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.go"), "package a\nfunc Hello() {}\n")
	write(t, filepath.Join(dir, "cmd/x/main.go"), "package main\nfunc main() { Hello() }\n")
	write(t, filepath.Join(dir, "README.md"), "Hello\n")
	write(t, filepath.Join(dir, ".git/HEAD"), "Hello\n")
	got, isErr := call(t, dir, "search_files", map[string]any{"pattern": "*.go"})
	if isErr || got != "a.go\ncmd/x/main.go" {
		t.Fatalf("glob *.go = %q (isError %v)", got, isErr)
	}
	got, isErr = call(t, dir, "search_files", map[string]any{"pattern": "cmd/**/*.go"})
	if isErr || got != "cmd/x/main.go" {
		t.Fatalf("glob cmd/**/*.go = %q (isError %v)", got, isErr)
	}
	got, isErr = call(t, dir, "search_files", map[string]any{"pattern": "*", "regex": `Hello\(`})
	if isErr || got != "a.go:2:func Hello() {}\ncmd/x/main.go:2:func main() { Hello() }" {
		t.Fatalf("regex = %q (isError %v)", got, isErr)
	}
	if got, isErr = call(t, dir, "search_files", map[string]any{"pattern": "*", "regex": "("}); !isErr || !strings.Contains(got, "regex") {
		t.Fatalf("bad regex = %q (isError %v)", got, isErr)
	}
	for i := range MaxMatches + 5 {
		write(t, filepath.Join(dir, "many", fmt.Sprintf("f%03d.txt", i)), "x\n")
	}
	got, isErr = call(t, dir, "search_files", map[string]any{"pattern": "*.txt", "path": "many"})
	if isErr || !strings.Contains(got, "capped") || strings.Count(got, "\n") != MaxMatches {
		t.Fatalf("cap: %d lines, isError %v, tail %q", strings.Count(got, "\n"), isErr, got[max(0, len(got)-100):])
	}
}

func TestAnnotations(t *testing.T) {
	ctx := context.Background()
	cs := connect(t, ctx, t.TempDir())
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly, kinds := map[string]bool{}, map[string]any{}
	for _, tl := range res.Tools {
		readOnly[tl.Name] = tl.Annotations.ReadOnlyHint
		kinds[tl.Name] = tl.Meta[bridge.MetaToolKind]
	}
	want := map[string]bool{"read_file": true, "list_directory": true, "search_files": true, "write_file": false, "edit_file": false, "update_plan": true, "run_command": false}
	if fmt.Sprint(readOnly) != fmt.Sprint(want) {
		t.Fatalf("readOnlyHint by tool = %v, want %v", readOnly, want)
	}
	wantKinds := map[string]any{"read_file": "read", "list_directory": "read", "search_files": "search", "write_file": "edit", "edit_file": "edit", "update_plan": "think", "run_command": "execute"}
	if fmt.Sprint(kinds) != fmt.Sprint(wantKinds) {
		t.Fatalf("kind by tool = %v, want %v", kinds, wantKinds)
	}
}
