package process

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// noCgroupEnv, set to 1, has TestMain turn the cgroups off before Setup, so
// that the tests run against the fallback (TestProcesses_WithoutCgroups).
const noCgroupEnv = "ACP_AGENT_SANDBOX_TEST_NO_CGROUP"

// noCgroupNSEnv, set to 1, has TestMain keep children out of cgroup
// namespaces, so that the tests run as for an agent that may not make them
// (TestProcesses_WithoutCgroupNamespaces).
const noCgroupNSEnv = "ACP_AGENT_SANDBOX_TEST_NO_CGROUP_NS"

// requireCgroups returns the base cgroup, or skips the test, saying why,
// when Setup made none (no writable cgroup v2 here, or turned off).
func requireCgroups(t *testing.T) string {
	t.Helper()
	base, err := cgroupBase()
	if base == "" {
		t.Skipf("children get no cgroup here: %v", err)
	}
	return base
}

// cgroupOf returns pid's cgroup v2 path ("0::" line of /proc/<pid>/cgroup).
func cgroupOf(pid int) string {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	for line := range strings.Lines(string(data)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return p
		}
	}
	return ""
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// waitAdopted waits until pid has been orphaned and adopted by this process
// (the subreaper), so that no teardown can find it among its server's
// descendants any more.
func waitAdopted(t *testing.T, pid int) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, func() bool {
		info, ok := readProc(pid)
		return ok && info.ppid == os.Getpid()
	}, "process %d never adopted by %d", pid, os.Getpid())
}

// envClearedDaemon is a shell command that starts `sleep 1000` as a daemon
// with an empty environment (no ServerTagEnv): env -i, setsid, and a shell
// that exits at once, so that it is orphaned, then writes its pid to the
// file "pid" in the current directory.
func envClearedDaemon(t *testing.T) string {
	t.Helper()
	var paths []string
	for _, name := range []string{"env", "setsid", "sleep"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("no %s: %v", name, err)
		}
		paths = append(paths, p)
	}
	return fmt.Sprintf(`%s -i %s /bin/sh -c '%s 1000 </dev/null >/dev/null 2>&1 & echo $! > pid'`, paths[0], paths[1], paths[2])
}

// TestTeardown_EndsEnvClearedDaemonWhileAnotherServerRuns is the issue's
// case: a daemon that cleared its environment, called setsid and was
// orphaned (adopted by the agent) while another server ran. Its server's
// teardown must end it, however it ends, and leave the other server and
// what that one started alone. Before cgroups it survived: it carried no
// tag, was no longer in its server's tree, and another server was alive.
func TestTeardown_EndsEnvClearedDaemonWhileAnotherServerRuns(t *testing.T) {
	requireCgroups(t)
	daemonCmd := envClearedDaemon(t)
	for _, tt := range []struct {
		name string
		end  func(p *Process, closeStdin func())
	}{
		{"StopGroup", func(p *Process, closeStdin func()) { StopGroup(p, 5*time.Second, closeStdin) }},
		{"Kill", func(p *Process, _ func()) { p.Kill() }},
		{"StopGroup after the server exited", func(p *Process, closeStdin func()) {
			closeStdin()
			<-p.Done()
			StopGroup(p, 5*time.Second, func() {})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			otherDir := t.TempDir()
			o, closeOther := startScript(t, otherDir, "(sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid); read line; exit 0")
			defer StopGroup(o, 5*time.Second, closeOther)
			keep := readPid(t, filepath.Join(otherDir, "pid"))

			dir := t.TempDir()
			p, closeStdin := startScript(t, dir, daemonCmd+"; read line; exit 0")
			daemon := readPid(t, filepath.Join(dir, "pid"))
			waitAdopted(t, daemon)
			if env, err := os.ReadFile("/proc/" + strconv.Itoa(daemon) + "/environ"); err != nil || bytes.Contains(env, []byte(ServerTagEnv)) {
				t.Fatalf("the daemon's environment (%v) still holds %s: the test does not test a cleared one", err, ServerTagEnv)
			}

			tt.end(p, closeStdin)
			testutil.WaitFor(t, 30*time.Second, func() bool { return !testutil.Alive(daemon) },
				"daemon %d (env -i, setsid, orphaned) outlived its server while another server ran", daemon)
			if !testutil.Alive(o.Cmd.Process.Pid) || !testutil.Alive(keep) {
				t.Errorf("ending one server killed another (alive %v) or what it started (alive %v)",
					testutil.Alive(o.Cmd.Process.Pid), testutil.Alive(keep))
			}
			if exists(p.cgroup) {
				t.Errorf("the server's cgroup %s is still there after its teardown", p.cgroup)
			}
		})
	}
}

