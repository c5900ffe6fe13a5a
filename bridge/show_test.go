package bridge

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// showServer is a server whose tool "change" reports a diff, a location, a
// terminal and a plan in its result's _meta (MetaShow), and the terminal in
// a progress notification first.
func showServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "shows", Version: "1"}, nil)
	old := "a\n"
	show := gateway.Show{
		Diffs:     []gateway.Diff{{Path: "/w/f.txt", OldText: &old, NewText: "b\n"}, {Path: "relative.txt", NewText: "x"}},
		Terminals: []string{"term-1"},
		Locations: []gateway.Location{{Path: "/w/f.txt", Line: 3}, {Path: "rel", Line: 1}},
		Plan: &gateway.Plan{Entries: []gateway.PlanEntry{
			{Content: "read", Status: "completed", Priority: "high"},
			{Content: "bad status", Status: "done", Priority: "high"},
		}},
	}
	srv.AddTool(&mcp.Tool{Name: "change", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1,
			Meta: mcp.Meta{MetaShow: gateway.Show{Terminals: []string{"term-1"}}}})
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "changed"}}}
		res.Meta = mcp.Meta{MetaShow: show}
		return res, nil
	})
	return srv
}

// TestShowFromInProcessOnly: MetaShow of an in-process server becomes the
// result's Show (paths that are not absolute and unknown plan values
// dropped); the same _meta from any other server is ignored.
func TestShowFromInProcessOnly(t *testing.T) {
	old := "a\n"
	want := &gateway.Show{
		Diffs:     []gateway.Diff{{Path: "/w/f.txt", OldText: &old, NewText: "b\n"}},
		Terminals: []string{"term-1"},
		Locations: []gateway.Location{{Path: "/w/f.txt", Line: 3}},
		Plan:      &gateway.Plan{Entries: []gateway.PlanEntry{{Content: "read", Status: "completed", Priority: "high"}}},
	}
	ctx := t.Context()
	m := NewManager(&Options{})
	if err := m.Connect(ctx, []ServerSpec{{Name: "mine", Transport: TransportInProcess, Server: showServer()}}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close(context.Background()) }()
	updates := make(chan gateway.ToolUpdate, 4)
	res, err := toolByName(t, m, "mcp__mine__change").Execute(ctx, "c1", nil, func(u gateway.ToolUpdate) { updates <- u })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Show, want) {
		t.Errorf("in-process Show = %+v, want %+v", res.Show, want)
	}
	// The progress was sent before the result; the bridge may still drop it
	// if it trails the result, so only a progress that came is checked.
	select {
	case u := <-updates:
		if u.Show == nil || !reflect.DeepEqual(u.Show.Terminals, []string{"term-1"}) {
			t.Errorf("progress Show = %+v, want the terminal", u.Show)
		}
	default:
	}

	remote := memManager(t, nil, map[string]*mcp.Server{"other": showServer()}, ServerSpec{Name: "other", Transport: TransportStdio})
	res, err = toolByName(t, remote, "mcp__other__change").Execute(ctx, "c2", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Show != nil {
		t.Errorf("a stdio server's _meta was trusted: Show = %+v", res.Show)
	}
}

func TestShowFromMetaMalformed(t *testing.T) {
	for _, v := range []any{"nope", 42, map[string]any{"diffs": "x"}, map[string]any{}} {
		if sh := showFromMeta(TransportInProcess, mcp.Meta{MetaShow: v}); sh != nil {
			t.Errorf("%v: Show = %+v, want nil", v, sh)
		}
	}
	if sh := showFromMeta(TransportInProcess, mcp.Meta{MetaShow: map[string]any{"plan": map[string]any{"entries": []any{}}}}); sh == nil || sh.Plan == nil || len(sh.Plan.Entries) != 0 {
		t.Errorf("an empty plan (clear it) was lost: %+v", sh)
	}
}
