package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's tools may be deferred behind tool search (Core false); the
// agent's in-process servers' are always offered (Core). A tool's
// _meta["anthropic/maxResultSizeChars"] becomes its own result budget.
func TestBridgedTool_CoreAndResultBudget(t *testing.T) {
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object"}`), Meta: mcp.Meta{MetaMaxResultChars: 500000}}, noop)
	srv.AddTool(&mcp.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"object"}`), Meta: mcp.Meta{MetaMaxResultChars: "lots"}}, noop)
	srv.AddTool(&mcp.Tool{Name: "plain", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	own := mcp.NewServer(&mcp.Implementation{Name: "own", Version: "1"}, nil)
	own.AddTool(&mcp.Tool{Name: "read", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	m := memManager(t, nil, map[string]*mcp.Server{"s": srv},
		ServerSpec{Name: "s", Transport: TransportStdio},
		ServerSpec{Name: "own", Transport: TransportInProcess, Server: own})
	for name, want := range map[string]int{"mcp__s__big": 500000, "mcp__s__bad": 0, "mcp__s__plain": 0} {
		if got := toolByName(t, m, name); got.MaxResultChars != want || got.Core {
			t.Errorf("%s: MaxResultChars %d, Core %v; want %d, false", name, got.MaxResultChars, got.Core, want)
		}
	}
	if !toolByName(t, m, "mcp__own__read").Core {
		t.Error("an in-process server's tool is not Core")
	}
}
