// Package process supervises the processes a session starts: each in a
// process group (and, on Linux, a cgroup and cgroup namespace) of its own,
// started from one locked spawner thread so the parent-death signal holds,
// and ended with everything it started (process lifetime).
//
// [Start] starts a
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
package process
