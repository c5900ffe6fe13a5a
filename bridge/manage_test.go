package bridge

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

func toolNames(m *Manager) []string {
	var names []string
	for _, t := range m.Tools() {
		names = append(names, t.Name)
	}
	return names
}

// A server added after Connect joins with its tools; disabled, its tools
// and prompts leave while it stays connected; enabled, they are back under
// the same names; reconnected, it is a new MCP session; removed, it and its
// tools are gone. OnToolsChanged hears each change.
func TestManager_AddDisableEnableReconnectRemove(t *testing.T) {
	var changes atomic.Int32
	var connects atomic.Int32
	extra := mcp.NewServer(&mcp.Implementation{Name: "extra", Version: "1"}, nil)
	extra.AddTool(&mcp.Tool{Name: "hi", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
	})
	extra.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	opts := &Options{OnToolsChanged: func([]*gateway.Tool) { changes.Add(1) }}
	servers := map[string]*mcp.Server{"mem": testServer(t), "extra": extra}
	m := memManager(t, opts, servers, ServerSpec{Name: "mem", Transport: TransportStdio, Command: "unused"})
	before := len(m.Tools())

	spec := ServerSpec{Name: "extra", Transport: TransportStdio, Command: "unused"}
	// Count the connects through the test's Dial.
	dial := m.opts.Dial
	m.opts.Dial = func(ctx context.Context, s ServerSpec) (mcp.Transport, error) {
		if s.Name == "extra" {
			connects.Add(1)
		}
		return dial(ctx, s)
	}
	st, err := m.Add(t.Context(), spec)
	if err != nil || st.State != StateConnected || st.Tools != 1 {
		t.Fatalf("Add = %+v, %v; want connected with 1 tool", st, err)
	}
	if !slices.Contains(toolNames(m), "mcp__extra__hi") || len(m.Tools()) != before+1 {
		t.Fatalf("tools after Add: %v", toolNames(m))
	}
	if got := changes.Load(); got == 0 {
		t.Error("OnToolsChanged not called after Add")
	}
	if _, err := m.Add(t.Context(), spec); !errors.Is(err, ErrServerExists) {
		t.Errorf("Add of a name in use = %v, want ErrServerExists", err)
	}
	if res, err := toolByName(t, m, "mcp__extra__hi").Execute(t.Context(), "c", nil, nil); err != nil || res.Content[0].Text != "hello" {
		t.Errorf("calling the added tool = %+v, %v", res, err)
	}

	if err := m.SetEnabled("extra", false); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(toolNames(m), "mcp__extra__hi") || slices.ContainsFunc(m.Prompts(), func(p PromptCommand) bool { return p.Server == "extra" }) {
		t.Errorf("a disabled server's tools or prompts are still offered: %v", toolNames(m))
	}
	i := slices.IndexFunc(m.Servers(), func(s ServerStatus) bool { return s.Name == "extra" })
	if st := m.Servers()[i]; !st.Disabled || st.State != StateConnected || st.Tools != 0 {
		t.Errorf("disabled server's status = %+v, want connected, disabled, 0 tools", st)
	}
	if err := m.SetEnabled("extra", true); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(toolNames(m), "mcp__extra__hi") {
		t.Errorf("tools after enabling: %v", toolNames(m))
	}

	st, err = m.Reconnect(t.Context(), "extra")
	if err != nil || st.State != StateConnected || connects.Load() != 2 {
		t.Fatalf("Reconnect = %+v, %v after %d connects; want connected, 2 connects", st, err, connects.Load())
	}
	if res, err := toolByName(t, m, "mcp__extra__hi").Execute(t.Context(), "c", nil, nil); err != nil || res.Content[0].Text != "hello" {
		t.Errorf("calling the tool after Reconnect = %+v, %v", res, err)
	}

	if err := m.Remove("extra"); err != nil {
		t.Fatal(err)
	}
	if len(m.Servers()) != 1 || len(m.Tools()) != before || slices.Contains(toolNames(m), "mcp__extra__hi") {
		t.Errorf("after Remove: %d servers, tools %v", len(m.Servers()), toolNames(m))
	}
	for _, err := range []error{m.Remove("extra"), m.SetEnabled("extra", true)} {
		if !errors.Is(err, ErrUnknownServer) {
			t.Errorf("a removed server: %v, want ErrUnknownServer", err)
		}
	}
	if _, err := m.Reconnect(t.Context(), "extra"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("Reconnect of a removed server: %v, want ErrUnknownServer", err)
	}
}

// Add before Connect or after Close fails, and starts nothing.
func TestManager_AddOutsideTheSession(t *testing.T) {
	m := NewManager(nil)
	if _, err := m.Add(t.Context(), ServerSpec{Name: "x", Transport: TransportStdio, Command: "false"}); err == nil {
		t.Error("Add before Connect succeeded")
	}
	if err := m.Connect(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	_ = m.Close(t.Context())
	if _, err := m.Add(t.Context(), ServerSpec{Name: "x", Transport: TransportStdio, Command: "false"}); err == nil {
		t.Error("Add after Close succeeded")
	}
	if len(m.Servers()) != 0 {
		t.Errorf("servers: %+v", m.Servers())
	}
}
