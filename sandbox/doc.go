// Package sandbox is acp-agent's policy for what a session may start,
// reach and change, and the process control that enforces it. It holds no
// code: each concept is a package of its own, and the other packages ask
// the one they need (signin needs only the URL policy).
//
//   - [github.com/seed02d3eb6b/acp-agent/sandbox/process]: process
//     lifetime. Starting a stdio server's or a command's child (a locked
//     spawner thread, the parent-death signal, a process group and on Linux
//     a cgroup and cgroup namespace of its own) and ending it with
//     everything it started; the subreaper and the watchdog that outlives
//     the agent.
//   - [github.com/seed02d3eb6b/acp-agent/sandbox/confine]: confinement.
//     The session modes (read-only, workspace-write, full-access) compiled
//     into Landlock rules that a child applies to itself before it execs
//     (the agent's binary re-executed as a launcher), and what the kernel
//     enforces of them.
//   - [github.com/seed02d3eb6b/acp-agent/sandbox/environ]: the
//     environment. What a child's environment holds: a baseline of the
//     agent's, the client's variables, less those that inject code.
//   - [github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy]: the URL
//     policy. Which URLs and addresses may be reached, checked in the
//     dialer; a sign-in's requests no closer than its server; credentials
//     kept out of logs.
//   - [github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy]: the managed
//     policy. Which MCP servers an organisation allows and denies (by
//     name, command or URL, per tenant of a gateway), read from a file
//     its users do not control.
//   - [github.com/seed02d3eb6b/acp-agent/sandbox/quota]: quotas. A
//     session's limits and a server's tool-call rate limit.
//
// Only process and confine perform I/O; the others decide.
package sandbox
