package process

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

func TestMain(m *testing.M) {
	// TestProcesses_WithoutCgroups runs the tests again this way.
	cgroups.off = os.Getenv(noCgroupEnv) != ""
	cgroups.noNS = os.Getenv(noCgroupNSEnv) != ""
	// As the agent does: orphans below the children are adopted by the test,
	// and each child gets a cgroup of its own where cgroup v2 is writable.
	if err := Setup(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

func TestDescendants_FollowsParentLinks(t *testing.T) {
	procs := map[int]procInfo{
		10: {ppid: 1}, 11: {ppid: 10}, 12: {ppid: 11}, 13: {ppid: 12},
		20: {ppid: 1}, 21: {ppid: 20}, 14: {ppid: 10},
	}
	got := descendants(procs, 10)
	slices.Sort(got)
	if want := []int{11, 12, 13, 14}; !slices.Equal(got, want) {
		t.Errorf("descendants(10) = %v, want %v", got, want)
	}
	if got := descendants(procs, 13); len(got) != 0 {
		t.Errorf("descendants of a leaf = %v", got)
	}
}

func TestReadProc_Self(t *testing.T) {
	info, ok := readProc(os.Getpid())
	if !ok || info.ppid != os.Getppid() || info.pgid != syscall.Getpgrp() || info.zombie || info.start == 0 {
		t.Errorf("readProc(self) = %+v, %v; ppid %d pgid %d", info, ok, os.Getppid(), syscall.Getpgrp())
	}
}

// startScript starts sh -c script as a server would be, with pid files in dir.
func startScript(t *testing.T, dir, script string) (*Process, func()) {
	t.Helper()
	cmd := Command(t.Context(), "sh", []string{"-c", script}, dir, []string{"PATH=" + os.Getenv("PATH")})
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return p, func() { _ = stdin.Close() }
}

// TestStopGroup_KillsDescendantsThatLeftTheGroup covers the two ways out of
// a server's process group: a child that calls setsid and is orphaned when
// the server exits, and a daemon that forks twice, so that it is orphaned
// (and adopted by the subreaper) while the server still runs.
func TestStopGroup_KillsDescendantsThatLeftTheGroup(t *testing.T) {
	for _, tt := range []struct{ name, spawn string }{
		{"setsid child", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid"},
		{"double-forked daemon", "(setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, closeStdin := startScript(t, dir, tt.spawn+"; read line; exit 0")
			escaped := readPid(t, filepath.Join(dir, "pid"))
			waitLeftGroup(t, escaped, p.Cmd.Process.Pid)
			StopGroup(p, 5*time.Second, closeStdin)
			waitDead(t, escaped)
		})
	}
}

// TestKill_KillsTheTreeAtOnce checks Kill on a child that ignores SIGTERM
// and stdin, with a grandchild that left its group.
func TestKill_KillsTheTreeAtOnce(t *testing.T) {
	dir := t.TempDir()
	p, _ := startScript(t, dir, "trap '' TERM; setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid; while :; do sleep 1; done")
	escaped := readPid(t, filepath.Join(dir, "pid"))
	waitLeftGroup(t, escaped, p.Cmd.Process.Pid)
	start := time.Now()
	p.Kill()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Kill took %v", d)
	}
	waitDead(t, p.Cmd.Process.Pid)
	waitDead(t, escaped)
}

// TestSweep_SparesOrphansOfOtherLiveChildren checks that ending one child
// does not kill what another live child started.
func TestSweep_SparesOrphansOfOtherLiveChildren(t *testing.T) {
	otherDir := t.TempDir()
	o, closeOther := startScript(t, otherDir, "(sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid); read line; exit 0")
	keep := readPid(t, filepath.Join(otherDir, "pid"))
	dir := t.TempDir()
	p, closeStdin := startScript(t, dir, "read line; exit 0")
	StopGroup(p, 5*time.Second, closeStdin)
	if !testutil.Alive(keep) {
		t.Fatal("ending one child killed an orphan of another live child, in the other's process group")
	}
	StopGroup(o, 5*time.Second, closeOther)
	waitDead(t, keep)
}

// TestSweep_SparesChildrenStartedBeforeTheServer checks that ending the
// last server does not kill a child of this process that other code
// started before the server (not through Start): it cannot be an orphan of
// the server's tree.
func TestSweep_SparesChildrenStartedBeforeTheServer(t *testing.T) {
	other := exec.Command("sleep", "300")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	// Start times count in clock ticks (10 ms): let the server start in a
	// later one, as anything started by other code a moment before does.
	info, ok := readProc(other.Process.Pid)
	if !ok {
		t.Fatalf("no /proc/%d/stat", other.Process.Pid)
	}
	testutil.WaitFor(t, 30*time.Second, func() bool { return uptimeTicks(t) > info.start },
		"the clock tick in which process %d started (%d) never passed", other.Process.Pid, info.start)
	dir := t.TempDir()
	p, closeStdin := startScript(t, dir, "read line; exit 0")
	StopGroup(p, 5*time.Second, closeStdin)
	if !testutil.Alive(other.Process.Pid) {
		t.Fatal("ending the last server killed a child of this process started before it, not by Start")
	}
}

// uptimeTicks is the time since boot in clock ticks (USER_HZ, 100 a
// second), the unit and clock of a process's start time in /proc: from
// /proc/uptime, seconds since boot with two decimals.
func uptimeTicks(t *testing.T) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	secs, _, _ := strings.Cut(string(data), " ")
	whole, frac, _ := strings.Cut(secs, ".")
	ticks, err := strconv.ParseUint(whole+frac, 10, 64)
	if err != nil || len(frac) != 2 {
		t.Fatalf("/proc/uptime: %q", data)
	}
	return ticks
}

