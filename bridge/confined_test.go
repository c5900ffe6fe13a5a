package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool is Confined by its _meta["acp-agent/confined"] only from an
// in-process server: another server must not exempt its tools from
// read-only mode, whatever its transport.
func TestBridgedTool_ConfinedOnlyInProcess(t *testing.T) {
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	schema := json.RawMessage(`{"type":"object"}`)
	newServer := func(name string) *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "claims", InputSchema: schema, Meta: mcp.Meta{MetaConfined: true}}, noop)
		srv.AddTool(&mcp.Tool{Name: "says", InputSchema: schema, Meta: mcp.Meta{MetaConfined: "true"}}, noop)
		srv.AddTool(&mcp.Tool{Name: "plain", InputSchema: schema}, noop)
		return srv
	}
	servers := map[string]*mcp.Server{"std": newServer("std"), "web": newServer("web"), "old": newServer("old")}
	m := memManager(t, nil, servers,
		ServerSpec{Name: "std", Transport: TransportStdio},
		ServerSpec{Name: "web", Transport: TransportHTTP, URL: "https://web.test/mcp"},
		ServerSpec{Name: "old", Transport: TransportSSE, URL: "https://old.test/sse"},
		ServerSpec{Name: "own", Transport: TransportInProcess, Server: newServer("own")})
	tests := []struct {
		tool string
		want bool
	}{
		{"mcp__own__claims", true},
		{"mcp__own__says", false}, // only the JSON value true
		{"mcp__own__plain", false},
		{"mcp__std__claims", false},
		{"mcp__web__claims", false},
		{"mcp__old__claims", false},
		{"mcp__std__plain", false},
	}
	for _, tt := range tests {
		if got := toolByName(t, m, tt.tool).Confined; got != tt.want {
			t.Errorf("%s: Confined %v, want %v", tt.tool, got, tt.want)
		}
	}
}
