package confine

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// Support is what the kernel can enforce: its Landlock ABI version
// (https://docs.kernel.org/userspace-api/landlock.html). The zero value
// is a kernel without Landlock.
type Support struct {
	// ABI is the Landlock ABI version, 0 for none.
	ABI int
	// OS is runtime.GOOS, named where Landlock does not exist.
	OS string
}

// Supported returns this machine's Support, read once.
func Supported() Support { return supportOnce() }

var supportOnce = sync.OnceValue(func() Support { return Support{ABI: ABI(), OS: runtime.GOOS} })

// Gaps lists, in words, the parts of r the kernel would not enforce; none
// when it enforces all of r. Rules that only refuse more than asked on an
// older kernel (moving files between directories before ABI 2) are not
// gaps.
func (s Support) Gaps(r Rules) []string {
	var gaps []string
	if s.ABI < 1 {
		if r.FS {
			gaps = append(gaps, "file access")
		}
	} else if r.FS && s.ABI < 3 {
		gaps = append(gaps, "truncating files (Landlock ABI 3)")
	}
	if !r.Network && s.ABI < 4 {
		gaps = append(gaps, "network: false (Landlock ABI 4)")
	}
	if r.Scoped && s.ABI < 6 {
		gaps = append(gaps, "signals and abstract Unix sockets to the agent's other processes (Landlock ABI 6)")
	}
	return gaps
}

// Kernel names what the kernel offers, such as "Landlock ABI 7", or why
// it offers nothing.
func (s Support) Kernel() string {
	switch {
	case s.OS != "" && s.OS != "linux":
		return "no Landlock: " + s.OS + " has none, and acp-agent does not confine processes there yet"
	case s.ABI < 1:
		return "no Landlock: the kernel lacks it or it is off (boot parameter lsm=)"
	}
	return fmt.Sprintf("Landlock ABI %d", s.ABI)
}

// Describe says what mode m enforces on this kernel, in a sentence or
// two: the session's notice when it is not all, and /status.
func (s Support) Describe(m Mode) string {
	if m == FullAccess {
		return "Full access: commands and MCP servers run unconfined and can change anything you can (a server's own sandbox config still applies)."
	}
	r, _ := For(m, Workspace{Cwd: "/"}, Server{Network: new(false)}, "")
	gaps := s.Gaps(r)
	if len(gaps) == 0 {
		return fmt.Sprintf("%s: enforced by the kernel (%s).", m.Name(), s.Kernel())
	}
	if s.ABI < 1 {
		return fmt.Sprintf("%s is not enforced: %s. Commands and MCP servers can write anywhere you can; only tools are refused by mode. sandbox.require refuses to start them instead.", m.Name(), s.Kernel())
	}
	return fmt.Sprintf("%s: enforced by the kernel (%s), except %s. sandbox.require refuses to start a process a missing rule would apply to.", m.Name(), s.Kernel(), strings.Join(gaps, "; "))
}

// NotEnforcedError is the error of a start that config sandbox.require
// refuses: the kernel cannot enforce Gaps of the process's rules.
type NotEnforcedError struct {
	Mode Mode
	Gaps []string
	// Kernel is [Support.Kernel].
	Kernel string
}

func (e *NotEnforcedError) Error() string {
	return fmt.Sprintf("not started: sandbox.require is set and the kernel cannot enforce %s (%s, %s mode)", strings.Join(e.Gaps, ", "), e.Kernel, e.Mode)
}
