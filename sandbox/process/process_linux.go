package process

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the child in a process group of its own and has the
// kernel SIGKILL it when the thread that forked it dies: Start forks from a
// thread that lives as long as the agent, so in effect when the agent dies,
// even by SIGKILL.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Setup prepares the agent process to end everything its servers start;
// call it once, early in main, before any Start. It
//
//   - checks once whether a child started there may make itself a cgroup
//     namespace (it needs CAP_SYS_ADMIN in the agent's user namespace: root)
//     and whether the hierarchy is mounted with nsdelegate; see Contained;
//   - creates the base cgroup, when the agent's cgroup v2 is writable
//     (/proc/self/cgroup, /proc/self/mountinfo): a directory
//     acp-agent-<pid> below the agent's own cgroup, into which Start puts
//     each child's cgroup. Without cgroup v2, or when the directory cannot
//     be created or a process started into it (read-only, not delegated,
//     EPERM, EACCES, a kernel before 5.7), children get no cgroup and
//     teardown takes the fallback (ServerTagEnv and the subreaper); that is
//     no error;
//   - starts the watchdog, which, when the agent exits or dies without
//     teardown (SIGKILL), kills the servers' process groups and everything
//     in the base cgroup, then removes it;
//   - makes the agent a child subreaper (prctl(PR_SET_CHILD_SUBREAPER)): a
//     process orphaned below one of its servers, such as a daemon that
//     forked twice and called setsid, is reparented to the agent instead of
//     init, so that StopGroup and Kill can still find it among the agent's
//     children even without a cgroup.
//
// An error means the agent is no subreaper; a watchdog that cannot start is
// skipped.
//
// Setup also makes the agent non-dumpable (prctl(PR_SET_DUMPABLE, 0)), so
// that a process of the same user, such as a command of run_command or a
// stdio server, cannot read the agent's memory or /proc/<agent>/environ,
// where the model API keys it was started with are. Root, or a process with
// CAP_SYS_PTRACE, still can; the agent's own children are exec'd dumpable as
// usual. It also means no core dump and no debugger attaching to the agent
// as the same user.
//
// A subreaper also starts the reaper, a goroutine that lives as long as the
// process: on each SIGCHLD it reaps the adopted orphans that have exited, so
// that they do not linger as zombies until a teardown. It never reaps a child
// started by Start (exec.Cmd collects that status), nor an exited child in
// the agent's own process group; but any other child the process starts
// without Start after Setup, in a process group of its own, may have its
// status taken (its Wait then fails with ECHILD). The agent starts every
// child with Start.
func Setup() error {
	setupCgroups()
	base, _ := cgroupBase()
	startWatchdog(base) // before the prctl: the watchdog must not be adopted
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("hiding the agent's memory and environment from its children: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	startReaper()
	return nil
}

// reaper starts the reaper once.
var reaper sync.Once

func startReaper() {
	reaper.Do(func() {
		sigs := make(chan os.Signal, 1) // a pending signal stands for any number
		signal.Notify(sigs, syscall.SIGCHLD)
		go func() { // lives as long as the process, on purpose: orphans are adopted until it exits
			for range sigs {
				reapOrphans()
			}
		}()
	})
}

// reapOrphans reaps every exited child of the agent that Start did not start
// (adopted orphans) and that is not in the agent's own process group.
// waitid(WNOWAIT) first tells cheaply whether any child has exited at all;
// it cannot skip the children exec.Cmd waits for, so /proc names the rest.
func reapOrphans() {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err != nil || info.Signo == 0 {
		return // no child, or none has exited
	}
	self, group := os.Getpid(), syscall.Getpgrp()
	var zombies []int
	for pid, info := range readProcs() {
		if info.ppid == self && info.zombie && info.pgid != group {
			zombies = append(zombies, pid)
		}
	}
	reapAdopted(zombies)
}

// children guards started: the pids of children started by Start whose exit
// status exec.Cmd has not collected yet. The sweep reaps only other children
// (orphans adopted as subreaper), so it never steals a status from Wait.
var children struct {
	sync.Mutex
	started map[int]struct{}
}

// spawner is the goroutine, locked to its OS thread for the life of the
// process, that forks every child: Linux sends the parent-death signal when
// the forking thread exits, not the process.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// ServerTagEnv is the environment variable Start sets in every child it
// starts (Linux), to a random value of its own, replacing any value already
// in the environment: its descendants inherit it, so that teardown finds
// them even once they have left the child's tree and process group (a
// daemon that forked twice and called setsid, reparented to the agent or to
// init). It is no secret, and a process that clears its environment, or runs
// as another user, escapes this match: that is why a child in a cgroup of
// its own (see Setup) is ended by its cgroup, the tag serving only as a
// second net there.
const ServerTagEnv = "ACP_AGENT_SERVER_TAG"

// newTag returns a random tag for ServerTagEnv.
func newTag() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}

