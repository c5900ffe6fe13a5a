package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// DefaultGrace is how long a child gets to exit after its stdin is closed,
// before it is sent SIGTERM.
const DefaultGrace = 5 * time.Second

// killDelay is how long a process group gets between SIGTERM and SIGKILL.
const killDelay = time.Second

// Command returns an exec.Cmd for a stdio MCP server: it runs in dir with
// exactly env, in a process group of its own (Setpgid), so that the whole
// group, grandchildren included, can be signalled at once. On Linux it also
// gets SIGKILL when the agent dies (Pdeathsig), which is why it must be
// started with Start, never with cmd.Start. When ctx is done the group is
// killed; WaitDelay bounds how long Wait then waits for the child's pipes.
func Command(ctx context.Context, name string, args []string, dir string, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{} // never inherit the agent's environment
	}
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error {
		return SignalGroup(cmd, syscall.SIGKILL)
	}
	cmd.WaitDelay = time.Second
	return cmd
}

// Process is a child started by Start. Its exit status is collected in the
// background: Done is closed once cmd.Wait has returned, after which Err and
// the Cmd's ProcessState may be read. Its methods, Kill and StopGroup are
// safe for concurrent use, and may be called more than once.
type Process struct {
	Cmd *exec.Cmd

	done chan struct{}
	err  error // cmd.Wait's result; read after done

	tag       string // the value of ServerTagEnv in the child's environment (Linux)
	rootStart uint64 // the child's start time, to tell it from a reuse of its pid (Linux)
	// cgroup is the directory of the child's own cgroup v2, "" when it has
	// none (Linux; see Setup). Set by Start, then read-only; the directory
	// is removed by the first sweep that finds it empty.
	cgroup string

	mu   sync.Mutex
	seen map[int]procID // every descendant seen so far (Linux)
	// cgroupNS is the child's cgroup namespace, as /proc/<pid>/ns/cgroup
	// reads ("cgroup:[4026532000]"), "" when it has none of its own
	// (Linux; see Setup). nsFile holds the namespace open, so that its
	// number cannot pass to a new namespace while the sweep may match it;
	// both are dropped when a sweep has ended. Guarded by mu.
	cgroupNS string
	nsFile   *os.File
}

// procID tells a process apart from a later one that reuses its pid.
type procID struct{ start uint64 }

