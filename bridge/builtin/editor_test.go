package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// fakeEditor is an editor.Editor over the real files, with unsaved buffers
// that win over the disk, recording each call as "read <path>" or
// "write <path>". Safe for concurrent use.
type fakeEditor struct {
	caps     editor.Capabilities
	readErr  error // if set, every read fails with it
	writeErr error // if set, every write fails with it
	// beforeRead and beforeWrite, if set, run at the start of each read or
	// write, with its path, before the editor opens it: the moment a racing
	// change lands between the tools' check and the editor's use.
	beforeRead, beforeWrite func(path string)
	// returned records what each read returned, in order.
	returned []string

	mu      sync.Mutex
	calls   []string
	unsaved map[string]string // path -> text the user has not saved
}

var _ editor.Editor = (*fakeEditor)(nil)

func newFakeEditor(read, write bool) *fakeEditor {
	return &fakeEditor{caps: editor.Capabilities{ReadTextFile: read, WriteTextFile: write}, unsaved: map[string]string{}}
}

func (e *fakeEditor) Capabilities() editor.Capabilities { return e.caps }

func (e *fakeEditor) ReadTextFile(_ context.Context, path string, line, limit int) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, "read "+path)
	if e.beforeRead != nil {
		e.beforeRead(path)
	}
	if !e.caps.ReadTextFile {
		return "", errors.New("fs/read_text_file not offered")
	}
	if e.readErr != nil {
		return "", e.readErr
	}
	if line != 0 || limit != 0 {
		return "", fmt.Errorf("unexpected line %d limit %d", line, limit)
	}
	if s, ok := e.unsaved[path]; ok {
		e.returned = append(e.returned, s)
		return s, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("fs/read_text_file %s: {\"code\":-32002,\"message\":\"Resource not found\"}", path)
	}
	e.returned = append(e.returned, string(b))
	return string(b), nil
}

func (e *fakeEditor) WriteTextFile(_ context.Context, path, content string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, "write "+path)
	if e.beforeWrite != nil {
		e.beforeWrite(path)
	}
	if !e.caps.WriteTextFile {
		return errors.New("fs/write_text_file not offered")
	}
	if e.writeErr != nil {
		return e.writeErr
	}
	delete(e.unsaved, path)
	return os.WriteFile(path, []byte(content), 0o644)
}

func (e *fakeEditor) CreateTerminal(context.Context, editor.TerminalRequest) (editor.Terminal, error) {
	return nil, errors.New("no terminals")
}

func (e *fakeEditor) setUnsaved(path, text string) {
	e.mu.Lock()
	e.unsaved[path] = text
	e.mu.Unlock()
}

// readsReturned is what the reads returned so far, in order.
func (e *fakeEditor) readsReturned() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.returned)
}

func (e *fakeEditor) callLog() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// callWith calls tool on a new built-in server with opts and returns the
// whole result.
func callWith(t *testing.T, opts Options, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := New(&opts).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	return res
}

// resultText is the text of res's text blocks.
func resultText(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

// showOf decodes the Show in res's _meta, or returns nil.
func showOf(t *testing.T, res *mcp.CallToolResult) *gateway.Show {
	t.Helper()
	v, ok := res.Meta[bridge.MetaShow]
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var sh gateway.Show
	if err := json.Unmarshal(b, &sh); err != nil {
		t.Fatalf("_meta %s = %s: %v", bridge.MetaShow, b, err)
	}
	return &sh
}

func mustOK(t *testing.T, tool string, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: isError %q", tool, resultText(res))
	}
	return resultText(res)
}

func mustFail(t *testing.T, tool string, res *mcp.CallToolResult, want ...string) {
	t.Helper()
	got := resultText(res)
	if !res.IsError {
		t.Fatalf("%s = %q, want an error", tool, got)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s error %q lacks %q", tool, got, w)
		}
	}
}

func TestEditor_ReadFileUnsavedWins(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	write(t, p, "disk 1\ndisk 2\n")
	ed := newFakeEditor(true, true)
	ed.setUnsaved(p, "buf 1\nbuf 2\nbuf 3\n")
	opts := Options{Root: dir, Editor: ed}
	if got := mustOK(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": "f.txt"})); got != "buf 1\nbuf 2\nbuf 3\n" {
		t.Fatalf("read_file = %q, want the editor's unsaved text", got)
	}
	res := callWith(t, opts, "read_file", map[string]any{"path": "f.txt", "offset": 2, "limit": 1})
	if got := mustOK(t, "read_file", res); !strings.HasPrefix(got, "buf 2\n") || !strings.Contains(got, "lines 2-2 of 3") {
		t.Fatalf("read_file offset 2 limit 1 = %q", got)
	}
	if sh := showOf(t, res); sh == nil || len(sh.Locations) != 1 || sh.Locations[0] != (gateway.Location{Path: p, Line: 2}) || sh.Diffs != nil {
		t.Fatalf("read_file show = %+v, want the location %s:2", sh, p)
	}
	if got, want := ed.callLog(), []string{"read " + p, "read " + p}; !slices.Equal(got, want) {
		t.Fatalf("editor calls = %q, want %q", got, want)
	}
}