// startChild tags p.Cmd's environment, makes it a cgroup of its own when
// there is a base cgroup, and starts it on the spawner's thread, into that
// cgroup (SysProcAttr.UseCgroupFD). cmd.SysProcAttr is left as it was given.
// If the start into the cgroup fails in a way that may mean the kernel
// refuses it, and a new probe of the base confirms that, later children
// take the fallback; this child's start has failed all the same (an
// exec.Cmd cannot be started twice).
func (p *Process) startChild() error {
	cmd := p.Cmd
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	p.tag = newTag()
	cmd.Env = append(slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, ServerTagEnv+"=")
	}), ServerTagEnv+"="+p.tag)
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() { // lives as long as the process, on purpose
			runtime.LockOSThread() // never unlocked: the thread must not exit
			for r := range spawner.reqs {
				r.done <- startRegistered(r.cmd)
			}
		}()
	})
	dir, fd := newChildCgroup()
	given := cmd.SysProcAttr
	ns := false
	if fd >= 0 {
		attr := syscall.SysProcAttr{}
		if given != nil {
			attr = *given
		}
		attr.UseCgroupFD, attr.CgroupFD = true, fd
		// Born in its cgroup, the child then makes a cgroup namespace
		// rooted there (unshare runs in the child after the clone, before
		// the exec): with nsdelegate the kernel refuses to move it, or
		// anything it starts, out; without, the sweep finds what left the
		// cgroup by this namespace.
		if ns = cgroupNS(); ns {
			attr.Unshareflags |= unix.CLONE_NEWCGROUP
		}
		cmd.SysProcAttr = &attr
	}
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawner.reqs <- r
	err := <-r.done
	if fd >= 0 {
		cmd.SysProcAttr = given
		_ = unix.Close(fd)
	}
	if err != nil {
		if dir != "" {
			_ = unix.Rmdir(dir)
			if base, _ := cgroupBase(); base != "" && cgroupUnsupported(err) {
				if perr := probeCgroup(base); perr != nil {
					disableCgroups(perr)
				}
			}
		}
		return err
	}
	p.cgroup = dir
	// Not reaped yet (the reaper skips started children), so the pid is its.
	if info, ok := readProc(cmd.Process.Pid); ok {
		p.rootStart = info.start
	}
	tellWatchdog('+', cmd.Process.Pid)
	if ns {
		p.cgroupNS, p.nsFile = holdCgroupNS(cmd.Process.Pid, dir)
		if p.cgroupNS != "" {
			tellWatchdogNS('+', p.cgroupNS)
		}
	}
	return nil
}

