// Package testfixtures holds what acp-agent's tests and demo run against:
// mcpserver, the Go MCP server (built by the tests), fakemodel, fake
// Anthropic and OpenAI streaming APIs, and conformanceclient, the MCP client
// on package bridge that the official conformance suite tests. Nothing here
// is imported by non-test code.
package testfixtures