func TestEditor_WriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	write(t, p, "disk\n")
	ed := newFakeEditor(true, true)
	ed.setUnsaved(p, "one\ntwo\nunsaved\n")
	opts := Options{Root: dir, Editor: ed}
	res := callWith(t, opts, "write_file", map[string]any{"path": "f.txt", "content": "one\ntwo\nthree\n"})
	if got := mustOK(t, "write_file", res); got != "Wrote f.txt (14 bytes)" {
		t.Errorf("write_file text = %q", got)
	}
	if s := read(t, p); s != "one\ntwo\nthree\n" {
		t.Fatalf("file = %q, want the editor to have written it", s)
	}
	sh := showOf(t, res)
	if sh == nil || len(sh.Diffs) != 1 || *sh.Diffs[0].OldText != "one\ntwo\nunsaved\n" || sh.Diffs[0].NewText != "one\ntwo\nthree\n" || sh.Diffs[0].Path != p {
		t.Fatalf("write_file show = %+v, want a diff from the editor's text", sh)
	}
	if sh.Locations[0] != (gateway.Location{Path: p, Line: 3}) {
		t.Errorf("write_file location = %+v, want line 3 (the first change)", sh.Locations)
	}
	// A file neither the editor nor the disk has is created through the
	// editor, with parent directories; its diff has no old text.
	np := filepath.Join(dir, "new", "g.txt")
	res = callWith(t, opts, "write_file", map[string]any{"path": "new/g.txt", "content": "hi"})
	if got := mustOK(t, "write_file", res); got != "Created new/g.txt (2 bytes)" {
		t.Errorf("write_file text = %q", got)
	}
	if sh := showOf(t, res); sh == nil || len(sh.Diffs) != 1 || sh.Diffs[0].OldText != nil || sh.Diffs[0].NewText != "hi" {
		t.Fatalf("new file show = %+v, want a diff without old text", sh)
	}
	if s := read(t, np); s != "hi" {
		t.Fatalf("new file = %q", s)
	}
	want := []string{"read " + p, "write " + p, "read " + np, "write " + np}
	if got := ed.callLog(); !slices.Equal(got, want) {
		t.Fatalf("editor calls = %q, want %q", got, want)
	}
}

func TestEditor_EditFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.go")
	write(t, p, "a := 1\nb := 1\n")
	ed := newFakeEditor(true, true)
	ed.setUnsaved(p, "a := 1\nb := 1\nc := 1\n")
	opts := Options{Root: dir, Editor: ed}
	// old_text only in the unsaved text: found there.
	res := callWith(t, opts, "edit_file", map[string]any{"path": "f.go", "old_text": "c := 1", "new_text": "c := 2"})
	if got := mustOK(t, "edit_file", res); got != "Edited f.go (1 replacement(s))" {
		t.Errorf("edit_file text = %q", got)
	}
	if s := read(t, p); s != "a := 1\nb := 1\nc := 2\n" {
		t.Fatalf("file = %q, want the edit of the editor's text", s)
	}
	sh := showOf(t, res)
	if sh == nil || len(sh.Diffs) != 1 || *sh.Diffs[0].OldText != "a := 1\nb := 1\nc := 1\n" || sh.Diffs[0].NewText != "a := 1\nb := 1\nc := 2\n" {
		t.Fatalf("edit_file show = %+v", sh)
	}
	if len(sh.Locations) != 1 || sh.Locations[0] != (gateway.Location{Path: p, Line: 3}) {
		t.Errorf("edit_file locations = %+v, want %s:3", sh.Locations, p)
	}
	if got, want := ed.callLog(), []string{"read " + p, "write " + p}; !slices.Equal(got, want) {
		t.Fatalf("editor calls = %q, want %q", got, want)
	}
	// A file missing from the editor and the disk: edit_file fails.
	mustFail(t, "edit_file", callWith(t, opts, "edit_file", map[string]any{"path": "nope.go", "old_text": "a", "new_text": "b"}), `"nope.go"`, "no such file")
}

// TestEditor_Partial: each method the editor does not offer is done
// locally, and no request is made for it.
func TestEditor_Partial(t *testing.T) {
	for _, tc := range []struct {
		name        string
		read, write bool
		want        func(p string) []string
		// old is the text the edit starts from.
		old string
	}{
		{"read only", true, false, func(p string) []string { return []string{"read " + p} }, "x unsaved\n"},
		{"write only", false, true, func(p string) []string { return []string{"write " + p} }, "x disk\n"},
		{"neither", false, false, func(string) []string { return nil }, "x disk\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f.txt")
			write(t, p, "x disk\n")
			ed := newFakeEditor(tc.read, tc.write)
			ed.setUnsaved(p, "x unsaved\n")
			res := callWith(t, Options{Root: dir, Editor: ed}, "edit_file", map[string]any{"path": "f.txt", "old_text": "x", "new_text": "y"})
			mustOK(t, "edit_file", res)
			if got, want := read(t, p), "y"+tc.old[1:]; got != want {
				t.Errorf("file = %q, want %q", got, want)
			}
			if got := ed.callLog(); !slices.Equal(got, tc.want(p)) {
				t.Errorf("editor calls = %q, want %q", got, tc.want(p))
			}
		})
	}
}