// TestStart_ChildInACgroupOfItsOwn checks that each child starts directly in
// a new cgroup below the base, that what it starts stays there, and that
// the cgroup goes with the teardown.
func TestStart_ChildInACgroupOfItsOwn(t *testing.T) {
	base := requireCgroups(t)
	own, err := ownCgroup()
	if err != nil {
		t.Fatal(err)
	}
	var ps []*Process
	var stops []func()
	var pids []int
	for range 2 {
		dir := t.TempDir()
		p, closeStdin := startScript(t, dir, "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid; read line; exit 0")
		defer StopGroup(p, 5*time.Second, closeStdin)
		ps, stops = append(ps, p), append(stops, closeStdin)
		pids = append(pids, readPid(t, filepath.Join(dir, "pid")))
	}
	if ps[0].cgroup == ps[1].cgroup {
		t.Fatalf("two children share cgroup %q", ps[0].cgroup)
	}
	for i, p := range ps {
		if filepath.Dir(p.cgroup) != base || !strings.HasPrefix(p.cgroup, own+"/") {
			t.Errorf("child %d's cgroup %q is not below the base %q", i, p.cgroup, base)
		}
		for _, pid := range []int{p.Cmd.Process.Pid, pids[i]} {
			if got := cgroupOf(pid); !strings.Contains(got, "/acp-agent-") || !strings.HasSuffix(p.cgroup, got) {
				t.Errorf("process %d runs in cgroup %q, want child %d's %q", pid, got, i, p.cgroup)
			}
		}
	}
	StopGroup(ps[0], 5*time.Second, stops[0])
	waitDead(t, pids[0])
	if exists(ps[0].cgroup) {
		t.Errorf("cgroup %s still there after the teardown", ps[0].cgroup)
	}
	if !testutil.Alive(pids[1]) {
		t.Error("ending one child killed what the other started")
	}
}

// TestSweep_WithoutCgroupKill checks the teardown for kernels before 5.14,
// which have no cgroup.kill: the cgroup is frozen and its members killed
// one by one, forks included, until it is empty.
func TestSweep_WithoutCgroupKill(t *testing.T) {
	requireCgroups(t)
	daemonCmd := envClearedDaemon(t)
	was := cgroups.noKill.Load()
	cgroups.noKill.Store(true)
	defer cgroups.noKill.Store(was)

	o, closeOther := startScript(t, t.TempDir(), "read line; exit 0")
	defer StopGroup(o, 5*time.Second, closeOther)
	dir := t.TempDir()
	// A daemon, and a second one that keeps forking.
	p, closeStdin := startScript(t, dir, daemonCmd+"; (setsid sh -c 'while :; do sleep 1 & wait; done' </dev/null >/dev/null 2>&1 & echo $! > pid2); read line; exit 0")
	daemon := readPid(t, filepath.Join(dir, "pid"))
	forker := readPid(t, filepath.Join(dir, "pid2"))
	waitAdopted(t, daemon)
	waitAdopted(t, forker)
	StopGroup(p, 5*time.Second, closeStdin)
	for _, pid := range []int{daemon, forker} {
		testutil.WaitFor(t, 30*time.Second, func() bool { return !testutil.Alive(pid) },
			"process %d outlived its server without cgroup.kill", pid)
	}
	if exists(p.cgroup) {
		t.Errorf("cgroup %s still there after the teardown", p.cgroup)
	}
	if !testutil.Alive(o.Cmd.Process.Pid) {
		t.Error("ending one server killed another")
	}
}

