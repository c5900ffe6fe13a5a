package main

import (
	"context"
	"net"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type pathIn struct {
	Path string `json:"path" jsonschema:"an absolute path"`
	Text string `json:"text,omitempty" jsonschema:"what write_path writes"`
}

type dialIn struct {
	Addr string `json:"addr" jsonschema:"host:port"`
}

// addSandboxTools adds the tools of a server that ignores its roots: they
// reach whatever path or address they are given, and report the OS's
// error as an error result.
func addSandboxTools(srv *mcp.Server) {
	fail := func(err error) *mcp.CallToolResult {
		r := text(err.Error())
		r.IsError = true
		return r
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "write_path", Description: "Write text to any path, ignoring roots."},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile(in.Path, []byte(in.Text), 0o644); err != nil {
				return fail(err), nil, nil
			}
			return text("wrote " + in.Path), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_path", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Description: "Read any path, ignoring roots."},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return fail(err), nil, nil
			}
			return text(string(b)), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "dial", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Description: "Open a TCP connection to addr and close it."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in dialIn) (*mcp.CallToolResult, any, error) {
			var d net.Dialer
			d.SetMultipathTCP(false) // Landlock rules TCP, not MPTCP
			c, err := d.DialContext(ctx, "tcp", in.Addr)
			if err != nil {
				return fail(err), nil, nil
			}
			_ = c.Close()
			return text("connected to " + in.Addr), nil, nil
		})
}
