package bridge_test

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
	"github.com/seed02d3eb6b/acp-agent/bridge/builtin"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// The built-in server connects in process (TransportInProcess, no Dial) and
// its tools are bridged like any server's: mcp__acp__<tool>, annotations
// kept, tool errors as isError results.
func TestInProcessBuiltin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi there\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := bridge.NewManager(&bridge.Options{Cwd: dir})
	spec := bridge.ServerSpec{Name: builtin.Name, Transport: bridge.TransportInProcess, Server: builtin.New(&builtin.Options{Root: dir})}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := m.Connect(ctx, []bridge.ServerSpec{spec}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close(ctx) }()
	st := m.Servers()
	if len(st) != 1 || st[0].State != bridge.StateConnected || st[0].Transport != bridge.TransportInProcess {
		t.Fatalf("servers = %+v", st)
	}
	var names []string
	tools := map[string]*gateway.Tool{}
	for _, tl := range m.Tools() {
		names = append(names, tl.Name)
		tools[tl.Name] = tl
	}
	want := []string{"mcp__acp__edit_file", "mcp__acp__list_directory", "mcp__acp__read_file", "mcp__acp__run_command", "mcp__acp__search_files", "mcp__acp__update_plan", "mcp__acp__write_file"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	if !tools["mcp__acp__read_file"].Annotations.ReadOnlyHint || tools["mcp__acp__edit_file"].Annotations.ReadOnlyHint {
		t.Error("readOnlyHint not carried: read_file must be read-only, edit_file not")
	}
	// The ACP tool kinds the built-ins declare in _meta (bridge.MetaToolKind).
	for name, kind := range map[string]gateway.ToolKind{
		"mcp__acp__read_file": gateway.ToolKindRead, "mcp__acp__list_directory": gateway.ToolKindRead,
		"mcp__acp__write_file": gateway.ToolKindEdit, "mcp__acp__edit_file": gateway.ToolKindEdit,
		"mcp__acp__search_files": gateway.ToolKindSearch, "mcp__acp__run_command": gateway.ToolKindExecute,
		"mcp__acp__update_plan": gateway.ToolKindThink,
	} {
		if got := tools[name].Kind; got != kind {
			t.Errorf("%s: kind %q, want %q", name, got, kind)
		}
	}
	res, err := tools["mcp__acp__read_file"].Execute(ctx, "c1", map[string]any{"path": "hello.txt"}, nil)
	if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].Text != "hi there\n" {
		t.Fatalf("read_file = %+v, %v", res, err)
	}
	res, err = tools["mcp__acp__read_file"].Execute(ctx, "c2", map[string]any{"path": "../x"}, nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "outside the session directory") {
		t.Fatalf("read_file ../x = %+v, %v; want an isError result", res, err)
	}
}

// A Go program's own in-process server connects the same way and is
// connected again (a new session of the same *mcp.Server) per Manager.
func TestInProcessCustomServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "mine", Version: "1"}, nil)
	type in struct {
		N int `json:"n"`
	}
	type out struct {
		Double int `json:"double"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "double"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
		return nil, out{Double: 2 * a.N}, nil
	})
	for i := range 2 {
		m := bridge.NewManager(nil)
		if err := m.Connect(ctx, []bridge.ServerSpec{{Name: "mine", Transport: bridge.TransportInProcess, Server: srv}}); err != nil {
			t.Fatal(err)
		}
		tl := m.Tools()
		if len(tl) != 1 || tl[0].Name != "mcp__mine__double" {
			t.Fatalf("manager %d: tools = %v", i, tl)
		}
		res, err := tl[0].Execute(ctx, "c", map[string]any{"n": 21}, nil)
		if err != nil || res.IsError || !strings.Contains(res.Content[0].Text, `"double":42`) {
			t.Fatalf("manager %d: double = %+v, %v", i, res, err)
		}
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReservedServerName(t *testing.T) {
	for _, spec := range []bridge.ServerSpec{
		{Name: "acp", Transport: bridge.TransportStdio, Command: "x"},
		{Name: "acp", Transport: bridge.TransportHTTP, URL: "http://127.0.0.1/"},
		{Name: "acp", Transport: bridge.TransportInProcess}, // no Server: a client's entry
	} {
		err := spec.Validate()
		var se *bridge.SpecError
		if !errors.As(err, &se) || se.Field != "name" || !strings.Contains(err.Error(), `"acp" is reserved`) {
			t.Errorf("%s spec named acp: Validate = %v, want the reserved-name rule", spec.Transport, err)
		}
	}
	err := bridge.ServerSpec{Name: "x", Transport: bridge.TransportInProcess}.Validate()
	if err == nil || !strings.Contains(err.Error(), "*mcp.Server") {
		t.Errorf("inprocess without Server: Validate = %v", err)
	}
}

// A server declares a tool's ACP kind in the tool's _meta; an unknown kind
// is ignored (the runner then falls back to read or other).
func TestToolKindFromMeta(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "k", Version: "1"}, nil)
	for name, kind := range map[string]string{"run": "execute", "odd": "teleport", "plain": ""} {
		tool := &mcp.Tool{Name: name}
		if kind != "" {
			tool.Meta = mcp.Meta{bridge.MetaToolKind: kind}
		}
		mcp.AddTool(srv, tool, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	}
	m := bridge.NewManager(&bridge.Options{Cwd: t.TempDir()})
	if err := m.Connect(ctx, []bridge.ServerSpec{{Name: "k", Transport: bridge.TransportInProcess, Server: srv}}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close(ctx) }()
	got := map[string]gateway.ToolKind{}
	for _, tl := range m.Tools() {
		got[tl.Name] = tl.Kind
	}
	want := map[string]gateway.ToolKind{"mcp__k__run": gateway.ToolKindExecute, "mcp__k__odd": "", "mcp__k__plain": ""}
	for name, k := range want {
		if got[name] != k {
			t.Errorf("%s: kind %q, want %q", name, got[name], k)
		}
	}
}
