package builtin

import (
	"context"
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

	"github.com/seed02d3eb6b/acp-agent/editor"
)

// remoteEditor is an editor.Editor on another machine: its files are a
// map by absolute path, never this machine's, and its terminals (when
// offered) are a termEditor's. It records each file call as "read <path>"
// or "write <path>". Safe for concurrent use.
type remoteEditor struct {
	caps editor.Capabilities
	term *termEditor // the terminals, when caps.Terminal

	mu    sync.Mutex
	files map[string]string
	calls []string
}

var _ editor.Editor = (*remoteEditor)(nil)

func (e *remoteEditor) Capabilities() editor.Capabilities { return e.caps }

func (e *remoteEditor) ReadTextFile(_ context.Context, path string, _, _ int) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, "read "+path)
	if !e.caps.ReadTextFile {
		return "", errors.New("fs/read_text_file not offered")
	}
	s, ok := e.files[path]
	if !ok {
		return "", fmt.Errorf(`fs/read_text_file %s: {"code":-32002,"message":"Resource not found"}`, path)
	}
	return s, nil
}

func (e *remoteEditor) WriteTextFile(_ context.Context, path, content string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, "write "+path)
	if !e.caps.WriteTextFile {
		return errors.New("fs/write_text_file not offered")
	}
	e.files[path] = content
	return nil
}

func (e *remoteEditor) CreateTerminal(ctx context.Context, req editor.TerminalRequest) (editor.Terminal, error) {
	if !e.caps.Terminal {
		return nil, errors.New("terminal/create not offered")
	}
	return e.term.CreateTerminal(ctx, req)
}

func (e *remoteEditor) file(path string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.files[path]
	return s, ok
}

func (e *remoteEditor) callLog() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// listTools lists the tools of a server made with opts.
func listTools(t *testing.T, opts Options) map[string]*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connectOpts(t, ctx, opts, nil)
	tools := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tool.Name] = tool
	}
	return tools
}

// An EditorOnly server offers the tools the editor's ACP methods can
// serve, and the same list whatever the editor offers (the list is kept
// per process by name): no list_directory or search_files, which ACP has
// no method for.
func TestEditorOnly_Tools(t *testing.T) {
	want := []string{"edit_file", "read_file", "run_command", "update_plan", "write_file"}
	all := editor.Capabilities{ReadTextFile: true, WriteTextFile: true, Terminal: true}
	for name, ed := range map[string]editor.Editor{
		"no editor":   nil,
		"bare editor": &remoteEditor{},
		"full editor": &remoteEditor{caps: all, term: &termEditor{}},
	} {
		t.Run(name, func(t *testing.T) {
			tools := listTools(t, Options{Root: "/client/project", Editor: ed, EditorOnly: true})
			got := slices.Sorted(func(yield func(string) bool) {
				for n := range tools {
					if !yield(n) {
						return
					}
				}
			})
			if !slices.Equal(got, want) {
				t.Errorf("tools = %v, want %v", got, want)
			}
			if d := tools["run_command"].Description; !strings.Contains(d, "in the editor's terminal") {
				t.Errorf("run_command description %q does not say it runs in the editor's terminal", d)
			}
		})
	}
	// Without EditorOnly all seven, as before.
	if n := len(listTools(t, Options{Root: t.TempDir()})); n != 7 {
		t.Errorf("%d tools without EditorOnly, want 7", n)
	}
}

// An EditorOnly server opens no os.Root: nothing of this host's disk is
// held, or reachable through one.
func TestEditorOnly_NoRoots(t *testing.T) {
	dir := t.TempDir()
	if tl := newTools(Options{Root: dir, Dirs: []string{dir}, EditorOnly: true}); tl.fs != nil {
		t.Errorf("EditorOnly tools opened roots %v", tl.fs.dirs)
	}
	if tl := newTools(Options{Root: dir}); tl.fs == nil {
		t.Error("local tools opened no roots")
	}
}

