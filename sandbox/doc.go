// Package sandbox holds acp-agent's policy for what a session may start and
// reach: the sanitized environment of stdio MCP server processes and the
// process-group rules that make sure no child outlives its session.
//
// The package decides; it performs no I/O on behalf of others beyond sending
// signals to process groups it is asked to end.
package sandbox