// waitLeftGroup waits until pid runs in a process group other than pgid
// (setsid has run).
func waitLeftGroup(t *testing.T, pid, pgid int) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		info, ok := readProc(pid)
		return ok && info.pgid != pgid
	}, "process %d never left group %d", pid, pgid)
}

// TestStopGroup_KillsDaemonWhileAnotherServerRuns checks that a daemon that
// forked twice and called setsid — adopted by the agent before any teardown
// could see it in the server's tree — is ended with its server even while
// another server runs (so that adopted orphans cannot all be presumed the
// ending server's).
func TestStopGroup_KillsDaemonWhileAnotherServerRuns(t *testing.T) {
	o, closeOther := startScript(t, t.TempDir(), "read line; exit 0")
	defer StopGroup(o, 5*time.Second, closeOther)
	dir := t.TempDir()
	p, closeStdin := startScript(t, dir, "(setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid); read line; exit 0")
	daemon := readPid(t, filepath.Join(dir, "pid"))
	waitLeftGroup(t, daemon, p.Cmd.Process.Pid)
	StopGroup(p, 5*time.Second, closeStdin)
	waitDead(t, daemon)
	if !testutil.Alive(o.Cmd.Process.Pid) {
		t.Error("ending one server killed another")
	}
}

// TestStart_TagCannotBeForged checks that the child's ServerTagEnv is Start's
// own random value, whatever the environment given asked for.
func TestStart_TagCannotBeForged(t *testing.T) {
	dir := t.TempDir()
	cmd := Command(t.Context(), "sh", []string{"-c", `echo "$` + ServerTagEnv + `" > tag; read line`}, dir,
		[]string{"PATH=" + os.Getenv("PATH"), ServerTagEnv + "=forged"})
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer StopGroup(p, 5*time.Second, func() { _ = stdin.Close() })
	var got string
	testutil.Eventually(10*time.Second, func() bool {
		data, _ := os.ReadFile(filepath.Join(dir, "tag"))
		got = strings.TrimSpace(string(data))
		return got != ""
	})
	if got == "" || got == "forged" || got != p.tag {
		t.Errorf("child's %s = %q, want Start's tag %q", ServerTagEnv, got, p.tag)
	}
	n := 0
	for _, kv := range cmd.Env {
		if strings.HasPrefix(kv, ServerTagEnv+"=") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("cmd.Env holds %d %s entries, want 1", n, ServerTagEnv)
	}
}