// When the editor lacks a method, the call is an error result that names
// the method and says the agent cannot do it itself, and nothing of this
// host is touched: a file that exists here under the session's path is
// not read, nothing is written or created, no command runs.
func TestEditorOnly_NoLocalAccess(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	write(t, secret, "LOCAL SECRET\n")
	marker := filepath.Join(dir, "ran")
	why := "acp-agent runs on a gateway, away from the session's files and processes"
	for name, ed := range map[string]editor.Editor{"no editor": nil, "bare editor": &remoteEditor{files: map[string]string{}}} {
		t.Run(name, func(t *testing.T) {
			opts := Options{Root: dir, Editor: ed, EditorOnly: true}
			res := callWith(t, opts, "read_file", map[string]any{"path": "secret.txt"})
			mustFail(t, "read_file", res, "the editor does not offer fs/read_text_file", why, `it cannot read "secret.txt" itself`)
			if strings.Contains(resultText(res), "LOCAL SECRET") {
				t.Errorf("read_file showed the local file: %q", resultText(res))
			}
			mustFail(t, "write_file", callWith(t, opts, "write_file", map[string]any{"path": "new/dir/f.txt", "content": "x"}),
				"the editor does not offer fs/write_text_file", why, `it cannot write "new/dir/f.txt" itself`)
			mustFail(t, "write_file", callWith(t, opts, "write_file", map[string]any{"path": "secret.txt", "content": "overwritten"}),
				"fs/write_text_file")
			mustFail(t, "edit_file", callWith(t, opts, "edit_file", map[string]any{"path": "secret.txt", "old_text": "LOCAL", "new_text": "x"}),
				"the editor does not offer fs/read_text_file or fs/write_text_file", why, `it cannot edit "secret.txt" itself`)
			mustFail(t, "run_command", callWith(t, opts, "run_command", map[string]any{"command": "touch " + marker}),
				"the editor does not offer terminal/create", why, "it cannot run the command itself")
			if b, err := os.ReadFile(secret); err != nil || string(b) != "LOCAL SECRET\n" {
				t.Errorf("secret.txt = %q, %v; want it untouched", b, err)
			}
			for _, p := range []string{filepath.Join(dir, "new"), marker} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists (%v): something was done locally", p, err)
				}
			}
			if re, ok := ed.(*remoteEditor); ok && len(re.callLog()) != 0 {
				t.Errorf("editor calls %v for methods it does not offer", re.callLog())
			}
		})
	}
}

