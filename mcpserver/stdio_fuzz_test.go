package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/mcpserver"
)

// FuzzStdioTransport feeds one input (seeded with the malformed lines of
// testutil.MalformedJSONRPC), then a ping, to a server behind the stdio
// transport (its line limit 1 MiB, so the seed of 1 MiB is over it): the
// ping is answered, and everything the server writes is a JSON-RPC
// message. The input may hold several lines.
func FuzzStdioTransport(f *testing.F) {
	for _, m := range testutil.MalformedJSONRPC() {
		f.Add([]byte(m.Line))
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "fuzz", Version: "1"}, nil)
	f.Fuzz(func(t *testing.T, input []byte) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		ss, err := srv.Connect(ctx, mcpserver.NewStdioTransport(inR, outW, 1<<20-1, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer inW.Close()
		ended := make(chan struct{})
		go func() { _ = ss.Wait(); _ = outW.Close(); close(ended) }()
		out := testutil.ScanLines(outR)
		written := make(chan error, 1)
		go func() {
			msg := append(append([]byte(nil), input...), '\n') // the fuzzer's input is not to be changed
			_, err := inW.Write(append(msg, `{"jsonrpc":"2.0","id":"fuzz-ping","method":"ping"}`+"\n"...))
			written <- err
		}()
		// Read until the server's output ends: once the ping is answered
		// stdin closes, and the replies still under way come first.
		pinged := false
		for out != nil {
			select {
			case line, ok := <-out:
				if !ok {
					out = nil
					break
				}
				var m struct {
					JSONRPC string `json:"jsonrpc"`
					ID      any    `json:"id"`
					Result  any    `json:"result"`
				}
				if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
					t.Errorf("the server wrote %.200q, no JSON-RPC message", line)
				}
				if m.ID == "fuzz-ping" && m.Result != nil && !pinged {
					pinged = true
					if err := <-written; err != nil {
						t.Fatal(err)
					}
					_ = inW.Close()
				}
			case <-ctx.Done():
				t.Fatalf("the server did not answer the ping, or end at EOF, within a minute (ping answered: %v)", pinged)
			}
		}
		<-ended
		if !pinged {
			t.Errorf("the server ended without answering the ping")
		}
	})
}
