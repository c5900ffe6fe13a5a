// Package bridge is acp-agent's MCP side. A Manager, one per ACP session,
// connects the session's MCP servers in parallel, discovers their tools with
// tools/list, and wraps each MCP tool as a gateway.Tool named
// mcp__<server>__<tool>, whose Execute sends tools/call to the server that
// owns it.
//
//	Manager ──┬── server "fs"     (stdio child, own process group)
//	          ├── server "github" (stdio child)
//	          └── server "web"    (failed: reason kept for /servers)
//
// Every connection goes through the go-sdk (github.com/modelcontextprotocol/go-sdk/mcp);
// the bridge writes no JSON-RPC of its own. The bridge knows nothing of ACP
// sessions or of the model: it takes ServerSpecs and hands out gateway.Tools.
//
// MCP specification: https://modelcontextprotocol.io/specification/2025-11-25
package bridge
