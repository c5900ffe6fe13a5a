// Package bridge is acp-agent's MCP side: it connects the MCP servers of one
// session and hands their tools out as [gateway.Tool] values.
//
// # Manager
//
// A [Manager], one per session, is made with [NewManager] from [Options]
// (working directory, timeouts, sandbox policies, limits, logger). Its
// [Manager.Connect] takes the session's [ServerSpec] list, connects every
// server in parallel (initialize, then tools/list with all its pages), and
// wraps each MCP tool as a [gateway.Tool] named mcp__<server>__<tool>
// ([BridgedNames]), whose Execute sends tools/call to the server that owns
// it. [Manager.Tools] and [Manager.Servers] may be read at any time;
// [Manager.Close] ends every connection and every process the session
// started.
//
//	Manager ──┬── server "fs"     (stdio child, own process group)
//	          ├── server "github" (stdio child)
//	          └── server "web"    (failed: reason kept for /servers)
//
// A server that fails to connect is kept as [StateFailed] with its reason
// ([ServerStatus]) and the other servers go on; one that drops later is
// [StateLost] and is dialed again, with backoff, by the next call of one of
// its tools. A server's notifications/tools/list_changed refreshes its tools
// and calls [Options.OnToolsChanged].
//
// # Server specs
//
// A [ServerSpec] describes one server: stdio (command, args, env), Streamable
// HTTP or legacy SSE (url, headers), with per-server [Timeouts] and rate
// limit. [ServerSpec.Validate] holds the rules every front end applies (the
// ACP mcpServers entries and the config file's): [ValidateServerName],
// [ValidateHeader], env names and the transport; a broken rule is a
// [*SpecError] naming the server and the field. Front ends decode their own
// JSON shapes and wrap that error with the entry's index or key.
//
// # Transports and the sandbox
//
// Every connection is an [mcp.Client] session of the go-sdk, over a stdio
// transport on the child's pipes, an [mcp.StreamableClientTransport] or an
// [mcp.SSEClientTransport]; the bridge writes no JSON-RPC of its own. Stdio servers run under the
// sandbox's environment and process rules ([environ.Policy],
// [process.Start]); http and sse servers are reached only through the
// [urlpolicy.Policy]. [Options.Admit] may refuse any server but an
// in-process one before anything of it starts (the managed policy of
// allowed and denied servers); [Options.StdioPolicy] may refuse a stdio
// server before its process starts (a gateway's host runs only the
// commands its operator allows: [*StdioRefusedError]). [Options.Dial] replaces the
// built-in transports, for tests (in-memory transports) and for
// transports that live outside the bridge.
//
// # Elicitation
//
// With an [Options.Elicitor], every server is offered MCP elicitation in
// exactly the Elicitor's modes (form, url), and its elicitation/create is
// handed to [Elicitor.Elicit], tied to the server's one tool call in flight
// (if exactly one is) and withdrawn when that call ends. A form whose
// properties look like secrets is refused without asking; URL-mode
// completions reach [Elicitor.Complete]. Without an Elicitor no elicitation
// is offered.
//
// # Sampling
//
// With an [Options.Sampler], every server is offered MCP sampling (no tools,
// no context) and its sampling/createMessage is handed to [Sampler.Sample],
// tied to the server's one tool call in flight like an elicitation. Each
// request takes a token of the server's rate limit, as a tool call does.
// Without a Sampler no sampling is offered and a server that asks anyway
// gets [ErrSamplingUnavailable].
//
// The bridge knows nothing of ACP sessions or of the model: it takes
// ServerSpecs and hands out gateway.Tools.
//
// MCP specification: https://modelcontextprotocol.io/specification/2025-11-25
package bridge
