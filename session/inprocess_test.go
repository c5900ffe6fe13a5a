package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/bridge/builtin"
	"github.com/seed02d3eb6b/acp-agent/editor"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// A Go program adds its own in-process MCP servers (here the built-in
// tools, and one of its own) through CoreOptions.InProcess: each session
// gets them, built for its cwd, bridged as mcp__<name>__<tool> before the
// session's own servers.
func ExampleCoreOptions_inProcess() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("buy milk\n"), 0o644)

	clock := func(session.InProcessEnv) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "clock", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "year", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct {
				Year int `json:"year"`
			}, error) {
				return nil, struct {
					Year int `json:"year"`
				}{2026}, nil
			})
		return s
	}
	core := session.NewCore(&session.CoreOptions{
		Gateway: runner.NewLocal(&runner.Options{Permissions: runner.Permissions{Mode: runner.PermissionAllow}}),
		InProcess: []session.InProcessServer{
			{Name: builtin.Name, New: func(env session.InProcessEnv) *mcp.Server {
				return builtin.New(&builtin.Options{Root: env.Cwd, Dirs: env.AdditionalDirectories, Editor: env.Editor})
			}},
			{Name: "clock", New: clock},
		},
	})

	defer core.Shutdown()

	s, err := core.Open(ctx, session.OpenRequest{Cwd: dir})
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer s.End()
	for _, t := range s.Tools() {
		fmt.Println("tool:", t.Name)
	}
	_, err = s.Prompt(ctx, session.PromptRequest{
		Content: []gateway.Content{{Type: gateway.ContentText, Text: `/call mcp__acp__read_file {"path":"notes.txt"}`}},
		Emit: func(ev gateway.Event) {
			if ev.Kind == gateway.EventToolEnd {
				fmt.Printf("result: %q\n", gateway.PromptText(ev.Call.Result.Content))
			}
		},
	})
	if err != nil {
		fmt.Println("prompt:", err)
	}
	// Output:
	// tool: mcp__acp__edit_file
	// tool: mcp__acp__list_directory
	// tool: mcp__acp__read_file
	// tool: mcp__acp__run_command
	// tool: mcp__acp__search_files
	// tool: mcp__acp__update_plan
	// tool: mcp__acp__write_file
	// tool: mcp__clock__year
	// result: "buy milk\n"
}

// A default or session server may not take an in-process server's name.
func TestCore_InProcessNamesAreTaken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mine := func(session.InProcessEnv) *mcp.Server { return mcp.NewServer(&mcp.Implementation{Name: "mine"}, nil) }
	for _, tc := range []struct {
		name     string
		defaults []bridge.ServerSpec
		own      []bridge.ServerSpec
	}{
		{"session server", nil, []bridge.ServerSpec{{Name: "mine", Transport: bridge.TransportStdio, Command: "x"}}},
		{"default server", []bridge.ServerSpec{{Name: "mine", Transport: bridge.TransportStdio, Command: "x"}}, nil},
	} {
		core := session.NewCore(&session.CoreOptions{
			Gateway:        runner.NewLocal(nil),
			DefaultServers: tc.defaults,
			InProcess:      []session.InProcessServer{{Name: "mine", New: mine}},
		})

		_, err := core.Open(ctx, session.OpenRequest{Cwd: t.TempDir(), Servers: tc.own})
		var taken *session.NameTakenError
		if !errors.Is(err, session.ErrInvalid) || !errors.As(err, &taken) || taken.Name != "mine" {
			t.Errorf("%s named like an in-process server: Open = %v, want a *NameTakenError naming it", tc.name, err)
		}
		core.Shutdown()
	}
}

