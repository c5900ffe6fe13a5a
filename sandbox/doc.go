// Package sandbox holds acp-agent's policy for what a session may start and
// reach, and the process control that enforces it. The other packages ask;
// sandbox decides, and for processes it also acts.
//
// It holds four concepts, each in files of its own, named by a prefix:
//
//   - process supervision, process*.go: starting a stdio server's child
//     and ending it with everything it started (process.go: [Command],
//     [Start], [StopGroup], [Process]; process_linux.go: [Setup], the
//     subreaper, the locked spawner thread, the teardown sweep;
//     process_cgroup_linux.go: a cgroup v2 per child;
//     process_tree_linux.go: descendants read from /proc;
//     process_watchdog_linux.go: the watchdog that outlives the agent;
//     process_other.go: process groups alone, outside Linux);
//   - the URL egress policy, url*.go: which http and sse server URLs and
//     addresses may be reached (urlpolicy.go: [URLPolicy], [PolicyError];
//     urlpolicy_hosts.go: host spellings and address ranges;
//     urlpolicy_signin.go: [URLPolicy.SignIn], a sign-in's OAuth requests)
//     and credentials kept out of logs (urlredact.go: [RedactURL],
//     [RedactingHandler]);
//   - the environment policy, env.go: [EnvPolicy], [BaselineEnv], the
//     injection keys;
//   - quotas, quota*.go: a session's [Limits], a result's [TextBudget],
//     [MediaNote] and [Size] (quota.go), a server's tool-call rate limit,
//     [CallLimiter] (quota_ratelimit.go).
//
// Only process supervision performs I/O; the other three decide.
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
// [ServerTagEnv], on Linux in a cgroup v2 of its own when it can, and
// collects its exit status; [StopGroup] and [Process.Kill] end the child and
// everything it started. [Setup], called once by main, creates the agent's
// base cgroup (or finds it cannot), makes the agent a child subreaper,
// starts the reaper of adopted orphans, and starts a watchdog that kills the
// servers' groups and cgroups if the agent dies without teardown.
//
// # Teardown guarantees
//
// What StopGroup and Kill end, besides the child itself and its process
// group, depends on the platform:
//
//   - Linux with a writable cgroup v2 (the agent's own cgroup, found in
//     /proc/self/cgroup and /proc/self/mountinfo, delegated or root; a kernel
//     of 5.7 or later): each child starts directly in
//     <agent's cgroup>/acp-agent-<pid>/<n> (clone3 CLONE_INTO_CGROUP), and
//     every process it starts stays in that cgroup whatever it does with its
//     process group, session, parent or environment. Teardown kills the
//     cgroup (cgroup.kill, kernel 5.14; before that, freeze and SIGKILL each
//     member in rounds), waits until it is empty and removes it; other
//     children's cgroups are untouched. When the agent exits, even by
//     SIGKILL, the watchdog kills everything below the base and removes it.
//     When the agent may make cgroup namespaces (CAP_SYS_ADMIN: root; Setup
//     tries once), each child also starts in a cgroup namespace of its own,
//     rooted at its cgroup (unshare CLONE_NEWCGROUP in the child, once it is
//     in the cgroup). A process that writes its pid to an ancestor's
//     cgroup.procs to leave the cgroup is then refused by the kernel where
//     the hierarchy is mounted with nsdelegate (systemd mounts it so); where
//     it is not, the move succeeds, but the process is still in the child's
//     namespace, by which teardown and the watchdog find and kill it. Only a
//     process that also leaves the namespace (setns or unshare: it needs
//     CAP_SYS_ADMIN, so root) escapes. Without cgroup namespaces (an agent
//     that is not root), a process that moves itself to another cgroup it
//     may write to (the agent's user within a delegated subtree) escapes.
//     [Contained] says which of these holds here.
//   - Linux without one (no cgroup v2, read-only or not delegated, an older
//     kernel, or Setup not called): the fallback finds descendants by their
//     parentage while the child runs, by ServerTagEnv in their environment,
//     and, as subreaper, by adoption: an adopted orphan is presumed the
//     ending child's only when no other child started by Start is alive. A
//     daemon that clears its environment and forks twice (env -i setsid …)
//     while another server is alive, before a teardown saw it in the tree,
//     escapes, and outlives the agent too.
//   - Other platforms (macOS): the process group only; a descendant that
//     calls setsid or setpgid escapes, and nothing ends the servers if the
//     agent dies by SIGKILL (they see their stdin close).
//
// Setup's cgroup attempt is silent: the fallback is no error. [Contained]
// reports what it found, for the agent to log.
//
// # Network
//
// [URLPolicy] decides which http and sse server URLs may be reached:
// [URLPolicy.CheckURL] checks a URL before connecting, and the policy's
// dialer and redirect check ([URLPolicy.HTTPClient]) check every address
// actually dialed, so that DNS cannot smuggle a private address past it.
// Loopback is allowed by default (a local agent's editor is on its host);
// [URLPolicy.RefuseLoopback], for an agent whose clients are on other
// machines, refuses it too, but for the hosts of AllowHosts.
// Refusals are [*PolicyError] values wrapping [ErrRefused]; they state the
// rule broken, and name in Setting the configuration key that would lift it
// for the front end to tell the user (bridge.ErrorText).
//
// # Quotas and redaction
//
// [Limits] are a session's quotas (servers, tools, result and media sizes),
// [TextBudget] enforces the text quota of one tool result, and [CallLimiter]
// is a server's tool-call rate limit ([ErrRateLimited]; a [*RateLimitError]
// carries the wait, which the front end states). [RedactURL],
// [RedactURLs], [RedactError] and [RedactingHandler] take credentials out of
// URLs before they reach logs or the client.
package sandbox
