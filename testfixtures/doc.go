// Package testfixtures holds what acp-agent's tests and demo run against:
// mcpserver, the Go MCP server (built by the tests), and fakemodel, fake
// Anthropic and OpenAI streaming APIs. Nothing here is imported by non-test
// code.
package testfixtures