// holdCgroupNS opens the cgroup namespace of the child pid, started in the
// cgroup dir with a namespace of its own, and returns its name
// ("cgroup:[N]") and the open file that keeps it. A child that has already
// exited has no namespace left to read: then that of a process still in
// its cgroup (a descendant, checked to be there still once opened) is
// taken. It returns "" and nil when none can be had, or when the namespace
// is the agent's own (the unshare did not happen): the sweep must never
// match the agent's.
func holdCgroupNS(pid int, dir string) (string, *os.File) {
	own := cgroupNSOf(os.Getpid())
	for _, p := range append([]int{pid}, cgroupProcs(dir)...) {
		f, err := os.Open("/proc/" + strconv.Itoa(p) + "/ns/cgroup")
		if err != nil {
			continue
		}
		name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
		if err != nil || own == "" || name == own || !strings.HasPrefix(name, "cgroup:[") {
			_ = f.Close()
			continue
		}
		if p != pid && !inCgroup(p, dir) { // its pid passed to another process meanwhile
			_ = f.Close()
			continue
		}
		return name, f
	}
	return "", nil
}

// inCgroup reports whether the process pid is in the cgroup dir (its path
// relative to the hierarchy ends dir, as /proc/<pid>/cgroup shows it to
// the agent).
func inCgroup(pid int, dir string) bool {
	data, err := readProcFile("/proc/"+strconv.Itoa(pid)+"/cgroup", nil)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(data)) {
		if rel, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "0::"); ok {
			return rel != "/" && strings.HasSuffix(dir, rel)
		}
	}
	return false
}

// dropCgroupNS forgets p's cgroup namespace once a sweep has ended: the
// watchdog is told, and the namespace is let go. p.mu is held.
func (p *Process) dropCgroupNS() {
	if p.cgroupNS == "" {
		return
	}
	tellWatchdogNS('-', p.cgroupNS)
	_ = p.nsFile.Close()
	p.cgroupNS, p.nsFile = "", nil
}

// startRegistered starts cmd and records its pid, atomically with respect to
// the sweep's reaping.
func startRegistered(cmd *exec.Cmd) error {
	children.Lock()
	defer children.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	if children.started == nil {
		children.started = make(map[int]struct{})
	}
	children.started[cmd.Process.Pid] = struct{}{}
	return nil
}

// reaped runs once exec.Cmd has collected p's child's status. It records
// the members left in the child's process group (while any lives, the group
// id cannot be reused), so that the sweep finds them later without trusting
// a group id that may by then be another's; then it forgets the child and
// takes its group off the watchdog's list, which must never kill a group id
// that was reused.
func (p *Process) reaped() {
	root := p.Cmd.Process.Pid
	procs := readProcs()
	p.mu.Lock()
	for pid, info := range procs {
		if info.pgid == root && info.start >= p.rootStart {
			p.note(pid, info.start)
		}
	}
	p.mu.Unlock()
	children.Lock()
	delete(children.started, root)
	children.Unlock()
	tellWatchdog('-', root)
}