// The built-in tools go through the permission policy like any bridged
// tool: reads are allowed in ask mode (readOnlyHint), edits ask, and the
// config's globs narrow them.
func TestCore_BuiltinPermissions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	core := session.NewCore(&session.CoreOptions{
		Gateway:   runner.NewLocal(nil),
		InProcess: []session.InProcessServer{{Name: builtin.Name, New: builtinServer}},
	})

	defer core.Shutdown()
	s, err := core.Open(ctx, session.OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	decide := func(p runner.Permissions) map[string]runner.Decision {
		got := map[string]runner.Decision{}
		for _, tl := range s.Tools() {
			got[tl.Name] = p.Decide(tl)
		}
		return got
	}
	const allow, ask, deny = runner.DecisionAllow, runner.DecisionAsk, runner.DecisionDeny
	for _, tc := range []struct {
		p    runner.Permissions
		want map[string]runner.Decision
	}{
		{runner.Permissions{}, map[string]runner.Decision{"mcp__acp__read_file": allow, "mcp__acp__list_directory": allow, "mcp__acp__search_files": allow, "mcp__acp__write_file": ask, "mcp__acp__edit_file": ask, "mcp__acp__update_plan": allow, "mcp__acp__run_command": ask}},
		{runner.Permissions{Deny: []string{"mcp__acp__*"}}, map[string]runner.Decision{"mcp__acp__read_file": deny, "mcp__acp__list_directory": deny, "mcp__acp__search_files": deny, "mcp__acp__write_file": deny, "mcp__acp__edit_file": deny, "mcp__acp__update_plan": deny, "mcp__acp__run_command": deny}},
		{runner.Permissions{Allow: []string{"mcp__acp__edit_file"}, Deny: []string{"mcp__acp__write_file"}}, map[string]runner.Decision{"mcp__acp__read_file": allow, "mcp__acp__list_directory": allow, "mcp__acp__search_files": allow, "mcp__acp__write_file": deny, "mcp__acp__edit_file": allow, "mcp__acp__update_plan": allow, "mcp__acp__run_command": ask}},
	} {
		if got := decide(tc.p); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%+v: decisions %v, want %v", tc.p, got, tc.want)
		}
	}
}

// builtinServer builds the built-in server of a session, as the agent does.
func builtinServer(env session.InProcessEnv) *mcp.Server {
	return builtin.New(&builtin.Options{Root: env.Cwd, Dirs: env.AdditionalDirectories, Editor: env.Editor})
}

// nullEditor is an editor.Editor that offers nothing.
type nullEditor struct{ editor.Editor }

func (nullEditor) Capabilities() editor.Capabilities { return editor.Capabilities{} }

// An in-process server is built with the session's ID, cwd, additional
// directories and editor; an additional directory that is not an absolute
// path to a directory is refused, naming it.
func TestCore_InProcessEnv(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got session.InProcessEnv
	var editorFor string
	core := session.NewCore(&session.CoreOptions{
		Gateway: runner.NewLocal(nil),
		InProcess: []session.InProcessServer{{Name: "mine", New: func(env session.InProcessEnv) *mcp.Server {
			got = env
			return mcp.NewServer(&mcp.Implementation{Name: "mine"}, nil)
		}}},
	})

	defer core.Shutdown()
	cwd, extra := t.TempDir(), t.TempDir()
	s, err := core.Open(ctx, session.OpenRequest{Cwd: cwd, AdditionalDirectories: []string{extra},
		FrontEnd: testFrontEnd{editor: func(sid string) editor.Editor { editorFor = sid; return nullEditor{} }}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	if got.SessionID != s.ID() || editorFor != s.ID() || got.Cwd != cwd || len(got.AdditionalDirectories) != 1 || got.AdditionalDirectories[0] != extra || got.Editor == nil {
		t.Errorf("env = %+v (editor built for %q), want session %s, cwd %s, dirs [%s] and the editor", got, editorFor, s.ID(), cwd, extra)
	}

	file := filepath.Join(cwd, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"rel/dir", filepath.Join(cwd, "missing"), file} {
		_, err := core.Open(ctx, session.OpenRequest{Cwd: cwd, AdditionalDirectories: []string{extra, dir}})
		if !errors.Is(err, session.ErrInvalid) || !strings.Contains(err.Error(), "additionalDirectories[1]") || !strings.Contains(err.Error(), dir) {
			t.Errorf("additional directory %q: err = %v, want ErrInvalid naming additionalDirectories[1] and the path", dir, err)
		}
	}
}
