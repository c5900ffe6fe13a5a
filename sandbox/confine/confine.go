// Package confine confines a child process with Landlock before it runs:
// the mechanism behind the session modes (read-only, workspace-write,
// full-access) that stdio MCP servers, run_command and the terminal
// fallback run under (issue 34). It is a spike: [Rules] is what the modes
// will compile to, [Wrap] and [Main] are the two ends of the launcher.
//
// # Design: the agent re-executes itself as a launcher
//
// Landlock restricts the calling thread (and, with TSYNC or libpsx, its
// process), and every process it then starts; a restriction cannot be
// lifted. So the child must restrict itself between fork and exec. Go's
// os/exec runs no code of ours there (SysProcAttr.UseLandlock arrives with
// Go 1.28; this module builds with 1.26), so [Wrap] rewrites the command
// to run /proc/self/exe, the agent's own binary, under the argv[0] marker
// [Arg0], with the rules in the environment variable [RulesEnv] and the
// real command after them. That process is the child sandbox.Start forked:
// the same pid, process group, parent-death signal (set by the fork on the
// spawner's long-lived thread, and kept across exec), cgroup and cgroup
// namespace. [Main], called first thing in the agent's main (and in the
// sandbox test binary's TestMain), sees the marker, builds a ruleset with
// go-landlock's Config.NewRulesetFD, sets no_new_privs and restricts its
// own OS thread (locked, never unlocked), then execve's the real command
// with the marker variable removed: execve ends every other thread, so the
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
// start per confined process: see BenchmarkStart in package sandbox.
package confine

import (
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
)

// Arg0 is the launcher's argv[0]: with [RulesEnv] set, it tells [Main] that
// the process is a launcher, before any flag is parsed.
const Arg0 = "acp-agent-confine"

// RulesEnv is the environment variable that carries the launcher's [Rules],
// as JSON. The launcher removes it before it execs the real command.
const RulesEnv = "ACP_AGENT_CONFINE"

// Rules is what a confined process may do. Its zero value allows reading
// and writing nothing, and no TCP bind or connect; a process with it
// cannot even exec its command.
type Rules struct {
	// Read lists the directories (and files) readable and executable
	// beneath them. Missing paths are skipped.
	Read []string `json:"read,omitempty"`
	// Write lists the directories (and files) readable, writable and
	// executable beneath them. A missing path fails the start.
	Write []string `json:"write,omitempty"`
	// Network allows TCP (and, ABI 10+, UDP) bind and connect; false
	// refuses them all (Landlock ABI 4+; unenforced on older kernels).
	Network bool `json:"network"`
	// Scoped refuses signals to, and abstract Unix socket connections to,
	// processes outside the confined one's Landlock domain (ABI 6+): the
	// agent and its other children.
	Scoped bool `json:"scoped"`
}

// ErrUnsupported is returned by [Wrap] where Landlock does not exist
// (outside Linux).
var ErrUnsupported = errors.New("confine: Landlock is Linux only")

// Wrap rewrites cmd, not started yet, to start through the launcher:
// /proc/self/exe with argv [Arg0, path, argv...] and [RulesEnv] added to
// its environment. cmd.Path must already be resolved (exec.Command does
// that; a lookup error stays in cmd.Err for Start to return). Call it
// before sandbox.Start; the launcher only exists in a binary whose main
// calls [Main] first.
func Wrap(cmd *exec.Cmd, r Rules) error {
	if !supported {
		return ErrUnsupported
	}
	if cmd.Process != nil {
		return errors.New("confine: command already started")
	}
	spec, err := json.Marshal(r)
	if err != nil {
		return err
	}
	args := append([]string{Arg0, cmd.Path}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	cmd.Args = args
	env := slices.DeleteFunc(slices.Clone(cmd.Env), func(kv string) bool {
		return len(kv) > len(RulesEnv) && kv[:len(RulesEnv)+1] == RulesEnv+"="
	})
	cmd.Env = append(env, RulesEnv+"="+string(spec))
	return nil
}
