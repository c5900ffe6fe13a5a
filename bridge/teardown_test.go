package bridge

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestManager_CloseCancelsCallsInFlight checks that closing the Manager
// cancels a tool call in flight whatever its caller's context (a remote
// gateway's tools.invoke is not cancelled with the turn): the server sees
// the cancellation and Close does not wait for the call to end on its own.
func TestManager_CloseCancelsCallsInFlight(t *testing.T) {
	entered, cancelled := make(chan struct{}), make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "busy", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(entered)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	m := memManager(t, nil, map[string]*mcp.Server{"busy": srv}, ServerSpec{Name: "busy", Transport: TransportStdio})
	callErr := make(chan error, 1)
	go func() {
		_, err := toolByName(t, m, "mcp__busy__wait").Execute(context.Background(), "c", nil, nil)
		callErr <- err
	}()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the call never reached the server")
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = m.Close(context.Background())
	}()
	for name, ch := range map[string]chan struct{}{"the server saw the call cancelled": cancelled, "Close returned": closed} {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("after Close, never: %s", name)
		}
	}
	if err := <-callErr; err == nil {
		t.Error("the call in flight succeeded after Close")
	}
}
