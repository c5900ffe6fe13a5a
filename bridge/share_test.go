package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
)

func TestFairShares(t *testing.T) {
	tests := []struct {
		have  []int
		limit int
		want  []int
	}{
		{[]int{5000, 10}, 100, []int{90, 10}},
		{[]int{10, 5000}, 100, []int{10, 90}},
		{[]int{5000, 5000}, 100, []int{50, 50}},
		{[]int{5000, 0, 5000, 3}, 100, []int{49, 0, 48, 3}},
		{[]int{7, 7, 7}, 2, []int{1, 1, 0}},
		{[]int{7, 7, 7}, 100, []int{7, 7, 7}},
		{[]int{30, 40, 50}, 100, []int{30, 35, 35}},
		{nil, 100, []int{}},
		{[]int{3}, 0, []int{0}},
	}
	for _, tt := range tests {
		got := fairShares(tt.have, tt.limit)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("fairShares(%v, %d) = %v, want %v", tt.have, tt.limit, got, tt.want)
		}
	}
}

// manyToolsServer is a server with n trivial tools named prefix0000, prefix0001, ...
func manyToolsServer(prefix string, n int) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: prefix, Version: "1"}, nil)
	for i := range n {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("%s%04d", prefix, i), InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	return srv
}

// TestManager_HugeServerDoesNotStarveOthers: a server listed first with
// thousands of tools leaves the session's other servers their share.
func TestManager_HugeServerDoesNotStarveOthers(t *testing.T) {
	m := memManager(t, &Options{Limits: quota.Limits{ToolsPerSession: 100}},
		map[string]*mcp.Server{"huge": manyToolsServer("h", 3000), "small": manyToolsServer("s", 10), "mid": manyToolsServer("m", 200)},
		ServerSpec{Name: "huge", Transport: TransportStdio},
		ServerSpec{Name: "small", Transport: TransportStdio},
		ServerSpec{Name: "mid", Transport: TransportStdio})
	if n := len(m.Tools()); n != 100 {
		t.Errorf("%d tools bridged, want the limit, 100", n)
	}
	toolByName(t, m, "mcp__small__s0009")
	toolByName(t, m, "mcp__mid__m0044")
	toolByName(t, m, "mcp__huge__h0044")
	type got struct {
		tools, count int
		examples     []string
	}
	want := map[string]got{
		"huge":  {45, 2955, []string{"h0045", "h0046", "h0047"}},
		"small": {10, 0, nil},
		"mid":   {45, 155, []string{"m0045", "m0046", "m0047"}},
	}
	for _, st := range m.Servers() {
		g := got{st.Tools, st.LeftOutCount, st.LeftOut}
		if !reflect.DeepEqual(g, want[st.Name]) {
			t.Errorf("%s: %+v, want %+v", st.Name, g, want[st.Name])
		}
	}
}
