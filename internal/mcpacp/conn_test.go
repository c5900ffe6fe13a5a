package mcpacp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pair is two Muxes back to back, as the agent's and the client's would be
// on one ACP stream: what one writes, the other gets when it Wants it.
type pair struct {
	a, b   *Router
	ma, mb *Mux
}

func newPair(t *testing.T) *pair {
	t.Helper()
	p := &pair{a: NewRouter(nil), b: NewRouter(nil)}
	to := func(peer **Mux) func([]byte) error {
		return func(frame []byte) error {
			var head struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if err := json.Unmarshal(frame, &head); err != nil {
				return err
			}
			if !(*peer).Wants(head.Method, head.ID) {
				return fmt.Errorf("peer does not want %s", frame)
			}
			go func() { _ = (*peer).Deliver(frame) }() // as a reader goroutine would
			return nil
		}
	}
	p.ma = NewMux(p.a.Handle, []string{MethodMessage}, to(&p.mb), nil)
	p.mb = NewMux(p.b.Handle, []string{MethodMessage}, to(&p.ma), nil)
	p.a.SetConn(p.ma.Conn())
	p.b.SetConn(p.mb.Conn())
	t.Cleanup(func() { p.ma.Close(); p.mb.Close() })
	return p
}

// TestConn_ClientAndServerBothWays runs a go-sdk client on one side and a
// go-sdk server on the other: calls (concurrent), the server's requests
// during a call (roots/list) and its notifications all cross in
// mcp/message; closing the client's Conn ends the server's session.
func TestConn_ClientAndServerBothWays(t *testing.T) {
	p := newPair(t)
	disconnected := make(chan struct{})
	ca, err := p.a.Open(t.Context(), "c1", "hosted", func() { close(disconnected) })
	if err != nil {
		t.Fatal(err)
	}
	cb, err := p.b.Open(t.Context(), "c1", "hosted", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.a.Open(t.Context(), "c1", "again", nil); err == nil || !strings.Contains(err.Error(), `connectionId "c1" is already open`) {
		t.Errorf("second Open of c1: %v", err)
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "hosted", Version: "0.1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "roots", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "asking"})
		}
		//lint:ignore SA1019 roots are what a server asks its client for during a call before 2026-07-28.
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Roots[0].URI}}}, nil
	})
	ss, err := srv.Connect(t.Context(), Transport{Conn: cb}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var progress sync.WaitGroup
	progress.Add(1)
	var once sync.Once
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "0.1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { once.Do(progress.Done) },
	})
	//lint:ignore SA1019 see above.
	client.AddRoots(&mcp.Root{URI: "file:///work"})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// 2025-11-25: a server may still send requests during a call.
	cs, err := client.Connect(ctx, Transport{Conn: ca}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "roots", Arguments: map[string]any{}, Meta: mcp.Meta{"progressToken": "p"}})
			if err != nil {
				errs <- err
				return
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != "file:///work" {
				errs <- fmt.Errorf("roots = %q", got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	progress.Wait()

	// A request for a connection that is not open names it.
	if _, rerr := p.b.Handle(ctx, MethodMessage, json.RawMessage(`{"connectionId":"nope","method":"ping"}`)); rerr == nil || !strings.Contains(rerr.Error(), `no open MCP-over-ACP connection \"nope\"`) {
		t.Errorf("mcp/message to an unknown connection: %v", rerr)
	}

	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-disconnected:
	case <-ctx.Done():
		t.Fatal("onClose (mcp/disconnect) did not run")
	}
	if p.a.Lookup("c1") != nil {
		t.Error("c1 still open on the client side")
	}
	if _, err := ca.Read(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("Read after Close = %v, want io.EOF", err)
	}
	if err := ca.Write(ctx, nil); !errors.Is(err, errClosed) {
		t.Errorf("Write after Close = %v, want errClosed", err)
	}
	// The hosting side closes its end on mcp/disconnect; the server's
	// session ends.
	_ = cb.Close()
	if err := ss.Wait(); err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "closed") {
		t.Errorf("server session end: %v", err)
	}
}

// TestConn_ReadEndsWhenTheACPConnectionEnds: a lost ACP connection is EOF
// to the MCP client (the bridge reports the server lost), and a call in
// flight fails instead of waiting.
func TestConn_ReadEndsWhenTheACPConnectionEnds(t *testing.T) {
	p := newPair(t)
	ca, err := p.a.Open(t.Context(), "c1", "hosted", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	read := make(chan error, 1)
	go func() {
		_, err := ca.Read(ctx)
		read <- err
	}()
	p.ma.Close()
	select {
	case err := <-read:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Read = %v, want io.EOF", err)
		}
	case <-ctx.Done():
		t.Fatal("Read did not return after the ACP connection ended")
	}
	p.a.CloseAll()
	if p.a.Lookup("c1") != nil {
		t.Error("CloseAll left c1 open")
	}
}
