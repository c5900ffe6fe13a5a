package sandbox

import (
	"context"
	"errors"
	"os/exec"
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
// group, grandchildren included, can be signalled at once. When ctx is done
// the group is killed; WaitDelay bounds how long Wait then waits for the
// child's pipes.
func Command(ctx context.Context, name string, args []string, dir string, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{} // never inherit the agent's environment
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return SignalGroup(cmd, syscall.SIGKILL)
	}
	cmd.WaitDelay = time.Second
	return cmd
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

// StopGroup ends the process group of cmd, given a function that asks the
// child to stop gracefully and returns once it has exited (for an MCP stdio
// server: closing the client session, which closes the child's stdin and
// waits). If that takes longer than grace, the group gets SIGTERM, and
// killDelay later SIGKILL. Whatever the child did, the group is swept with
// SIGKILL at the end, so no grandchild survives. StopGroup returns within
// about grace+killDelay+cmd.WaitDelay; grace <= 0 means DefaultGrace.
func StopGroup(cmd *exec.Cmd, grace time.Duration, stop func()) {
	if grace <= 0 {
		grace = DefaultGrace
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		stop()
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		_ = SignalGroup(cmd, syscall.SIGTERM)
		timer.Reset(killDelay)
		select {
		case <-done:
		case <-timer.C:
			_ = SignalGroup(cmd, syscall.SIGKILL)
			<-done
		}
	}
	_ = SignalGroup(cmd, syscall.SIGKILL)
}
