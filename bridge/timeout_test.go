package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// silentTransport is a server that accepts the connection and never answers.
type silentTransport struct{}

func (silentTransport) Connect(context.Context) (mcp.Connection, error) {
	return &silentConn{closed: make(chan struct{})}, nil
}

type silentConn struct {
	once   sync.Once
	closed chan struct{}
}

func (c *silentConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-c.closed:
		return nil, mcp.ErrConnectionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (c *silentConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (c *silentConn) Close() error                                 { c.once.Do(func() { close(c.closed) }); return nil }
func (c *silentConn) SessionID() string                            { return "" }

// stallingServer is a server whose handler for method blocks until the
// request is cancelled, or, for tools/call with trickle set, answers a huge
// result only after ten slow steps.
func stallingServer(method string, trickle bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "stall", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !trickle {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		}
		var b strings.Builder
		for range 10 { // 10 × 20 s: longer than the call timeout
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(20 * time.Second):
			}
			b.WriteString(strings.Repeat("x", 1<<20))
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, m string, req mcp.Request) (mcp.Result, error) {
			if m == method {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return next(ctx, m, req)
		}
	})
	return srv
}

func TestTimeouts(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		dial    func(ctx context.Context) (mcp.Transport, error)
		call    bool          // the timeout is hit by a tools/call, not by Connect
		want    string        // in the error
		elapsed time.Duration // virtual time the timeout costs
	}{
		{
			name: "initialize never answered (default 30s)",
			dial: func(context.Context) (mcp.Transport, error) { return silentTransport{}, nil },
			want: "initialize took longer than 30s", elapsed: 30 * time.Second,
		},
		{
			name: "tools/list never answered",
			opts: Options{Timeouts: Timeouts{ToolsList: 7 * time.Second}},
			dial: memDial(stallingServer("tools/list", false)),
			want: "tools/list took longer than 7s", elapsed: 7 * time.Second,
		},
		{
			name: "tools/call never answered (default 120s)",
			dial: memDial(stallingServer("tools/call", false)),
			call: true, want: "tools/call took longer than 2m0s", elapsed: 120 * time.Second,
		},
		{
			name: "huge result trickled slower than the call timeout",
			opts: Options{Timeouts: Timeouts{ToolCall: 90 * time.Second}},
			dial: memDial(stallingServer("", true)),
			call: true, want: "tools/call took longer than 1m30s", elapsed: 90 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := tt.opts
				opts.Dial = func(ctx context.Context, _ ServerSpec) (mcp.Transport, error) { return tt.dial(ctx) }
				m := NewManager(&opts)
				defer m.Close(context.Background())
				start := time.Now()
				_ = m.Connect(context.Background(), []ServerSpec{{Name: "s", Transport: TransportStdio}})
				var err error
				if tt.call {
					if st := m.Servers()[0]; st.State != StateConnected {
						t.Fatalf("connect: %v", st.Err)
					}
					start = time.Now()
					_, err = m.Tools()[0].Execute(context.Background(), "c", nil, nil)
				} else {
					err = m.Servers()[0].Err
				}
				if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("err = %v, want a timeout containing %q", err, tt.want)
				}
				if d := time.Since(start); d != tt.elapsed {
					t.Errorf("the timeout cost %v of (virtual) time, want exactly %v", d, tt.elapsed)
				}
			})
		})
	}
}

// memDial connects a fresh in-memory session of srv.
func memDial(srv *mcp.Server) func(ctx context.Context) (mcp.Transport, error) {
	return func(ctx context.Context) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}
