//go:build !linux

package process

import "syscall"

// sysProcAttr puts the child in a process group of its own. Platforms other
// than Linux have no parent-death signal.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// Setup is a no-op outside Linux: descendants that leave their server's
// process group (setsid, daemons) are not tracked there, and nothing ends
// the servers if the agent dies by SIGKILL (they see their stdin close).
func Setup() error { return nil }

func (p *Process) startChild() error { return p.Cmd.Start() }

func (p *Process) reaped() {}

// awaitExit returns at once outside Linux: cmd.Wait waits.
func awaitExit(int) {}

// killCgroup is a no-op outside Linux: there are no cgroups.
func (p *Process) killCgroup() {}

// track is a no-op outside Linux: only the process group is ended.
func (p *Process) track() {}

// sweep kills what is left of the process group. The child has been reaped,
// so if its pid was reused since, another group may be hit: outside Linux
// nothing tells them apart.
func (p *Process) sweep() { _ = SignalGroup(p.Cmd, syscall.SIGKILL) }

// Contained returns the zero Containment outside Linux: no cgroups.
func Contained() Containment { return Containment{} }
