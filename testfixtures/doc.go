// Package testfixtures holds what acp-agent's tests and demo run against:
// mcpserver, the Go MCP server (built by the tests), fakemodel, fake
// Anthropic and OpenAI streaming APIs, conformanceclient, the MCP client on
// package bridge that the official conformance suite tests, and oauthserver,
// an OAuth-protected MCP server with its own authorization server
// (internal/oauthtest) as a process, linerelay, a process that only
// passes lines between a client and a stdio server (a benchmark's floor),
// and sdkfloor, the least ACP agent on acp-go-sdk and go-sdk that serves a
// /call turn (the floor of the agent's bridged path).
// Nothing here is imported by non-test
// code.
package testfixtures
