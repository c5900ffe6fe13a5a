// Package confine confines a child process with Landlock before it runs:
// the mechanism behind the session modes ([Mode]: read-only,
// workspace-write, full-access) that stdio MCP servers, run_command and
// the editor terminals run_command uses run under (issue 34). [For]
// compiles a mode, a session's [Workspace] and a server's own [Server]
// rules into [Rules]; [Wrap] and [Launch] start a command under them
// through the launcher, [Main]; [Supported] says what this kernel
// enforces.
//
// # Design: the agent re-executes itself as a launcher
//
// Landlock restricts the calling thread (and, with TSYNC or libpsx, its
// process), and every process it then starts; a restriction cannot be
// lifted. So the child must restrict itself between fork and exec. Go's
// os/exec runs no code of ours there (SysProcAttr.UseLandlock arrives with
// Go 1.28; this module builds with 1.26), so [Wrap] rewrites the command
// to run /proc/self/exe, the agent's own binary, as "confine PATH ARGV...",
// with the rules in the environment variable [RulesEnv]. That process is
// the child process.Start forked: the same pid, process group,
// parent-death signal (set by the fork on the spawner's long-lived thread,
// and kept across exec), cgroup and cgroup namespace. [Main], called first
// thing in the agent's main (and in TestMain of test binaries that start
// confined processes), sees the subcommand, builds a ruleset with
// go-landlock's Config.NewRulesetFD, sets no_new_privs and restricts its
// own OS thread (locked, never unlocked), then execve's the real command
// with the rules variable removed: execve ends every other thread, so the
// program runs with the restricted thread's domain alone, and no libpsx
// all-threads call is needed.
//
// The alternative, restricting an OS thread of the agent before it forks,
// is not viable: the restriction is permanent for that thread, so it would
// have to be a fresh thread per start, and the sandbox forks every child
// from one long-lived locked thread because Linux sends the parent-death
// signal when the forking thread exits, not the process: a per-start
// thread that exits after the fork would SIGKILL the child at once (and
// one kept alive per child costs a thread per server). Restricting the
// spawner thread itself would confine every later child with the first
// one's rules.
//
// The price is one more execve of the agent's binary and its Go runtime
// start per confined process: BenchmarkStart (and BenchmarkConfinedStart in e2e) measures
// it (make bench).
//
// Rules are applied with go-landlock's best effort: a kernel with an
// older ABI enforces what it knows, and [Support.Gaps] names the rest.
package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Subcommand is the launcher's first argument: a process started as
// "<agent binary> confine PATH ARGV0 ARGS..." with [RulesEnv] set is a
// launcher ([Main]), whatever its argv[0] (an editor's terminal cannot set
// one).
const Subcommand = "confine"

// RulesEnv is the environment variable that carries the launcher's [Rules],
// as JSON. The launcher removes it before it execs the real command.
const RulesEnv = "ACP_AGENT_CONFINE"

// Rules is what a confined process may do ([For] builds them from a mode).
// Its zero value refuses every filesystem access once FS is set.
type Rules struct {
	// Mode is the session mode the rules come from, named in the launcher's
	// errors.
	Mode Mode `json:"mode,omitempty"`
	// FS applies the filesystem rules: reading and writing only Read and
	// Write. False leaves the filesystem alone.
	FS bool `json:"fs,omitempty"`
	// Read lists the directories (and files) readable and executable
	// beneath them. Missing paths are skipped.
	Read []string `json:"read,omitempty"`
	// Write lists the directories (and files) readable, writable and
	// executable beneath them, where files may be moved between them.
	// Missing paths are skipped.
	Write []string `json:"write,omitempty"`
	// Devices lets the process write the sinks (/dev/null, /dev/zero,
	// /dev/full) and use its terminal (/dev/tty, /dev/pts), ioctl included.
	Devices bool `json:"devices,omitempty"`
	// Network allows TCP (and, ABI 10+, UDP) bind and connect; false
	// refuses them all (Landlock ABI 4+; unenforced on older kernels).
	Network bool `json:"network"`
	// Scoped refuses signals to, and abstract Unix socket connections to,
	// processes outside the confined one's Landlock domain (ABI 6+): the
	// agent and its other children.
	Scoped bool `json:"scoped,omitempty"`
}

// ErrUnsupported is returned by [Wrap] where Landlock does not exist
// (outside Linux).
var ErrUnsupported = errors.New("confine: Landlock is Linux only")

// Wrap rewrites cmd, not started yet, to start through the launcher: the
// agent's running binary (/proc/self/exe) with argv [Subcommand, path,
// argv...] and
// [RulesEnv] added to its environment. cmd.Path must already be resolved
// (exec.Command does that; a lookup error stays in cmd.Err for Start to
// return). Call it before process.Start; the launcher only exists in a
// binary whose main calls [Main] first.
func Wrap(cmd *exec.Cmd, r Rules) error {
	if !supported {
		return ErrUnsupported
	}
	if cmd.Process != nil {
		return errors.New("confine: command already started")
	}
	args, env, err := launchArgs(r, cmd.Path, cmd.Args)
	if err != nil {
		return err
	}
	// The running binary, even if its file was replaced or removed since.
	cmd.Path = "/proc/self/exe"
	cmd.Args = append([]string{cmd.Path}, args...)
	kept := slices.DeleteFunc(slices.Clone(cmd.Env), func(kv string) bool {
		return strings.HasPrefix(kv, RulesEnv+"=")
	})
	cmd.Env = append(kept, env)
	return nil
}

// Launch returns the program, its arguments (argv[1:]) and the one
// environment variable ("NAME=value") that run path with argv under r
// through the launcher, for a process the agent does not fork itself: an
// editor's terminal (ACP terminal/create) on the agent's machine.
func Launch(r Rules, path string, argv []string) (prog string, args []string, env string, err error) {
	if !supported {
		return "", nil, "", ErrUnsupported
	}
	self, err := os.Executable()
	if err != nil {
		return "", nil, "", fmt.Errorf("confine: finding the agent's binary: %w", err)
	}
	args, env, err = launchArgs(r, path, argv)
	return self, args, env, err
}

// launchArgs returns the launcher's arguments after argv[0] and its rules
// variable.
func launchArgs(r Rules, path string, argv []string) ([]string, string, error) {
	spec, err := json.Marshal(r)
	if err != nil {
		return nil, "", err
	}
	if len(argv) == 0 {
		argv = []string{path}
	}
	return append([]string{Subcommand, path}, argv...), RulesEnv + "=" + string(spec), nil
}
