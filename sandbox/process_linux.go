package sandbox

import (
	"os"
	"os/exec"
	"runtime"
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
// call it once, early in main. It starts the watchdog, which kills the
// servers' process groups if the agent dies without teardown (SIGKILL), and
// makes the agent a child subreaper (prctl(PR_SET_CHILD_SUBREAPER)): a
// process orphaned below one of its servers, such as a daemon that forked
// twice and called setsid, is reparented to the agent instead of init, so
// that StopGroup and Kill can still find and end it. An error means the
// agent is no subreaper; a watchdog that cannot start is skipped.
func Setup() error {
	startWatchdog()
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
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

func startChild(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() { // lives as long as the process, on purpose
			runtime.LockOSThread() // never unlocked: the thread must not exit
			for r := range spawner.reqs {
				r.done <- startRegistered(r.cmd)
			}
		}()
	})
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawner.reqs <- r
	if err := <-r.done; err != nil {
		return err
	}
	tellWatchdog('+', cmd.Process.Pid)
	return nil
}

// watchdogScript is the watchdog: it reads "+ PGID" and "- PGID" lines on
// fd 3 and, when they end because the agent exited (even by SIGKILL, which
// runs no teardown), kills the process groups still listed. The parent-death
// signal ends each server; this ends what else is in its group. The
// watchdog runs in a group of its own, detached from the agent (its parent
// shell exits at once), and ignores the signals a terminal or a process
// manager sends the agent's group.
const watchdogScript = `(
trap '' HUP INT TERM
gs=' '
while read -r op g; do
	case $op in
	+) gs="$gs$g " ;;
	-) case $gs in *" $g "*) gs="${gs%% $g *} ${gs#* $g }" ;; esac ;;
	esac
done
for g in $gs; do kill -9 -$g 2>/dev/null; done
) <&3 3<&- >/dev/null 2>&1 &`

// watchdog is the agent's end of the watchdog's input.
var watchdog struct {
	sync.Mutex
	w *os.File // nil when the watchdog could not start
}

// startWatchdog starts /bin/sh running watchdogScript. Without /bin/sh there
// is no watchdog, and SIGKILL of the agent ends only the servers themselves.
func startWatchdog() {
	r, w, err := os.Pipe() // close-on-exec: no server inherits w
	if err != nil {
		return
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript)
	cmd.ExtraFiles = []*os.File{r}
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Run() // the shell exits at once, leaving the watchdog
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return
	}
	watchdog.Lock()
	watchdog.w = w
	watchdog.Unlock()
}

// tellWatchdog adds (op '+') or removes (op '-') the process group pgid from
// the watchdog's list.
func tellWatchdog(op byte, pgid int) {
	watchdog.Lock()
	defer watchdog.Unlock()
	if watchdog.w != nil {
		_, _ = watchdog.w.WriteString(string(op) + " " + strconv.Itoa(pgid) + "\n")
	}
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

// forget removes a child whose status exec.Cmd has collected.
func forget(pid int) {
	children.Lock()
	delete(children.started, pid)
	children.Unlock()
}

// procInfo is one line of /proc/<pid>/stat, in part.
type procInfo struct {
	ppid, pgid int
	zombie     bool
	start      uint64 // start time in clock ticks since boot
}

// readProcs reads every process of /proc. Processes that vanish while it
// reads are left out.
func readProcs() map[int]procInfo {
	entries, _ := os.ReadDir("/proc")
	procs := make(map[int]procInfo, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, ok := readProc(pid); ok {
			procs[pid] = info
		}
	}
	return procs
}

// readProc parses /proc/<pid>/stat (proc(5)): the fields after the command
// name, which is in parentheses and may hold anything.
func readProc(pid int) (procInfo, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return procInfo{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] state, f[1] ppid, f[2] pgrp, ... f[19] starttime.
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procInfo{}, false
	}
	return procInfo{ppid: ppid, pgid: pgid, zombie: f[0] == "Z" || f[0] == "X", start: start}, true
}

// descendants returns every process below root in procs, by parent links.
func descendants(procs map[int]procInfo, root int) []int {
	kids := make(map[int][]int)
	for pid, info := range procs {
		kids[info.ppid] = append(kids[info.ppid], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// track records the current descendants of p's child, so that the sweep
// still knows them once they have been orphaned.
func (p *Process) track() {
	if p.Cmd.Process == nil {
		return
	}
	procs := readProcs()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.remember(procs, p.Cmd.Process.Pid)
}

// remember adds the descendants of root in procs to p.seen; p.mu is held.
func (p *Process) remember(procs map[int]procInfo, root int) {
	if p.seen == nil {
		p.seen = make(map[int]procID)
	}
	for _, d := range descendants(procs, root) {
		if _, ok := p.seen[d]; !ok {
			p.seen[d] = procID{procs[d].start}
		}
	}
}

// sweepRounds bounds the sweep: each round kills what it finds, and a
// descendant may fork while it is being killed.
const sweepRounds = 200

// sweep kills every process left of p's tree once p's child is gone: the
// descendants seen by track and their own descendants, the members of its
// process group, and the orphans the agent adopted as subreaper from it —
// those seen in the tree or still in its group, and, when no other child
// started by Start is alive to claim them, every other adopted orphan. It
// reaps the adopted orphans it killed, and repeats until none is left.
func (p *Process) sweep() {
	if p.Cmd.Process == nil {
		return
	}
	root := p.Cmd.Process.Pid
	self := os.Getpid()
	for range sweepRounds {
		procs := readProcs()
		p.mu.Lock()
		for pid, id := range p.seen {
			if info, ok := procs[pid]; ok && info.start == id.start {
				p.remember(procs, pid)
			}
		}
		children.Lock()
		alone := len(children.started) == 0
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
			if !seen && info.pgid != root && !(adopted && alone) {
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
			tellWatchdog('-', root)
			return
		}
		for _, pid := range targets {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond) // let the kernel deliver the kills
	}
}
