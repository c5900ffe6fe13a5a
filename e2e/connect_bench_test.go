package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// BenchmarkSessionConnect measures what one MCP server adds to session/new:
// bridge.Manager.Connect (start, the handshake at bridge.ProtocolVersion,
// tools/list) and Manager.Close, against TypeScript servers
// (server-everything, stdio and Streamable HTTP) and the Go fixture (go-sdk,
// stdio and Streamable HTTP). Servers that do not speak 2026-07-28 answer its
// server/discover probe with an error before the same initialize, so the
// TypeScript rows show what that probe costs.
func BenchmarkSessionConnect(b *testing.B) {
	cases := []struct {
		name string
		spec func(b *testing.B) bridge.ServerSpec
	}{
		{"everything-stdio", func(*testing.B) bridge.ServerSpec {
			return bridge.ServerSpec{Transport: bridge.TransportStdio, Command: "node", Args: []string{everything, "stdio"}}
		}},
		{"everything-http", func(b *testing.B) bridge.ServerSpec {
			port := startNodeServer(b, nil, everything, "streamableHttp")
			return bridge.ServerSpec{Transport: bridge.TransportHTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}
		}},
		{"fixture-stdio", func(*testing.B) bridge.ServerSpec {
			return bridge.ServerSpec{Transport: bridge.TransportStdio, Command: fixtureBin}
		}},
		{"fixture-http", func(b *testing.B) bridge.ServerSpec {
			return bridge.ServerSpec{Transport: bridge.TransportHTTP, URL: startFixtureHTTP(b) + "/mcp"}
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			spec := c.spec(b)
			spec.Name = "bench"
			cwd := b.TempDir()
			b.ResetTimer()
			for b.Loop() {
				benchConnectOnce(b, cwd, spec)
			}
		})
	}
}

// benchConnectOnce connects one session's Manager to spec and closes it.
func benchConnectOnce(b *testing.B, cwd string, spec bridge.ServerSpec) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := bridge.NewManager(&bridge.Options{Cwd: cwd})
	defer func() {
		if err := m.Close(ctx); err != nil {
			b.Errorf("close: %v", err)
		}
	}()
	if err := m.Connect(ctx, []bridge.ServerSpec{spec}); err != nil {
		b.Fatal(err)
	}
	if st := m.Servers()[0]; st.State != bridge.StateConnected {
		b.Fatalf("%s: %s: %v", spec.Name, st.State, st.Err)
	}
}
