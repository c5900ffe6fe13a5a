// Package sandbox holds acp-agent's policy for what a session may start and
// reach: the sanitized environment of stdio MCP server processes and the
// process rules that make sure nothing a server starts outlives its session
// (process groups; on Linux also a subreaper, a descendant sweep, the
// parent-death signal and a watchdog for when the agent is killed).
//
// The package decides; beyond starting and ending the processes it is asked
// to (reading /proc to find their descendants), it performs no I/O on behalf
// of others.
package sandbox
