// Package testfixtures holds the MCP servers used by acp-agent's tests and
// demo. Its commands (such as mcpserver) are built by the tests; nothing here
// is imported by non-test code.
package testfixtures