func TestEditor_Errors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	write(t, p, "text\n")
	ed := newFakeEditor(true, true)
	ed.readErr = errors.New(`fs/read_text_file: {"code":-32603,"message":"Internal error"}`)
	opts := Options{Root: dir, Editor: ed}
	mustFail(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": "f.txt"}), `"f.txt"`, "editor could not read", "Internal error")
	mustFail(t, "edit_file", callWith(t, opts, "edit_file", map[string]any{"path": "f.txt", "old_text": "t", "new_text": "x"}), `"f.txt"`, "editor could not read")
	mustFail(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": "gone.txt"}), `"gone.txt"`, "no such file")
	// write_file still writes a file whose old text the editor cannot give;
	// it is shown without a diff.
	res := callWith(t, opts, "write_file", map[string]any{"path": "f.txt", "content": "new\n"})
	mustOK(t, "write_file", res)
	if sh := showOf(t, res); sh == nil || sh.Diffs != nil || len(sh.Locations) != 1 {
		t.Errorf("write_file show = %+v, want a location and no diff", sh)
	}
	if s := read(t, p); s != "new\n" {
		t.Errorf("file = %q", s)
	}

	ed = newFakeEditor(true, true)
	ed.writeErr = errors.New(`fs/write_text_file: {"code":-32603,"message":"disk full"}`)
	opts.Editor = ed
	mustFail(t, "write_file", callWith(t, opts, "write_file", map[string]any{"path": "f.txt", "content": "x"}), `"f.txt"`, "editor could not write", "disk full")
	mustFail(t, "edit_file", callWith(t, opts, "edit_file", map[string]any{"path": "f.txt", "old_text": "new", "new_text": "x"}), `"f.txt"`, "editor could not write")
	if s := read(t, p); s != "new\n" {
		t.Errorf("failed writes changed the file: %q", s)
	}
}

// TestEditor_Limits: the limits of local files hold for the editor's text,
// and a file too large on disk is refused before the editor is asked.
func TestEditor_Limits(t *testing.T) {
	dir := t.TempDir()
	bin, big, huge := filepath.Join(dir, "bin.txt"), filepath.Join(dir, "big.txt"), filepath.Join(dir, "huge.txt")
	write(t, bin, "text\n")
	write(t, big, "text\n")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ed := newFakeEditor(true, true)
	ed.setUnsaved(bin, "ab\x00cd")
	ed.setUnsaved(big, strings.Repeat("x", MaxFileBytes+1))
	opts := Options{Root: dir, Editor: ed}
	mustFail(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": "bin.txt"}), `"bin.txt"`, "binary file")
	mustFail(t, "edit_file", callWith(t, opts, "edit_file", map[string]any{"path": "bin.txt", "old_text": "a", "new_text": "b"}), `"bin.txt"`, "binary file")
	mustFail(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": "big.txt"}), `"big.txt"`, "files over")
	mustFail(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": "huge.txt"}), `"huge.txt"`, "files over")
	mustFail(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": "."}), "is a directory")
	for _, c := range ed.callLog() {
		if strings.HasSuffix(c, "huge.txt") || c == "read "+dir {
			t.Errorf("the editor was asked %q: the disk already refuses it", c)
		}
	}
}

// TestEditor_ConfinementFirst: a path outside the allowed directories never
// reaches the editor.
func TestEditor_ConfinementFirst(t *testing.T) {
	_, dir, outside := escapeFixture(t)
	ed := newFakeEditor(true, true)
	ed.setUnsaved(outside, "unsaved secret\n")
	opts := Options{Root: dir, Editor: ed}
	for _, path := range []string{"../secret.txt", outside, "link", "up/secret.txt", "up/new.txt", "sub/../../secret.txt"} {
		for _, tool := range []string{"read_file", "write_file", "edit_file"} {
			args := map[string]any{"path": path}
			switch tool {
			case "write_file":
				args["content"] = "x"
			case "edit_file":
				args["old_text"], args["new_text"] = "secret", "x"
			}
			mustFail(t, tool+" "+path, callWith(t, opts, tool, args), path, "outside")
		}
	}
	if c := ed.callLog(); len(c) != 0 {
		t.Fatalf("the editor was asked %q for paths outside the session directory", c)
	}
	if s := read(t, outside); s != "secret\n" {
		t.Fatalf("outside file changed: %q", s)
	}
}