// Start starts cmd (normally from Command) and collects its exit status in
// the background: on Linux a goroutine parked in the netpoller on the
// child's pidfd, so an idle child costs the agent no OS thread (cmd.Wait
// alone would hold one, blocked in waitid, for the child's life). On Linux the fork happens on one OS thread that lives as
// long as the agent, so that the child's parent-death signal fires when the
// agent dies and at no other time; and, after Setup created a base cgroup,
// the child starts directly in a new cgroup v2 of its own below it, where
// everything it starts stays (a process cannot leave a cgroup by setsid,
// double forks or a cleared environment; only by writing its pid to another
// cgroup's cgroup.procs, which it needs write access to), and, when the
// agent may make cgroup namespaces, in a cgroup namespace of its own rooted
// at that cgroup (what moves itself out is refused by a hierarchy mounted
// with nsdelegate, and found by that namespace at teardown otherwise; see
// the package doc). It fails as
// cmd.Start does; cmd must not have been started. Start may be called
// concurrently.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	if err := p.startChild(); err != nil {
		return nil, err
	}
	go func() { // owned by p: Done reports its end
		awaitExit(cmd.Process.Pid) // parked in the netpoller, not on a thread of its own
		err := cmd.Wait()
		p.reaped()
		p.err = err
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the child has exited and been waited for.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the result of cmd.Wait; it must be called after Done is closed.
func (p *Process) Err() error { return p.err }

// Kill ends the child and everything it started at once: SIGKILL to its
// process group and (Linux, with a cgroup) to everything in its cgroup,
// then, once the child is gone, every descendant that is left (Linux: even
// those that left the group, see StopGroup). It returns when all are gone,
// or after about WaitDelay plus a few seconds at most (ten more if a
// process in the cgroup is stuck in an uninterruptible sleep).
func (p *Process) Kill() {
	p.track()
	p.signalGroup(syscall.SIGKILL)
	p.killCgroup()
	<-p.done
	p.sweep()
}

// signalGroup sends sig to the child's process group unless the child has
// already been reaped: its pid, and with it the group id, may since belong
// to an unrelated process. What is left of the group then is the sweep's.
func (p *Process) signalGroup(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = SignalGroup(p.Cmd, sig)
}

// SignalGroup sends sig to the process group led by cmd's process. It returns
// nil when the process was never started or the group is already gone.
func SignalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// StopGroup ends p and everything it started, given a function that asks the
// child to stop gracefully (for an MCP stdio server: closing the client
// session, which closes the child's stdin). StopGroup waits for the child to
// exit; if that takes longer than grace, the group gets SIGTERM, and
// killDelay later SIGKILL (with its cgroup, on Linux). Whatever the child
// did, what is left of its process group and (on Linux) of its descendants,
// including those that left the group (setsid, daemons), is then killed:
//
//   - Linux, child in a cgroup of its own (see Setup): everything in the
//     cgroup, found by the kernel, whatever its group, session, parent or
//     environment; then the cgroup is removed; with a cgroup namespace of
//     its own, also every process still in that namespace (what moved
//     itself to another cgroup). Nothing it started survives unless it
//     deliberately moved itself to another cgroup it may write to and, with
//     a namespace, also left that (CAP_SYS_ADMIN).
//   - Linux without a cgroup: the descendants seen while the child ran,
//     those that carry its ServerTagEnv, and, when no other child started
//     by Start is alive, the agent's adopted orphans. A daemon that cleared
//     its environment and forked twice while another server was running,
//     before any teardown saw it, escapes.
//   - Elsewhere: the process group only.
//
// StopGroup returns within about grace+killDelay+WaitDelay plus the time
// stop takes (ten seconds more if a process in the cgroup is stuck in an
// uninterruptible sleep); grace <= 0 means DefaultGrace.
func StopGroup(p *Process, grace time.Duration, stop func()) {
	if grace <= 0 {
		grace = DefaultGrace
	}
	p.track()
	stopped := make(chan struct{})
	go func() { // waited for below
		defer close(stopped)
		stop()
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.track()
		p.signalGroup(syscall.SIGTERM)
		timer.Reset(killDelay)
		select {
		case <-p.done:
		case <-timer.C:
			p.track()
			p.signalGroup(syscall.SIGKILL)
			p.killCgroup()
			<-p.done
		}
	}
	p.sweep()
	<-stopped
}

// Containment is what keeps a session's processes in on this host, as
// Setup found it: for the agent to log once at startup. The zero value
// (before Setup, and outside Linux) has no cgroup.
type Containment struct {
	// Cgroup is the base cgroup below which each child starts in a cgroup
	// of its own (Linux, cgroup v2), "" when children get none; CgroupErr
	// is then why (nil where it was not tried).
	Cgroup    string
	CgroupErr error
	// Namespace says each child also starts in a cgroup namespace of its
	// own, rooted at its cgroup; NamespaceErr is why not when there is a
	// Cgroup (EPERM: the agent lacks CAP_SYS_ADMIN in its user namespace).
	Namespace    bool
	NamespaceErr error
	// NSDelegate says the cgroup v2 hierarchy is mounted with nsdelegate:
	// with Namespace, the kernel refuses to move a child's process to a
	// cgroup outside its namespace's root.
	NSDelegate bool
}

// String says what holds, in one sentence.
func (c Containment) String() string {
	switch {
	case c.Cgroup == "" && c.CgroupErr == nil:
		return "children are ended by their process group only"
	case c.Cgroup == "":
		return fmt.Sprintf("children get no cgroup (%v): teardown finds their descendants by parentage, their environment tag and the subreaper; "+
			"a daemon that clears its environment and forks twice while another server runs escapes", c.CgroupErr)
	case !c.Namespace:
		return fmt.Sprintf("each child starts in a cgroup of its own, without a cgroup namespace (%v): a process that may write an ancestor cgroup's cgroup.procs "+
			"(root, or the agent's user in a delegated subtree) can move itself out and outlive its session", c.NamespaceErr)
	case c.NSDelegate:
		return "each child starts in a cgroup and a cgroup namespace of its own, on a hierarchy mounted with nsdelegate: the kernel refuses to move " +
			"its processes out of that cgroup, unless one first leaves the namespace (setns or unshare, which takes CAP_SYS_ADMIN: root)"
	}
	return "each child starts in a cgroup and a cgroup namespace of its own; the hierarchy has no nsdelegate, so a process that may write an ancestor " +
		"cgroup's cgroup.procs (root) can move itself out of the cgroup, and teardown and the watchdog then find it by its cgroup namespace, " +
		"unless it left that too (setns or unshare, CAP_SYS_ADMIN)"
}
