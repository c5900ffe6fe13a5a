// Package connect is acp-agent connect: an ACP proxy that an editor starts
// over stdio (as Zed's agent_servers do) and that speaks to an acp-agent
// gateway over the network (the ACP remote transport, package acp/remote).
//
//	editor ──ACP/stdio──▶ Proxy ──Link (Streamable HTTP or WebSocket)──▶ gateway /acp
//	                       │  ▲
//	         stdio servers │  │ MCP-over-ACP (mcp/connect, mcp/message, mcp/disconnect)
//	       started here ◀──┘  └── as {"type":"acp","name":…,"id":…} entries
//
// # Quick start
//
//	p := connect.New(func(ctx context.Context) (connect.Link, error) {
//		return dialTheGateway(ctx) // acp/remote's client
//	}, &connect.Options{URL: url, Logger: log})
//	err := p.Run(ctx, acp.NewLineStream(os.Stdin, os.Stdout))
//
// # What it changes
//
// The Proxy forwards JSON-RPC messages both ways unchanged, ids included,
// and decodes only what it routes by (id, method, params.sessionId,
// params.connectionId, params.acpId, result.sessionId). Apart from that:
//
//   - Stdio servers run on the editor's machine. In session/new,
//     session/load, session/resume and session/fork, each valid stdio
//     mcpServers entry ({name, command, args, env}) becomes
//     {"type":"acp","name":…,"id":…} with an id of the Proxy's; the gateway
//     then asks for it with mcp/connect, and the Proxy starts the command
//     (bridge.StdioTransport: the agent's own confinement, in the
//     session's cwd) and relays its MCP messages in mcp/message until
//     mcp/disconnect, the Link's end or the Proxy's. Those mcp/* messages
//     are the Proxy's and never reach the editor; the editor's own acp
//     entries, http and sse entries pass through untouched.
//   - The Link is dialed again when it fails, with exponential backoff
//     (github.com/cenkalti/backoff/v5; at most Options.MaxInterval between
//     tries, giving up after Options.MaxElapsed). On the new Link the
//     Proxy sends the editor's initialize again (with an id of its own,
//     "acp-agent-connect-<nonce>-<n>"), then re-attaches every open session:
//     session/resume when the gateway advertises it, else session/load,
//     whose replayed session/update notifications it drops (the editor
//     has them). The editor's requests under way at the drop are answered
//     with a -32603 error saying so (send them again); the gateway's
//     requests waiting at the editor are withdrawn ($/cancel_request) and
//     their late answers dropped; what the editor sends meanwhile is held
//     (Options.MaxHeld) and sent once re-attached. Each open session is
//     told, as an agent message, or as a notice when the editor advertised
//     session.notices.
//   - A gateway request whose id the editor still holds from an earlier
//     Link (Links number their requests from the same start) reaches the
//     editor under an id of the Proxy's, and the answer gets the
//     gateway's back.
//
// # Errors
//
// Run returns nil when the editor's input ends or its context is done, and
// an error wrapping [ErrGaveUp] when it stopped trying to reach the
// gateway. A DialFunc error wrapped by [Permanent] ends the tries at once.
//
// # Concurrency
//
// Run runs the editor's reader and one reader per Link, and owns every
// goroutine it starts: it returns once the Links' readers, the relays and
// the local servers' stops have ended (the editor's reader too, unless the
// context ended first: a read of stdin cannot be interrupted). One mutex
// guards the routing state and is never held across I/O; writes to the
// editor and to each Link are serialized apart.
package connect
