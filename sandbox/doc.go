// Package sandbox holds acp-agent's policy for what a session may start and
// reach, and the process control that enforces it. The other packages ask;
// sandbox decides, and for processes it also acts.
//
// # Environment
//
// [EnvPolicy.ChildEnv] builds a stdio MCP server's environment: the few
// variables of [BaselineEnv] taken from the agent's own environment, then
// exactly the entry's variables, less the injection keys ([IsInjectionKey]:
// LD_PRELOAD, NODE_OPTIONS, …) that the config does not re-allow. Model API
// keys and other secrets of the agent never reach a child unless the client
// passes them.
//
// # Processes
//
// Unlike the rest of the package, this part performs I/O: [Start] starts a
// child ([Command] builds it) in a process group of its own, tagged with
// [ServerTagEnv], and collects its exit status; [StopGroup] and
// [Process.Kill] end the child and everything it started, sending signals
// and, on Linux, reading /proc to find descendants that left the group.
// [Setup], called once by main, makes the agent a child subreaper, starts the
// reaper of adopted orphans and a watchdog that kills the servers' groups if
// the agent dies without teardown.
//
// # Network
//
// [URLPolicy] decides which http and sse server URLs may be reached:
// [URLPolicy.CheckURL] checks a URL before connecting, and the policy's
// dialer and redirect check ([URLPolicy.HTTPClient]) check every address
// actually dialed, so that DNS cannot smuggle a private address past it.
// Refusals are [*PolicyError] values wrapping [ErrRefused].
//
// # Quotas and redaction
//
// [Limits] are a session's quotas (servers, tools, result and media sizes),
// [TextBudget] enforces the text quota of one tool result, and [CallLimiter]
// is a server's tool-call rate limit ([ErrRateLimited]). [RedactURL],
// [RedactURLs], [RedactError] and [RedactingHandler] take credentials out of
// URLs before they reach logs or the client.
package sandbox