// TestWatchdog_KillsAndRemovesTheBaseCgroup checks what the watchdog does
// when the agent is gone (its input closes): everything below the base
// cgroup is killed, and the children's cgroups and the base are removed.
func TestWatchdog_KillsAndRemovesTheBaseCgroup(t *testing.T) {
	base := requireCgroups(t)
	tb := filepath.Join(filepath.Dir(base), fmt.Sprintf("acp-agent-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	for _, d := range []string{tb, tb + "/1", tb + "/2"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = writeCgroupFile(tb+"/cgroup.kill", "1")
		_ = waitCgroupEmpty(tb, 10*time.Second)
		_, _ = unix.Rmdir(tb+"/1"), unix.Rmdir(tb+"/2")
		_ = unix.Rmdir(tb)
	})
	fd, err := unix.Open(tb+"/1", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Not through Start: as if a server of an agent that died.
	cmd := exec.Command("sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > pid; exec sleep 300")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd}
	err = cmd.Start()
	_ = unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // collects its status, unless the reaper did; ends with it
	pids := []int{cmd.Process.Pid, readPid(t, filepath.Join(dir, "pid"))}

	w, err := runWatchdog(tb)
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Close() // the agent is gone
	for _, pid := range pids {
		testutil.WaitFor(t, 30*time.Second, func() bool { return !testutil.Alive(pid) },
			"process %d in the base cgroup outlived the agent", pid)
	}
	testutil.WaitFor(t, 30*time.Second, func() bool { return !exists(tb) }, "the watchdog left the base cgroup %s", tb)
}

// TestSetup_MakesTheBaseCgroupWhereItCan checks that the fallback is taken
// only where it must be: when this process may create a cgroup below its
// own, Setup made the base there.
func TestSetup_MakesTheBaseCgroupWhereItCan(t *testing.T) {
	if cgroups.off {
		t.Skip("cgroups turned off")
	}
	own, err := ownCgroup()
	if err != nil {
		t.Skipf("no cgroup v2: %v", err)
	}
	probe := filepath.Join(own, fmt.Sprintf("acp-agent-check-%d", os.Getpid()))
	if err := unix.Mkdir(probe, 0o755); err != nil {
		t.Skipf("cgroup v2 at %s not writable: %v", own, err)
	}
	_ = unix.Rmdir(probe)
	base, err := cgroupBase()
	if want := filepath.Join(own, "acp-agent-"+strconv.Itoa(os.Getpid())); base != want || err != nil {
		t.Fatalf("base cgroup %q (%v), want %q", base, err, want)
	}
	if !exists(base + "/cgroup.procs") {
		t.Errorf("%s is no cgroup", base)
	}
}

// TestProcesses_WithoutCgroups runs this package's process tests again with
// the cgroups turned off, in a new test process: the fallback (tag,
// subreaper, process groups) must still pass them all. The tests that need
// a cgroup skip there.
func TestProcesses_WithoutCgroups(t *testing.T) {
	if os.Getenv(noCgroupEnv) != "" {
		t.Skip("already without cgroups")
	}
	if _, err := cgroupBase(); err != nil {
		t.Skip("no cgroups here: the other tests ran without them")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^Test(StopGroup|Kill|Sweep|Start|Reaper|Teardown|Watchdog|Setup|Descendants|ReadProc)", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), noCgroupEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("without cgroups: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestStopGroup_KillsDaemonWhileAnotherServerRuns")) {
		t.Fatalf("the fallback run did not run the process tests:\n%s", out)
	}
	if !bytes.Contains(out, []byte("--- SKIP: TestTeardown_EndsEnvClearedDaemonWhileAnotherServerRuns")) {
		t.Errorf("the fallback run did not take the fallback:\n%s", out)
	}
}

