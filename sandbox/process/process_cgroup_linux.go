package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroups is the agent's cgroup v2 confinement (Linux). Setup creates the
// base cgroup, <the agent's own cgroup>/acp-agent-<pid>; Start then starts
// each child directly into a cgroup of its own below it (clone3 with
// CLONE_INTO_CGROUP), where every process it starts stays, whatever it does
// with its process group, session, parent or environment; when the agent
// may, the child then unshares a cgroup namespace rooted at that cgroup, so
// that a process moving itself out is refused (nsdelegate) or still found
// by its namespace. Teardown kills that cgroup (cgroup.kill) and removes
// it, then what is left in the namespace; the watchdog kills and removes
// the base, and what is in the listed namespaces, when the agent exits. Without a base (no cgroup v2, read-only,
// not delegated, too old a kernel) children get no cgroup, and teardown
// relies on the tag and the subreaper alone.
var cgroups struct {
	// off, set by tests before Setup, keeps Setup from creating the base:
	// every child then takes the fallback.
	off bool
	// noNS, set by tests before Setup, keeps children out of cgroup
	// namespaces of their own, as for an agent that may not make them.
	noNS bool
	// once makes Setup's attempt happen once per process.
	once sync.Once

	// mu guards base and err.
	mu sync.Mutex
	// base is the base cgroup's directory, "" when children get no cgroup:
	// none was created, or starting a child into one failed as unsupported.
	base string
	// err is why base is "" (nil while it is not), for tests and debugging.
	err error

	// ns says children start in a cgroup namespace of their own, rooted at
	// their cgroup (unshare CLONE_NEWCGROUP in the child, once it is in its
	// cgroup); nsErr is why not when a base exists but the kernel refused
	// that (EPERM: the agent lacks CAP_SYS_ADMIN). Guarded by mu.
	ns    bool
	nsErr error
	// nsDelegate says the cgroup v2 hierarchy is mounted with nsdelegate:
	// the kernel then refuses to move a process in a cgroup namespace to a
	// cgroup outside its namespace's root (cgroup.procs: ENOENT). Guarded
	// by mu.
	nsDelegate bool

	// noKill is set when the kernel has no cgroup.kill (before 5.14):
	// members are then frozen and killed one by one. Tests set it too.
	noKill atomic.Bool
	// seq numbers the children's cgroups: <base>/<seq>.
	seq atomic.Uint64
}

// cgroupDrainTimeout bounds how long teardown waits for a child's cgroup to
// empty once killed: SIGKILL is not refused, but a process in an
// uninterruptible sleep (a hung NFS read) takes as long as that lasts.
const cgroupDrainTimeout = 10 * time.Second

// cgroupRound is how long one round of the drain waits for the cgroup to
// empty before it kills again (a member forked while cgroup.kill was not
// available, or the notification was missed).
const cgroupRound = 100 * time.Millisecond

// setupCgroups creates the base cgroup and checks that a child can be
// started into a cgroup below it, once. Any failure leaves base "" (the
// fallback) with the reason in err. With a base, it then checks that such a
// child may make itself a cgroup namespace (probeCgroupNS), and reads
// whether the hierarchy is mounted with nsdelegate.
func setupCgroups() {
	cgroups.once.Do(func() {
		base, err := makeBaseCgroup()
		var nsErr error
		var delegate bool
		if err == nil {
			nsErr = errors.New("cgroup namespaces turned off")
			if !cgroups.noNS {
				nsErr = probeCgroupNS(base)
			}
			if mountinfo, merr := os.ReadFile("/proc/self/mountinfo"); merr == nil {
				delegate = nsDelegate(mountinfo)
			}
		}
		cgroups.mu.Lock()
		defer cgroups.mu.Unlock()
		cgroups.base, cgroups.err = base, err
		cgroups.ns, cgroups.nsErr, cgroups.nsDelegate = err == nil && nsErr == nil, nsErr, delegate
		if err == nil {
			if _, err := os.Stat(base + "/cgroup.kill"); err != nil {
				cgroups.noKill.Store(true)
			}
		}
	})
}

// Contained returns what Setup found keeps a session's processes in (see
// Containment); before Setup, the zero Containment.
func Contained() Containment {
	cgroups.mu.Lock()
	defer cgroups.mu.Unlock()
	c := Containment{Cgroup: cgroups.base, CgroupErr: cgroups.err, NSDelegate: cgroups.nsDelegate}
	if c.Cgroup != "" {
		c.Namespace, c.NamespaceErr = cgroups.ns, cgroups.nsErr
	}
	return c
}

