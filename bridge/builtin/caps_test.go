package builtin

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// The built-in tools never change once the server is made, so the server
// advertises tools without listChanged: a client that handles list changes
// (the bridge does) opens no subscriptions/listen stream to it, which would
// hold a goroutine on each side for the whole session. The tools are all
// listed.
func TestNew_ToolsDoNotAdvertiseListChanged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := New(&Options{Root: t.TempDir()}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: bridge.ProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	caps := cs.InitializeResult().Capabilities
	if caps.Tools == nil || caps.Tools.ListChanged {
		t.Errorf("tools capability = %+v, want tools without listChanged", caps.Tools)
	}
	n := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n < 7 {
		t.Errorf("%d tools listed, want the 7 built-in tools", n)
	}
}