// track records the current descendants of p's child, so that the sweep
// still knows them once they have been orphaned. It does nothing once the
// child has been reaped, or if its pid no longer runs the child (reused).
func (p *Process) track() {
	if p.Cmd.Process == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	root := p.Cmd.Process.Pid
	procs := readProcs()
	if info, ok := procs[root]; !ok || info.start != p.rootStart {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.remember(procs, root)
}

// remember adds the descendants of root in procs to p.seen; p.mu is held.
func (p *Process) remember(procs map[int]procInfo, root int) {
	for _, d := range descendants(procs, root) {
		p.note(d, procs[d].start)
	}
}

// note adds pid, started at start, to p.seen unless it is there; p.mu is held.
func (p *Process) note(pid int, start uint64) {
	if p.seen == nil {
		p.seen = make(map[int]procID)
	}
	if _, ok := p.seen[pid]; !ok {
		p.seen[pid] = procID{start}
	}
}

// tagged reports whether /proc/<pid>/environ holds needle ("\x00NAME=value\x00").
// Another user's process cannot be read, and does not match.
func tagged(pid int, needle []byte) bool {
	data, err := readProcFile("/proc/"+strconv.Itoa(pid)+"/environ", nil)
	if err != nil || len(data) == 0 {
		return false
	}
	env := make([]byte, 0, len(data)+2)
	env = append(append(append(env, 0), data...), 0)
	return bytes.Contains(env, needle)
}

// sweepRounds bounds the sweep: each round kills what it finds, and a
// descendant may fork while it is being killed.
const sweepRounds = 200

// sweep kills every process left of p's tree once p's child is gone (it is
// called after Done). A child in a cgroup of its own has it killed first,
// all at once, and removed once empty (drainCgroup). Then, with a cgroup or
// without, it kills the descendants seen by track, the members left in its
// process group when it was reaped, the processes in the child's cgroup
// namespace (those that moved themselves out of its cgroup), the processes
// that carry its tag (ServerTagEnv) in their environment,
// wherever they were reparented, and the descendants of all these; and, for
// a child without a cgroup only, when no other child started by Start is
// alive to claim them, every other orphan the agent adopted as subreaper (a
// child with a cgroup has no orphan outside it, and the rule would
// otherwise hit children of the agent that other code started). A pid
// counts only with the start time it was seen with, so a reused pid is
// spared. It reaps the adopted orphans it killed, and repeats until none is
// left; then it lets the namespace go (dropCgroupNS).
func (p *Process) sweep() {
	if p.Cmd.Process == nil {
		return
	}
	if p.cgroup != "" {
		drainCgroup(p.cgroup)
	}
	defer func() {
		p.mu.Lock()
		p.dropCgroupNS()
		p.mu.Unlock()
	}()
	self := os.Getpid()
	var needle []byte
	if p.tag != "" {
		needle = []byte("\x00" + ServerTagEnv + "=" + p.tag + "\x00")
	}
	for range sweepRounds {
		procs := readProcs()
		p.mu.Lock()
		if p.seen == nil {
			p.seen = make(map[int]procID)
		}
		if needle != nil || p.cgroupNS != "" {
			for pid, info := range procs {
				// A descendant starts no earlier than the child.
				if pid == self || info.zombie || info.start < p.rootStart {
					continue
				}
				if id, ok := p.seen[pid]; ok && id.start == info.start {
					continue
				}
				// What moved itself out of the cgroup is still in the
				// child's cgroup namespace (p.nsFile keeps its number
				// from passing to another).
				if (needle != nil && tagged(pid, needle)) || (p.cgroupNS != "" && cgroupNSOf(pid) == p.cgroupNS) {
					p.seen[pid] = procID{info.start} // replaces a reused pid's entry
				}
			}
		}
		for pid, id := range p.seen {
			if info, ok := procs[pid]; ok && info.start == id.start {
				p.remember(procs, pid)
			}
		}
		children.Lock()
		alone := p.cgroup == "" && len(children.started) == 0
		var targets []int
		for pid, info := range procs {
			id, seen := p.seen[pid]
			seen = seen && id.start == info.start
			adopted := info.ppid == self
			if adopted {
				if _, ours := children.started[pid]; ours {
					continue // exec.Cmd waits for it
				}
			}
			// An adopted orphan of this server's tree started no earlier
			// than the server: a child of this process started before it
			// (by other code than Start) is no orphan of its.
			if !seen && !(adopted && alone && info.start >= p.rootStart) {
				continue
			}
			if info.zombie {
				if adopted {
					var ws unix.WaitStatus
					_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
				}
				continue
			}
			targets = append(targets, pid)
		}
		children.Unlock()
		p.mu.Unlock()
		if len(targets) == 0 {
			return
		}
		for _, pid := range targets {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond) // let the kernel deliver the kills
	}
}

// killCgroup kills everything in p's cgroup at once, if it has one,
// without waiting: the sweep waits and removes it.
func (p *Process) killCgroup() {
	if p.cgroup != "" {
		killCgroup(p.cgroup)
	}
}

// awaitExit returns once the child pid has exited (without reaping it:
// cmd.Wait does that), waiting in the netpoller on a pidfd, which polls
// readable at the exit (Linux 5.3). Where no pidfd can be had it returns
// at once, and cmd.Wait blocks its thread as it would have.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0 // exited, or nothing more to learn here
	})
}