// cgroupNS reports whether children start in a cgroup namespace of their
// own (see cgroups.ns).
func cgroupNS() bool {
	cgroups.mu.Lock()
	defer cgroups.mu.Unlock()
	return cgroups.ns && cgroups.base != ""
}

// cgroupBase returns the base cgroup's directory, or "" and why there is
// none.
func cgroupBase() (string, error) {
	cgroups.mu.Lock()
	defer cgroups.mu.Unlock()
	return cgroups.base, cgroups.err
}

// disableCgroups makes the children started from now on take the fallback;
// the base stays for the watchdog to remove, the children's cgroups for
// their teardown.
func disableCgroups(err error) {
	cgroups.mu.Lock()
	defer cgroups.mu.Unlock()
	cgroups.base, cgroups.err = "", err
}

// makeBaseCgroup creates the base cgroup below the agent's own and starts a
// probe into it (see probeCgroup). A base left by a dead agent that had the
// same pid is taken over.
func makeBaseCgroup() (string, error) {
	if cgroups.off {
		return "", errors.New("cgroups turned off")
	}
	own, err := ownCgroup()
	if err != nil {
		return "", err
	}
	base := filepath.Join(own, "acp-agent-"+strconv.Itoa(os.Getpid()))
	if err := unix.Mkdir(base, 0o755); err != nil && err != unix.EEXIST {
		return "", &os.PathError{Op: "mkdir", Path: base, Err: err}
	}
	if err := probeCgroup(base); err != nil {
		_ = unix.Rmdir(base)
		return "", err
	}
	return base, nil
}

// ownCgroup returns the directory of this process's cgroup v2, from
// /proc/self/cgroup and /proc/self/mountinfo (see cgroupDir).
func ownCgroup() (string, error) {
	procCgroup, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	return cgroupDir(procCgroup, mountinfo)
}

// probeCgroup starts a process into the cgroup dir the way Start does and
// reports whether that works. The process is forked with CLONE_INTO_CGROUP
// to exec the empty path, which fails with ENOENT: that error says the fork
// into the cgroup succeeded, any other is the fork's own (ENOSYS, EINVAL:
// an old kernel or a seccomp filter; EACCES: not delegated; EBUSY: not a
// leaf). A failed Start cannot be retried on the same exec.Cmd, hence the
// probe before the first child rather than a retry after it.
func probeCgroup(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	// The reaper must not take the probe's status: ForkExec waits for it.
	children.Lock()
	defer children.Unlock()
	_, err = syscall.ForkExec("", nil, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd},
	})
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return fmt.Errorf("starting a process into cgroup %s: %w", dir, err)
}

// probeCgroupNS starts a process into the cgroup dir as probeCgroup does,
// but with unshare(CLONE_NEWCGROUP) in the child before the exec, as Start
// does: ENOENT from the exec says the unshare succeeded; EPERM says the
// agent may not make cgroup namespaces (no CAP_SYS_ADMIN in its user
// namespace).
func probeCgroupNS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	children.Lock()
	defer children.Unlock()
	_, err = syscall.ForkExec("", nil, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd, Unshareflags: unix.CLONE_NEWCGROUP},
	})
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return fmt.Errorf("starting a process in a cgroup namespace of its own: %w", err)
}

// nsDelegate reports whether a cgroup2 mount in mountinfo has the
// nsdelegate option (a flag of the whole hierarchy: every cgroup2 mount
// shows it in its super options).
func nsDelegate(mountinfo []byte) bool {
	for line := range strings.Lines(string(mountinfo)) {
		_, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(post)
		if !ok || len(f) < 3 || f[0] != "cgroup2" {
			continue
		}
		for o := range strings.SplitSeq(f[2], ",") {
			if o == "nsdelegate" {
				return true
			}
		}
	}
	return false
}

// cgroupNSOf returns the cgroup namespace of the process pid, as the link
// /proc/<pid>/ns/cgroup reads ("cgroup:[4026532000]"), or "" when it
// cannot be read (the process is gone, or another user's).
func cgroupNSOf(pid int) string {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/cgroup")
	if err != nil {
		return ""
	}
	return ns
}

// cgroupDir returns the directory of the calling process's cgroup v2, given
// its /proc/self/cgroup (the "0::/path" line) and /proc/self/mountinfo (the
// first cgroup2 mount that shows that path).
func cgroupDir(procCgroup, mountinfo []byte) (string, error) {
	var path string
	for line := range strings.Lines(string(procCgroup)) {
		if p, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "0::"); ok {
			path = p
		}
	}
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "/..") || strings.HasSuffix(path, " (deleted)") {
		return "", fmt.Errorf("no usable cgroup v2 in /proc/self/cgroup (%q)", path)
	}
	for line := range strings.Lines(string(mountinfo)) {
		// ID parent major:minor root mountpoint options [optional...] - fstype source super
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		root, mnt := unescapeMount(f[3]), unescapeMount(f[4])
		if rel, ok := strings.CutPrefix(path, root); ok && (root == "/" || rel == "" || rel[0] == '/') {
			return filepath.Join(mnt, rel), nil
		}
	}
	return "", errors.New("no cgroup2 mount shows the agent's cgroup")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, …).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// newChildCgroup creates a cgroup for one child below the base and opens
