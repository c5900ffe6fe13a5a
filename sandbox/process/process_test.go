package process

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// waitDead fails the test unless pid is gone within a generous deadline.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	testutil.WaitFor(t, 15*time.Second, func() bool { return !testutil.Alive(pid) }, "process %d still alive", pid)
}

// readPid waits for a pid written to path by a child script.
func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testutil.WaitFor(t, 10*time.Second, func() bool {
		if data, err := os.ReadFile(path); err == nil {
			fmt.Sscan(string(data), &pid)
		}
		return pid > 0
	}, "pid never written")
	return pid
}

func TestStopGroup_SweepsGrandchildrenAfterGracefulExit(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// The leader exits as soon as its stdin closes; its background child
	// would outlive it without the group sweep.
	cmd := Command(t.Context(), "sh", []string{"-c", "sleep 300 & echo $! > " + pidFile + "; read line; exit 0"}, dir, []string{"PATH=" + os.Getenv("PATH")})
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	grandchild := readPid(t, pidFile)
	start := time.Now()
	StopGroup(p, 5*time.Second, func() { _ = stdin.Close() })
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("graceful stop took %v; it should not wait for the grace period", d)
	}
	waitDead(t, grandchild)
}

func TestStopGroup_EscalatesToSignals(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// The leader ignores SIGTERM and stdin; its child is in the same group.
	cmd := Command(t.Context(), "sh", []string{"-c", "trap '' TERM; sleep 300 & echo $! > " + pidFile + "; while :; do sleep 1; done"}, dir, []string{"PATH=" + os.Getenv("PATH")})
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	grandchild := readPid(t, pidFile)
	start := time.Now()
	StopGroup(p, 200*time.Millisecond, func() {})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("StopGroup took %v", d)
	}
	waitDead(t, cmd.Process.Pid)
	waitDead(t, grandchild)
}

func TestCommand_Defaults(t *testing.T) {
	cmd := Command(t.Context(), "true", nil, "/tmp", nil)
	if cmd.Env == nil || len(cmd.Env) != 0 {
		t.Errorf("Env = %v, want empty, never inherited", cmd.Env)
	}
	if cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setpgid || cmd.Dir != "/tmp" || cmd.WaitDelay <= 0 {
		t.Errorf("cmd = %+v", cmd)
	}
}
