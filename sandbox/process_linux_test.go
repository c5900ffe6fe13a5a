package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// As the agent does: orphans below the children are adopted by the test.
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
	if !alive(keep) {
		t.Fatal("ending one child killed an orphan of another live child, in the other's process group")
	}
	StopGroup(o, 5*time.Second, closeOther)
	waitDead(t, keep)
}

// waitLeftGroup waits until pid runs in a process group other than pgid
// (setsid has run).
func waitLeftGroup(t *testing.T, pid, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if info, ok := readProc(pid); ok && info.pgid != pgid {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never left group %d", pid, pgid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
