package mcpacp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCaller_GoSDKClient runs a go-sdk client over a Caller whose calls a
// scripted provider answers: server/discover opens it (no initialize), a
// call's notifications are read before its result, an inner MCP error is
// the client's error, the client's cancel ends the call's context, its
// other notifications go nowhere, and Close ends the calls under way.
func TestCaller_GoSDKClient(t *testing.T) {
	var mu sync.Mutex
	var methods []string
	cancelled := make(chan string, 4)
	started := make(chan string, 4)
	call := func(ctx context.Context, method string, params json.RawMessage, notify func(string, json.RawMessage)) Outcome {
		mu.Lock()
		methods = append(methods, method)
		mu.Unlock()
		switch method {
		case "server/discover":
			return Outcome{Result: json.RawMessage(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"resultType":"complete"}`)}
		case "subscriptions/listen":
			notify("notifications/subscriptions/acknowledged", json.RawMessage(`{"notifications":{"toolsListChanged":true}}`))
			started <- method
			<-ctx.Done()
			cancelled <- method
			return Outcome{Err: ctx.Err()}
		case "tools/call":
			var p struct {
				Name string `json:"name"`
				Meta struct {
					Token any `json:"progressToken"`
				} `json:"_meta"`
			}
			_ = json.Unmarshal(params, &p)
			switch p.Name {
			case "fails":
				return Outcome{Error: &jsonrpc.Error{Code: -32602, Message: "Unknown tool: fails"}}
			case "hangs":
				started <- method
				<-ctx.Done()
				cancelled <- method
				return Outcome{Err: ctx.Err()}
			}
			tok, _ := json.Marshal(p.Meta.Token)
			notify("notifications/progress", json.RawMessage(`{"progressToken":`+string(tok)+`,"progress":1,"message":"working"}`))
			return Outcome{Result: json.RawMessage(`{"content":[{"type":"text","text":"ok"}],"resultType":"complete"}`)}
		}
		return Outcome{Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method}}
	}
	c := NewCaller(t.Context(), "hosted", call, nil)
	progress := make(chan string, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress <- req.Params.Message },
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, callerTransport{c}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	<-started // subscriptions/listen is under way

	params := &mcp.CallToolParams{Name: "work", Arguments: map[string]any{}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "ok" {
		t.Fatalf("tools/call = %v, %v", res, err)
	}
	select {
	case msg := <-progress:
		if msg != "working" {
			t.Errorf("progress = %q", msg)
		}
	case <-ctx.Done():
		t.Fatal("progress never reached the client")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fails", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "Unknown tool: fails") {
		t.Errorf("inner error: %v", err)
	}
	hctx, hcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(hctx, &mcp.CallToolParams{Name: "hangs", Arguments: map[string]any{}})
		done <- err
	}()
	<-started
	hcancel()
	if got := <-cancelled; got != "tools/call" {
		t.Errorf("cancelled %q, want the hanging tools/call", got)
	}
	<-done

	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if got := <-cancelled; got != "subscriptions/listen" {
		t.Errorf("on close cancelled %q, want subscriptions/listen", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if methods[0] != "server/discover" || strings.Contains(strings.Join(methods, " "), "initialize") {
		t.Errorf("methods = %v, want server/discover first and no initialize", methods)
	}
}

// TestCaller_InitializeRefused: after a failed server/discover, go-sdk's
// fallback initialize is refused with why discover failed, naming the
// server, and never reaches the provider.
func TestCaller_InitializeRefused(t *testing.T) {
	var mu sync.Mutex
	var methods []string
	c := NewCaller(t.Context(), "ghost", func(_ context.Context, method string, _ json.RawMessage, _ func(string, json.RawMessage)) Outcome {
		mu.Lock()
		methods = append(methods, method)
		mu.Unlock()
		return Outcome{Err: errString(`the client has no MCP server with serverId "x"`)}
	}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, callerTransport{c}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err == nil || !strings.Contains(err.Error(), `MCP-over-ACP server "ghost": server/discover failed: the client has no MCP server with serverId "x"`) {
		t.Errorf("connect err = %v", err)
	}
	_ = c.Close()
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(methods, " ") != "server/discover" {
		t.Errorf("provider saw %v, want server/discover only", methods)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// callerTransport hands a go-sdk client its Caller.
type callerTransport struct{ c *Caller }

func (t callerTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// TestCaller_EOFWhenConnectionEnds: the ACP connection ending is the end
// of the MCP connection, so the bridge reports the server lost.
func TestCaller_EOFWhenConnectionEnds(t *testing.T) {
	done := make(chan struct{})
	c := NewCaller(t.Context(), "hosted", func(context.Context, string, json.RawMessage, func(string, json.RawMessage)) Outcome {
		return Outcome{Result: json.RawMessage(`{}`)}
	}, &CallerOptions{Done: done})
	defer c.Close()
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(t.Context())
		read <- err
	}()
	close(done)
	select {
	case err := <-read:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Read after the connection ended = %v, want io.EOF", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Read did not return when the connection ended")
	}
}