// TestProcesses_WithoutCgroupNamespaces runs this package's process tests
// again with cgroups but without cgroup namespaces (as for an agent that is
// not root), in a new test process: they must all pass, the escape test
// skipping.
func TestProcesses_WithoutCgroupNamespaces(t *testing.T) {
	if os.Getenv(noCgroupEnv) != "" || os.Getenv(noCgroupNSEnv) != "" {
		t.Skip("already without cgroups or their namespaces")
	}
	if c := Contained(); !c.Namespace {
		t.Skipf("no cgroup namespaces here: the other tests ran without them (%s)", c)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^Test(StopGroup|Kill|Sweep|Start|Reaper|Teardown|Watchdog|Setup)", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), noCgroupNSEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("without cgroup namespaces: %v\n%s", err, out)
	}
	for _, want := range []string{
		"--- PASS: TestStart_ChildInACgroupOfItsOwn",
		"--- SKIP: TestTeardown_EndsAProcessThatMovedItselfOutOfItsCgroup",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the run without cgroup namespaces lacks %q:\n%s", want, out)
		}
	}
}

func TestCgroupDir(t *testing.T) {
	const hybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 27 0:38 / /tmp/cg2 rw,relatime - cgroup2 none rw
`
	const unified = `22 20 0:21 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	const nested = `50 40 0:30 /user.slice /mnt/my\040cgroups rw,relatime - cgroup2 cgroup2 rw
`
	for _, tt := range []struct {
		name, cgroup, mountinfo, want string
	}{
		{"hybrid, root", "9:name=systemd:/\n4:memory:/x\n0::/\n", hybrid, "/sys/fs/cgroup/unified"},
		{"hybrid", "0::/a/b\n", hybrid, "/sys/fs/cgroup/unified/a/b"},
		{"unified, systemd scope", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn-1.scope\n", unified,
			"/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn-1.scope"},
		{"mount of a subtree, escaped space", "0::/user.slice/u\n", nested, "/mnt/my cgroups/u"},
		{"outside the mounted subtree", "0::/system.slice/u\n", nested, ""},
		{"a prefix is no parent", "0::/user.slicer\n", nested, ""},
		{"no cgroup2 mount", "0::/\n", "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n", ""},
		{"cgroup v1 only", "4:memory:/x\n", hybrid, ""},
		{"outside the namespace", "0::/../../x\n", hybrid, ""},
		{"deleted", "0::/gone (deleted)\n", hybrid, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cgroupDir([]byte(tt.cgroup), []byte(tt.mountinfo))
			if got != tt.want || (err == nil) != (tt.want != "") {
				t.Errorf("cgroupDir = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// escapeScript writes the script escape.sh to dir and returns a shell
// command that starts it as a daemon with an empty environment (env -i: no
// ServerTagEnv), in a session of its own (setsid), orphaned at once (the
// shell that starts it exits): its pid is in the file "pid" in the current
// directory. The daemon writes its cgroup as it sees it to "cg", then its
// own pid to target's cgroup.procs, records in "moved" whether the kernel
// let it ("moved", or "refused: <error>"), and sleeps.
func escapeScript(t *testing.T, dir, target string) string {
	t.Helper()
	for _, name := range []string{"env", "setsid", "sleep"} {
		if _, err := exec.LookPath(name); err != nil {
			t.Skipf("no %s: %v", name, err)
		}
	}
	script := fmt.Sprintf("grep '^0::' /proc/self/cgroup > cg\n"+
		"if echo $$ 2>err > %s; then echo moved > moved; else echo \"refused: $(cat err)\" > moved; fi\n"+
		"exec sleep 600\n", filepath.Join(target, "cgroup.procs"))
	if err := os.WriteFile(filepath.Join(dir, "escape.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return `env -i PATH="$PATH" setsid /bin/sh -c '/bin/sh escape.sh </dev/null >/dev/null 2>&1 & echo $! > pid'`
}

// TestTeardown_EndsAProcessThatMovedItselfOutOfItsCgroup is issue 33's
// escape: a process below a child writes its own pid to the cgroup.procs of
// an ancestor of the child's cgroup (the agent's own cgroup, which is
// writable when the agent's is), after clearing its environment and
// leaving the process group and the tree. Each child starts in a cgroup
// namespace rooted at its own cgroup: where the hierarchy is mounted with
// nsdelegate the kernel refuses the move; where it is not (root on a host
// without it, as on the machines these tests run on) the move succeeds,
// and teardown must find the process by its cgroup namespace. Either way
// the process must not outlive its server's teardown. Before the namespace
// it did: moved out, untagged and adopted while another child ran, nothing
// found it.
func TestTeardown_EndsAProcessThatMovedItselfOutOfItsCgroup(t *testing.T) {
	base := requireCgroups(t)
	c := Contained()
	if !c.Namespace {
		t.Skipf("children get no cgroup namespace here (%v): %s", c.NamespaceErr, c)
	}
	for _, tt := range []struct {
		name string
		end  func(p *Process, closeStdin func())
	}{
		{"StopGroup", func(p *Process, closeStdin func()) { StopGroup(p, 5*time.Second, closeStdin) }},
		{"Kill", func(p *Process, _ func()) { p.Kill() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Another child runs, so that the escaped orphan is not taken
			// for this one's by the subreaper rule.
			o, closeOther := startScript(t, t.TempDir(), "read line; exit 0")
			defer StopGroup(o, 5*time.Second, closeOther)
			dir := t.TempDir()
			target := filepath.Dir(base) // the agent's own cgroup
			p, closeStdin := startScript(t, dir, escapeScript(t, dir, target)+"; read line; exit 0")
			pid := readPid(t, filepath.Join(dir, "pid"))
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			waitAdopted(t, pid)
			var moved string
			testutil.WaitFor(t, 30*time.Second, func() bool {
				b, _ := os.ReadFile(filepath.Join(dir, "moved"))
				moved = string(b)
				return strings.HasSuffix(moved, "\n")
			}, "the daemon never tried the move")
			cg, _ := os.ReadFile(filepath.Join(dir, "cg"))
			if got := strings.TrimSpace(string(cg)); got != "0::/" {
				t.Errorf("the daemon saw its cgroup as %q, want 0::/ (a namespace rooted at its child's cgroup)", got)
			}
			if c.NSDelegate {
				if !strings.HasPrefix(moved, "refused") {
					t.Errorf("the hierarchy has nsdelegate, yet the move out of the namespace was let through: %q", moved)
				}
			} else {
				t.Logf("no nsdelegate here: the kernel let the move happen (%q); teardown must find the process by its namespace", strings.TrimSpace(moved))
			}
			if strings.HasPrefix(moved, "moved") && strings.HasSuffix(cgroupOf(pid), p.cgroup[len(base):]) {
				t.Errorf("the daemon says it moved, yet runs in its child's cgroup %s", cgroupOf(pid))
			}
			if env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err != nil || bytes.Contains(env, []byte(ServerTagEnv)) {
				t.Fatalf("the daemon's environment (%v) still holds %s: the test does not test a cleared one", err, ServerTagEnv)
			}
			tt.end(p, closeStdin)
			testutil.WaitFor(t, 30*time.Second, func() bool { return !testutil.Alive(pid) },
				"process %d (%q, cgroup %s) outlived its server's teardown", pid, strings.TrimSpace(moved), cgroupOf(pid))
			if !testutil.Alive(o.Cmd.Process.Pid) {
				t.Error("ending one child killed another")
			}
		})
	}
}

// TestWatchdog_KillsWhatLeftItsCgroupByNamespace: when the agent dies
// without teardown, the watchdog ends a process that moved itself out of
// its server's cgroup (where the kernel lets it: no nsdelegate) by the
// cgroup namespace the agent listed, "c+ cgroup:[N]".
func TestWatchdog_KillsWhatLeftItsCgroupByNamespace(t *testing.T) {
	base := requireCgroups(t)
	if c := Contained(); !c.Namespace {
		t.Skipf("children get no cgroup namespace here: %s", c)
	}
	tb := filepath.Join(filepath.Dir(base), fmt.Sprintf("acp-agent-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(tb, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = writeCgroupFile(tb+"/cgroup.kill", "1")
		_ = waitCgroupEmpty(tb, 10*time.Second)
		_ = unix.Rmdir(tb)
	})
	fd, err := unix.Open(tb, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Not through Start: as if a server of an agent that died, whose
	// daemon then moved itself to the agent's cgroup.
	cmd := exec.Command("sh", "-c", escapeScript(t, dir, filepath.Dir(base))+"; exec sleep 300")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd, Unshareflags: unix.CLONE_NEWCGROUP}
	err = cmd.Start()
	_ = unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // collects its status, unless the reaper did; ends with it
	ns := cgroupNSOf(cmd.Process.Pid)
	daemon := readPid(t, filepath.Join(dir, "pid"))
	t.Cleanup(func() { _ = syscall.Kill(daemon, syscall.SIGKILL) })
	testutil.WaitFor(t, 30*time.Second, func() bool { return exists(filepath.Join(dir, "moved")) }, "the daemon never tried the move")
	if ns == "" || ns == cgroupNSOf(os.Getpid()) || cgroupNSOf(daemon) != ns {
		t.Fatalf("namespaces: server %q, daemon %q, this process %q", ns, cgroupNSOf(daemon), cgroupNSOf(os.Getpid()))
	}
	if cgroups.nsDelegate {
		moved, _ := os.ReadFile(filepath.Join(dir, "moved"))
		t.Logf("nsdelegate: the move was refused (%s); the watchdog ends the daemon all the same", moved)
	}

	w, err := runWatchdog(tb) // the daemon left tb: only its namespace finds it
	if err != nil {
		t.Fatal(err)
	}
	// Namespaces added and taken off again first, as the sweeps of many
	// servers do: the list must stay what is left (an unquoted name in a
	// pattern once doubled it at each removal).
	var lines strings.Builder
	for i := range 64 {
		fmt.Fprintf(&lines, "c+ cgroup:[%d]\n", i+1)
	}
	for i := range 64 {
		fmt.Fprintf(&lines, "c- cgroup:[%d]\n", i+1)
	}
	lines.WriteString("c+ " + ns + "\n")
	if _, err := w.WriteString(lines.String()); err != nil {
		t.Fatal(err)
	}
	_ = w.Close() // the agent is gone
	testutil.WaitFor(t, 30*time.Second, func() bool { return !testutil.Alive(daemon) },
		"the daemon %d, moved out of its cgroup, outlived the agent", daemon)
	testutil.WaitFor(t, 30*time.Second, func() bool { return !exists(tb) }, "the watchdog left the base cgroup %s", tb)
}

func TestNSDelegate(t *testing.T) {
	for _, tt := range []struct {
		name, mountinfo string
		want            bool
	}{
		{"systemd, unified", "22 20 0:21 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n", true},
		{"hybrid without", "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n", false},
		{"in the mount options only", "41 31 0:38 / /x rw,nsdelegate - cgroup2 cgroup2 rw\n", false},
		{"another file system", "41 31 0:38 / /x rw - tmpfs tmpfs rw,nsdelegate\n", false},
		{"last option", "41 31 0:38 / /x rw - cgroup2 none rw,nsdelegate\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := nsDelegate([]byte(tt.mountinfo)); got != tt.want {
				t.Errorf("nsDelegate = %v, want %v", got, tt.want)
			}
		})
	}
}