// Through the editor, the session's paths are the editor's: the session
// directory need not exist here, and what this host has at the same path
// (a directory, a link out, nothing) makes no difference. Paths are still
// confined by name.
func TestEditorOnly_ThroughTheEditor(t *testing.T) {
	local := t.TempDir()
	if err := os.Mkdir(filepath.Join(local, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(local, "out")); err != nil {
		t.Fatal(err)
	}
	code := 0
	ed := &remoteEditor{
		caps: editor.Capabilities{ReadTextFile: true, WriteTextFile: true, Terminal: true},
		term: &termEditor{
			wait:   func(context.Context) (editor.ExitStatus, error) { return editor.ExitStatus{Code: &code}, nil },
			output: editor.Output{Text: "built\n", Exit: &editor.ExitStatus{Code: &code}},
		},
		files: map[string]string{
			"/client/project/a.txt":      "one\ntwo\n",
			local + "/adir":              "a file on the editor's machine\n",
			local + "/out/passwd":        "the editor's own\n",
			"/client/extra/b.txt":        "bee\n",
			"/client/project/binary.bin": "a\x00b",
		},
	}
	remote := Options{Root: "/client/project", Dirs: []string{"/client/extra"}, Editor: ed, EditorOnly: true}

	if got := mustOK(t, "read_file", callWith(t, remote, "read_file", map[string]any{"path": "a.txt"})); got != "one\ntwo\n" {
		t.Errorf("read_file = %q", got)
	}
	if got := mustOK(t, "read_file", callWith(t, remote, "read_file", map[string]any{"path": "/client/extra/b.txt"})); got != "bee\n" {
		t.Errorf("read_file in an additional directory = %q", got)
	}
	mustFail(t, "read_file", callWith(t, remote, "read_file", map[string]any{"path": "../other/x"}), "is outside the session directory /client/project")
	mustFail(t, "read_file", callWith(t, remote, "read_file", map[string]any{"path": "/etc/passwd"}), "is outside")
	mustFail(t, "read_file", callWith(t, remote, "read_file", map[string]any{"path": "missing.txt"}),
		`path "missing.txt": the editor could not read it: fs/read_text_file /client/project/missing.txt: {"code":-32002`)
	mustFail(t, "read_file", callWith(t, remote, "read_file", map[string]any{"path": "binary.bin"}), "binary file")

	// Written through the editor; the parent directory is its to make.
	res := callWith(t, remote, "write_file", map[string]any{"path": "sub/new.txt", "content": "fresh\n"})
	if got := mustOK(t, "write_file", res); got != "Wrote sub/new.txt (6 bytes)" {
		t.Errorf("write_file = %q", got)
	}
	if s, _ := ed.file("/client/project/sub/new.txt"); s != "fresh\n" {
		t.Errorf("the editor has %q", s)
	}
	res = callWith(t, remote, "edit_file", map[string]any{"path": "a.txt", "old_text": "two", "new_text": "deux"})
	mustOK(t, "edit_file", res)
	if s, _ := ed.file("/client/project/a.txt"); s != "one\ndeux\n" {
		t.Errorf("after edit_file the editor has %q", s)
	}
	if sh := showOf(t, res); sh == nil || len(sh.Diffs) != 1 || sh.Diffs[0].Path != "/client/project/a.txt" {
		t.Errorf("edit_file show = %+v, want the diff of /client/project/a.txt", sh)
	}

	// This host's own directory and link at the session's paths count for
	// nothing: the editor is asked, by name.
	here := Options{Root: local, Editor: ed, EditorOnly: true}
	if got := mustOK(t, "read_file", callWith(t, here, "read_file", map[string]any{"path": "adir"})); got != "a file on the editor's machine\n" {
		t.Errorf("read_file adir = %q", got)
	}
	if got := mustOK(t, "read_file", callWith(t, here, "read_file", map[string]any{"path": "out/passwd"})); got != "the editor's own\n" {
		t.Errorf("read_file out/passwd = %q", got)
	}

	// run_command runs in the editor's terminal, in the session directory
	// as the editor knows it.
	res = callWith(t, remote, "run_command", map[string]any{"command": "make"})
	if got := mustOK(t, "run_command", res); !strings.Contains(got, "Ran in the editor's terminal term-1.") || !strings.Contains(got, "built") {
		t.Errorf("run_command = %q", got)
	}
	ed.term.mu.Lock()
	cwd := ed.term.req.Cwd
	ed.term.mu.Unlock()
	if cwd != "/client/project" {
		t.Errorf("terminal/create cwd = %q, want /client/project", cwd)
	}

	want := []string{
		"read /client/project/a.txt", "read /client/extra/b.txt", "read /client/project/missing.txt", "read /client/project/binary.bin",
		"read /client/project/sub/new.txt", "write /client/project/sub/new.txt",
		"read /client/project/a.txt", "write /client/project/a.txt",
		"read " + local + "/adir", "read " + local + "/out/passwd",
	}
	if got := ed.callLog(); !slices.Equal(got, want) {
		t.Errorf("editor calls\n%v\nwant\n%v", got, want)
	}
}

// An editor that offers some methods: each call needs exactly its own.
func TestEditorOnly_Partial(t *testing.T) {
	readOnly := &remoteEditor{caps: editor.Capabilities{ReadTextFile: true}, files: map[string]string{"/p/a.txt": "x\n"}}
	opts := Options{Root: "/p", Editor: readOnly, EditorOnly: true}
	mustOK(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": "a.txt"}))
	mustFail(t, "write_file", callWith(t, opts, "write_file", map[string]any{"path": "a.txt", "content": "y"}),
		"the editor does not offer fs/write_text_file,")
	mustFail(t, "edit_file", callWith(t, opts, "edit_file", map[string]any{"path": "a.txt", "old_text": "x", "new_text": "y"}),
		"the editor does not offer fs/write_text_file,")

	writeOnly := &remoteEditor{caps: editor.Capabilities{WriteTextFile: true}, files: map[string]string{}}
	opts.Editor = writeOnly
	// A write needs no read: the text before is not known, so no diff.
	res := callWith(t, opts, "write_file", map[string]any{"path": "b.txt", "content": "y"})
	if got := mustOK(t, "write_file", res); got != "Wrote b.txt (1 bytes)" {
		t.Errorf("write_file = %q", got)
	}
	if sh := showOf(t, res); sh == nil || len(sh.Diffs) != 0 {
		t.Errorf("write_file show = %+v, want no diff", sh)
	}
	mustFail(t, "read_file", callWith(t, opts, "read_file", map[string]any{"path": "b.txt"}), "the editor does not offer fs/read_text_file,")
	if got := writeOnly.callLog(); !slices.Equal(got, []string{"write /p/b.txt"}) {
		t.Errorf("editor calls %v", got)
	}
}