// it for CLONE_INTO_CGROUP. It returns "" and -1 when there is no base or
// the cgroup cannot be made: the child then takes the fallback.
func newChildCgroup() (dir string, fd int) {
	base, _ := cgroupBase()
	if base == "" {
		return "", -1
	}
	for range 100 { // numbers a dead agent with the same pid left behind are skipped
		dir = base + "/" + strconv.FormatUint(cgroups.seq.Add(1), 10)
		err := unix.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if err != unix.EEXIST {
			return "", -1
		}
		dir = ""
	}
	if dir == "" {
		return "", -1
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return "", -1
	}
	return dir, fd
}

// cgroupUnsupported reports whether err, from starting a child into a
// cgroup, may be the fork's refusal of CLONE_INTO_CGROUP rather than an
// error of the exec (those errnos are rare from execve).
func cgroupUnsupported(err error) bool {
	for _, e := range []syscall.Errno{unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP, unix.EBUSY, unix.ENODEV, unix.EBADF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// killCgroup sends SIGKILL to every process in the cgroup dir, at once:
// "1" to cgroup.kill, which also catches processes forking meanwhile.
// Without cgroup.kill it freezes the cgroup (so that no member forks or
// exits and frees its pid in between) and kills the members listed in
// cgroup.procs; the drain repeats that until the cgroup is empty.
func killCgroup(dir string) {
	if !cgroups.noKill.Load() && writeCgroupFile(dir+"/cgroup.kill", "1") == nil {
		return
	}
	_ = writeCgroupFile(dir+"/cgroup.freeze", "1")
	for _, pid := range cgroupProcs(dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// drainCgroup kills everything in the cgroup dir, waits until it is empty
// (at most cgroupDrainTimeout), reaps the members that were orphans adopted
// by the agent, and removes the cgroup. A cgroup that does not empty in time
// stays, for the watchdog to remove when the agent exits.
func drainCgroup(dir string) {
	members := cgroupProcs(dir)
	deadline := time.Now().Add(cgroupDrainTimeout)
	for {
		killCgroup(dir)
		if waitCgroupEmpty(dir, min(time.Until(deadline), cgroupRound)) || time.Now().After(deadline) {
			break
		}
	}
	if len(members) > 0 {
		reapAdopted(members)
	}
	_ = unix.Rmdir(dir) // EBUSY if still populated: then the watchdog's
}

// reapAdopted reaps those of pids that are exited children of the agent not
// started by Start (orphans it adopted as subreaper); the reaper would get
// them at the next SIGCHLD anyway.
func reapAdopted(pids []int) {
	children.Lock()
	defer children.Unlock()
	for _, pid := range pids {
		if _, ours := children.started[pid]; !ours {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
	}
}

// waitCgroupEmpty waits up to d until the cgroup dir holds no live process
// ("populated 0" in cgroup.events, or the cgroup is gone) and reports
// whether it does. It sleeps in poll(2) on cgroup.events, which the kernel
// wakes when the file changes; if the file cannot be read it sleeps d.
func waitCgroupEmpty(dir string, d time.Duration) bool {
	fd, err := unix.Open(dir+"/cgroup.events", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return true
	}
	if err != nil {
		time.Sleep(d)
		return false
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	var buf [256]byte
	for {
		n, err := unix.Pread(fd, buf[:], 0)
		switch {
		case err == unix.ENODEV || err == unix.ENOENT: // removed meanwhile
			return true
		case err != nil:
			time.Sleep(time.Until(deadline))
			return false
		case !bytes.Contains(buf[:n], []byte("populated 1")):
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		_, _ = unix.Poll(fds, int(left/time.Millisecond)+1)
	}
}

// cgroupProcs returns the pids in the cgroup dir's cgroup.procs; none when
// it cannot be read.
func cgroupProcs(dir string) []int {
	data, err := readProcFile(dir+"/cgroup.procs", nil)
	if err != nil {
		return nil
	}
	var pids []int
	for f := range bytes.FieldsSeq(data) {
		if pid, err := strconv.Atoi(string(f)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// writeCgroupFile writes s to the cgroup file at path.
func writeCgroupFile(path, s string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(s))
	return err
}