// zombieChild reports whether pid is an exited child of this process that
// nobody has reaped.
func zombieChild(pid int) bool {
	info, ok := readProc(pid)
	return ok && info.zombie && info.ppid == os.Getpid()
}

// TestReaper_ReapsAdoptedOrphans checks that orphans adopted from a running
// server are reaped when they exit, not left as zombies until a teardown.
func TestReaper_ReapsAdoptedOrphans(t *testing.T) {
	dir := t.TempDir()
	p, closeStdin := startScript(t, dir, "for i in 1 2 3 4 5 6 7 8 9 10; do (sleep 0.05 </dev/null >/dev/null 2>&1 & echo $! >> pids); done; echo 1 > ready; read line; exit 0")
	defer StopGroup(p, 5*time.Second, closeStdin)
	readPid(t, filepath.Join(dir, "ready"))
	data, err := os.ReadFile(filepath.Join(dir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	pids := strings.Fields(string(data))
	if len(pids) != 10 {
		t.Fatalf("pids = %q", pids)
	}
	// One pid after the other, as each is gone, under one deadline.
	i := 0
	if !testutil.Eventually(15*time.Second, func() bool {
		for ; i < len(pids); i++ {
			pid, _ := strconv.Atoi(pids[i])
			if testutil.Alive(pid) || zombieChild(pid) {
				return false
			}
		}
		return true
	}) {
		pid, _ := strconv.Atoi(pids[i])
		t.Fatalf("orphan %d not reaped (zombie: %v)", pid, zombieChild(pid))
	}
}

// TestReaper_LeavesStartedChildrenToWait checks that the reaper never takes
// the exit status of a child started by Start, while orphans exit around it.
func TestReaper_LeavesStartedChildrenToWait(t *testing.T) {
	var ps []*Process
	for range 8 {
		p, _ := startScript(t, t.TempDir(), "(sleep 0.01 </dev/null >/dev/null 2>&1 &); exit 3")
		ps = append(ps, p)
	}
	for _, p := range ps {
		select {
		case <-p.Done():
		case <-time.After(15 * time.Second):
			t.Fatal("child never waited for")
		}
		if code := p.Cmd.ProcessState.ExitCode(); code != 3 {
			t.Errorf("exit code %d (err %v), want 3", code, p.Err())
		}
	}
}

// staleProcess is a Process whose child exited and was reaped long ago and
// whose pid now belongs to victim: what Kill or StopGroup would see if an
// unrelated process reused the pid of a server that crashed.
func staleProcess(t *testing.T, victim int) *Process {
	t.Helper()
	info, ok := readProc(victim)
	if !ok {
		t.Fatal("victim gone")
	}
	proc, err := os.FindProcess(victim)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	close(done)
	return &Process{Cmd: &exec.Cmd{Process: proc}, done: done, tag: "0123", rootStart: info.start - 1}
}

// TestTeardown_SparesReusedPid checks that Kill and StopGroup of a child
// reaped earlier do not signal, track or sweep whatever now has its pid (or
// its group id).
func TestTeardown_SparesReusedPid(t *testing.T) {
	for _, tt := range []struct {
		name string
		end  func(*Process)
	}{
		{"Kill", (*Process).Kill},
		{"StopGroup", func(p *Process) { StopGroup(p, time.Second, func() {}) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			v, closeStdin := startScript(t, dir, "sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid; read line; exit 0")
			defer StopGroup(v, 5*time.Second, closeStdin)
			child := readPid(t, filepath.Join(dir, "pid"))
			tt.end(staleProcess(t, v.Cmd.Process.Pid))
			if !testutil.Alive(v.Cmd.Process.Pid) || !testutil.Alive(child) {
				t.Errorf("the new owner of a reaped child's pid (alive %v) or its child (alive %v) was killed",
					testutil.Alive(v.Cmd.Process.Pid), testutil.Alive(child))
			}
		})
	}
}

// TestWatchdog_ForgetsGroupWhenLeaderIsReaped checks that a child that exits
// on its own is taken off the watchdog's list at once, so that the watchdog,
// if the agent dies later, never kills a group id that may have been reused;
// and that its cgroup namespace, when it has one, is taken off by the
// teardown's sweep (which lets the namespace go).
func TestWatchdog_ForgetsGroupWhenLeaderIsReaped(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	watchdog.Lock()
	old := watchdog.w
	watchdog.w = w
	watchdog.Unlock()
	restore := func() {
		watchdog.Lock()
		watchdog.w = old
		watchdog.Unlock()
		_ = w.Close()
	}
	p, _ := startScript(t, t.TempDir(), "exit 0")
	select {
	case <-p.Done():
	case <-time.After(15 * time.Second):
		restore()
		t.Fatal("child never exited")
	}
	p.mu.Lock()
	ns := p.cgroupNS
	p.mu.Unlock()
	p.Kill() // the teardown
	restore()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(p.Cmd.Process.Pid)
	want := "+ " + pid + "\n- " + pid + "\n"
	if ns != "" {
		want = "+ " + pid + "\nc+ " + ns + "\n- " + pid + "\nc- " + ns + "\n"
	}
	if got := string(data); got != want {
		t.Errorf("watchdog got %q, want %q", got, want)
	}
}

// TestReadProcFile checks that the raw /proc reader returns what
// os.ReadFile does, growing its buffer (16 bytes at first) as it reads.
func TestReadProcFile(t *testing.T) {
	for _, path := range []string{"/proc/self/stat", "/proc/self/environ", "/proc/self/cmdline"} {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readProcFile(path, make([]byte, 0, 16))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		// stat changes between reads (times); compare what does not.
		if path == "/proc/self/stat" {
			got, want = got[:bytes.IndexByte(got, ')')], want[:bytes.IndexByte(want, ')')]
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes, os.ReadFile %d", path, len(got), len(want))
		}
	}
	if _, err := readProcFile("/proc/self/no-such-file", nil); err == nil {
		t.Error("reading a missing file did not fail")
	}
}

// After Setup the agent is not dumpable: a process of the same user (a
// command of run_command, a stdio server) cannot read /proc/<agent>/environ,
// where the API keys are. Root reads it all the same (CAP_SYS_PTRACE), so
// the read itself is checked only when the tests do not run as root.
func TestSetup_HidesTheAgentFromItsChildren(t *testing.T) {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil || v != 0 {
		t.Fatalf("PR_GET_DUMPABLE = %d, %v; want 0 after Setup", v, err)
	}
	out, err := exec.Command("/bin/sh", "-c", "cat /proc/$PPID/environ").CombinedOutput()
	if os.Geteuid() != 0 && err == nil {
		t.Errorf("a child of the same user read the agent's environment (%d bytes)", len(out))
	}
}

// TestAwaitExit_LeavesStatusToWait checks that awaitExit returns once the
// child has exited and leaves its status to cmd.Wait.
func TestAwaitExit_LeavesStatusToWait(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "read line; exit 7")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		awaitExit(cmd.Process.Pid)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("awaitExit returned while the child was still running")
	default:
	}
	stdin.Close() // the child reads EOF and exits 7
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("awaitExit never returned after the child's exit")
	}
	if err := cmd.Wait(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("cmd.Wait after awaitExit: %v, want exit status 7", err)
	}
}
