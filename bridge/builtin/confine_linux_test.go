package builtin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
)

// confinedCall runs run_command locally in a session of mode m whose cwd
// is dir and private temp directory tmp, and returns its text and isError.
func confinedCall(t *testing.T, c *bridge.Confine, dir, command string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connectOpts(t, ctx, Options{Root: dir, Confine: c}, nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": command}})
	if err != nil {
		t.Fatalf("run_command: %v", err)
	}
	return resultText(res), res.IsError
}

func TestRunCommand_LocalConfinedByMode(t *testing.T) {
	if confine.Supported().ABI < 1 {
		t.Skip("no Landlock")
	}
	for _, m := range confine.Modes {
		t.Run(string(m), func(t *testing.T) {
			dir, tmp, outside := t.TempDir(), t.TempDir(), t.TempDir()
			c := &bridge.Confine{Mode: func() confine.Mode { return m }, Workspace: confine.Workspace{Cwd: dir, Temp: tmp}}
			inside, _ := confinedCall(t, c, dir, `echo x > in.txt && echo wrote`)
			out, _ := confinedCall(t, c, dir, `echo x > "`+outside+`/out.txt" && echo wrote`)
			tmpdir, _ := confinedCall(t, c, dir, `echo "$TMPDIR"; echo x > "$TMPDIR/t" && echo wrote`)
			_, inErr := os.Stat(filepath.Join(dir, "in.txt"))
			_, outErr := os.Stat(filepath.Join(outside, "out.txt"))
			switch m {
			case confine.ReadOnly:
				if inErr == nil || !strings.Contains(inside, "read-only mode") || !strings.Contains(inside, "workspace-write or full-access") {
					t.Errorf("write inside: %q; want refused, naming the mode", inside)
				}
			case confine.WorkspaceWrite:
				if inErr != nil || !strings.Contains(inside, "wrote") {
					t.Errorf("write inside: %q, %v", inside, inErr)
				}
				if !strings.Contains(tmpdir, tmp+"\n") || !strings.Contains(tmpdir, "wrote") {
					t.Errorf("TMPDIR: %q; want %s, writable", tmpdir, tmp)
				}
			case confine.FullAccess:
				if inErr != nil || outErr != nil {
					t.Errorf("full access: inside %v, outside %v: %q", inErr, outErr, out)
				}
			}
			if m != confine.FullAccess {
				if !errors.Is(outErr, os.ErrNotExist) || !strings.Contains(out, "Permission denied") || !strings.Contains(out, string(m)+" mode") {
					t.Errorf("write outside: %q, %v; want refused with a note naming %s", out, outErr, m)
				}
			}
		})
	}
}

// TestRunCommand_TerminalConfined checks that an editor terminal on the
// agent's machine runs the command through the launcher, and one of a
// gateway's editor (EditorOnly) as it is.
func TestRunCommand_TerminalConfined(t *testing.T) {
	if confine.Supported().ABI < 1 {
		t.Skip("no Landlock")
	}
	code := 0
	for _, editorOnly := range []bool{false, true} {
		ed := &termEditor{
			wait:   func(context.Context) (editor.ExitStatus, error) { return editor.ExitStatus{Code: &code}, nil },
			output: editor.Output{Text: "", Exit: &editor.ExitStatus{Code: &code}},
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		dir := t.TempDir()
		c := &bridge.Confine{Mode: func() confine.Mode { return confine.WorkspaceWrite }, Workspace: confine.Workspace{Cwd: dir, Temp: dir}}
		cs := connectOpts(t, ctx, Options{Root: dir, Editor: ed, EditorOnly: editorOnly, Confine: c}, nil)
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "make"}}); err != nil {
			t.Fatal(err)
		}
		cancel()
		ed.mu.Lock()
		r := ed.req
		ed.mu.Unlock()
		self, _ := os.Executable()
		wrapped := r.Command == self && slices.Equal(r.Args, []string{confine.Subcommand, Shell, Shell, "-c", "make"}) &&
			slices.ContainsFunc(r.Env, func(kv string) bool { return strings.HasPrefix(kv, confine.RulesEnv+"=") })
		if wrapped == editorOnly {
			t.Errorf("EditorOnly %v: terminal/create %+v", editorOnly, r)
		}
	}
}

// TestRunCommand_RequireWithoutLandlock simulates a kernel without
// Landlock: sandbox.require refuses to run the command, naming why; without
// it the command runs unconfined.
func TestRunCommand_RequireWithoutLandlock(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	none := confine.Support{OS: "linux"}
	c := &bridge.Confine{Mode: func() confine.Mode { return confine.WorkspaceWrite }, Workspace: confine.Workspace{Cwd: dir}, Require: true, Support: &none}
	got, isErr := confinedCall(t, c, dir, `echo x > "`+outside+`/f"`)
	if !isErr || !strings.Contains(got, "sandbox.require") || !strings.Contains(got, "no Landlock") {
		t.Errorf("required without Landlock: %q (isError %v)", got, isErr)
	}
	c.Require = false
	if got, isErr := confinedCall(t, c, dir, `echo x > "`+outside+`/f" && echo wrote`); isErr || !strings.Contains(got, "wrote") {
		t.Errorf("not required, without Landlock: %q (isError %v)", got, isErr)
	}
}
