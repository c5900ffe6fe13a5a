// Package metrics owns the Prometheus metrics of acp-agent and the HTTP
// endpoints operators probe: /healthz, /readyz and /metrics.
//
// A [Metrics] holds its own prometheus.Registry (never the global default)
// and implements the small observer interfaces of the product packages, so
// that they record without importing Prometheus:
//
//   - gateway.Observer (runner.Options.Observer): turns, model requests,
//     tokens and cost, tool calls, permission decisions;
//   - session.Observer (session.CoreOptions.Observer): sessions opened and
//     closed, sign-ins of MCP servers, and, for a session core with
//     leases (a gateway fleet's), the waits for prompt turns' leases and
//     the leases lost;
//   - acp/remote.Observer ([Metrics.Transport], remote.Options.Observer):
//     the gateway's network connections by transport, requests refused by
//     status, messages and bytes;
//   - [Metrics.StoreCommit] (session.History.ObserveCommits): store commit
//     latency;
//   - [Metrics.ServerStates]: MCP servers by state, read at scrape time.
//
// Names follow Prometheus conventions and, where they exist, the
// OpenTelemetry GenAI and MCP semantic conventions (gen_ai_*, mcp_*).
// Each process counts what it runs, where its session core runs: the stdio
// agent, mcp-server, or a gateway (which also counts its connections). No
// label carries a secret or an unbounded value: model, server and tool
// names are kept up to a cap each (see [MaxModels], [MaxServers],
// [MaxTools]), later ones are counted as "other".
//
// # Concurrency
//
// Every method of Metrics is safe for concurrent use and never blocks on
// I/O: recording is an atomic add, or a short lock for a label not seen
// before.
package metrics
