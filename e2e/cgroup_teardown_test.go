package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// cgroupMount returns where cgroup v2 is mounted and this process's cgroup
// below it, or skips the test when there is no writable cgroup v2 (the
// agent, a child of this process, then takes the fallback, which has the
// gap the test is about).
func cgroupMount(t *testing.T) (mount, own string) {
	t.Helper()
	procCgroup, _ := os.ReadFile("/proc/self/cgroup")
	for line := range strings.Lines(string(procCgroup)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			own = p
		}
	}
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	for line := range strings.Lines(string(mountinfo)) {
		pre, post, ok := strings.Cut(line, " - ")
		if f := strings.Fields(pre); ok && len(f) >= 5 && f[3] == "/" && strings.HasPrefix(post, "cgroup2 ") {
			mount = f[4]
			break
		}
	}
	if mount == "" || !strings.HasPrefix(own, "/") {
		t.Skipf("no cgroup v2 (mount %q, cgroup %q)", mount, own)
	}
	probe := filepath.Join(mount, own, fmt.Sprintf("acp-agent-e2e-check-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil && !os.IsExist(err) {
		t.Skipf("cgroup v2 not writable here: %v", err)
	}
	_ = os.Remove(probe)
	return mount, own
}

// TestTeardown_EnvClearedDaemonEndsWhileAnotherSessionRuns is the issue's
// case through the built agent: a stdio server that, before serving,
// starts a daemon with a cleared environment (env -i, setsid, orphaned at
// once: adopted by the agent), while another session's server runs. The
// daemon must end with its session (session/close), or with the agent
// (stdin EOF, SIGKILL: the watchdog), and the agent's cgroups must go.
func TestTeardown_EnvClearedDaemonEndsWhileAnotherSessionRuns(t *testing.T) {
	t.Parallel()
	mount, _ := cgroupMount(t)
	var bins []string
	for _, name := range []string{"env", "setsid", "sleep"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bins = append(bins, p)
	}
	tests := []struct {
		name      string
		agentEnds bool
		end       func(a *agent, sid string) error
	}{
		{"session/close", false, func(a *agent, sid string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := a.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)})
			return err
		}},
		{"stdin EOF", true, func(a *agent, _ string) error {
			if err := a.CloseStdin(); err != nil {
				return err
			}
			return a.Wait(30 * time.Second)
		}},
		{"SIGKILL", true, func(a *agent, _ string) error { return a.Cmd.Process.Kill() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := startAgent(t)
			agentPid := a.Cmd.Process.Pid
			a.newSession(t.TempDir(), fixtureServer("fixture", filepath.Join(t.TempDir(), "log")))
			var keep int
			for _, p := range descendants(agentPid) {
				if strings.Contains(cmdline(p), "mcp-fixture") {
					keep = p
				}
			}
			if keep == 0 {
				t.Fatal("no fixture process below the agent")
			}

			cwd := t.TempDir() // the pid file is in it: the daemonizer runs in workspace-write mode
			pidFile := filepath.Join(cwd, "pid")
			script := fmt.Sprintf(`%s -i %s /bin/sh -c '%s 1000 </dev/null >/dev/null 2>&1 & echo $! > %s'; exec "$0"`,
				bins[0], bins[1], bins[2], pidFile)
			sid := a.newSession(cwd, acpclient.Stdio("daemonizer", "/bin/sh", []string{"-c", script, fixtureBin}, map[string]string{}))
			daemon := testutil.ReadPIDFiles(t, filepath.Dir(pidFile), "pid")[0]
			testutil.WaitFor(t, 30*time.Second, func() bool {
				ppid, ok := parentOf(daemon)
				return ok && ppid == agentPid
			}, "daemon %d never adopted by the agent %d", daemon, agentPid)
			t.Cleanup(func() { _ = syscall.Kill(daemon, syscall.SIGKILL) })
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", daemon))
			if err != nil || strings.Contains(string(env), "ACP_AGENT_SERVER_TAG") {
				t.Fatalf("the daemon's environment (%v) was not cleared: %q", err, env)
			}
			cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", daemon))
			var rel string
			for line := range strings.Lines(string(cg)) {
				if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
					rel = p
				}
			}
			if !strings.Contains(rel, "/acp-agent-"+strconv.Itoa(agentPid)+"/") {
				t.Fatalf("the daemon runs in cgroup %q, not in one of the agent's (acp-agent-%d)", rel, agentPid)
			}

			if err := tt.end(a, sid); err != nil {
				t.Fatal(err)
			}
			for _, p := range waitAllGone([]int{daemon}, 30*time.Second) {
				t.Errorf("daemon %d (%s) outlived its session (%s) while another session ran", p, cmdline(p), tt.name)
			}
			gone := filepath.Join(mount, rel) // the server's cgroup
			if tt.agentEnds {
				gone = filepath.Dir(gone) // the agent's base cgroup
			}
			testutil.WaitFor(t, 30*time.Second, func() bool {
				_, err := os.Lstat(gone)
				return os.IsNotExist(err)
			}, "cgroup %s still there after %s", gone, tt.name)
			if !tt.agentEnds && !testutil.Alive(keep) {
				t.Error("closing one session ended another session's server")
			}
		})
	}
}

// escapeLauncher writes, in dir, escape.sh and the FIFO "ready", and returns
// a shell command that starts escape.sh as a daemon (an empty environment:
// no tag; setsid; orphaned at once, as the shell that starts it exits) and
// waits until it has tried to leave its cgroup. The daemon writes its pid
// to "pid", writes it to target's cgroup.procs, records in "moved" what the
// kernel said ("moved", or "refused: <error>"), then sleeps.
func escapeLauncher(t *testing.T, dir, target string) string {
	t.Helper()
	script := fmt.Sprintf("echo $$ > pid\n"+
		"if echo $$ 2>err > %s; then echo moved > moved; else echo \"refused: $(cat err)\" > moved; fi\n"+
		"echo > ready\n"+
		"exec sleep 600\n", filepath.Join(target, "cgroup.procs"))
	if err := os.WriteFile(filepath.Join(dir, "escape.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "ready"), 0o600); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`cd %s && /bin/sh -c 'env -i PATH="$PATH" setsid /bin/sh escape.sh </dev/null >/dev/null 2>&1 &' && read x < ready`, dir)
}

// TestTeardown_ProcessThatLeftItsCgroupEndsWithItsSession is issue 33's
// cgroup escape through the built agent: a command of run_command, or a
// stdio server, starts a daemon (env -i, setsid, orphaned: adopted by the
// agent) that writes its own pid to the cgroup.procs of the agent's own
// cgroup, writable here as the agent's is. Where the kernel refuses the
// move (a hierarchy with nsdelegate, the child in a cgroup namespace of its
// own) the daemon stays in its cgroup; where it lets it happen (no
// nsdelegate, as here) the daemon is still in the child's cgroup
// namespace. Either way it must end with its session (session/close) or
// with the agent (SIGKILL: the watchdog) while another session runs.
// Before the namespace, it outlived both.
func TestTeardown_ProcessThatLeftItsCgroupEndsWithItsSession(t *testing.T) {
	t.Parallel()
	mount, own := cgroupMount(t)
	target := filepath.Join(mount, own)
	for _, name := range []string{"env", "setsid", "sleep"} {
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	closeSession := func(a *agent, sid string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := a.Conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(sid)})
		return err
	}
	tests := []struct {
		name       string
		runCommand bool // the daemon comes from run_command, else from a stdio server
		agentEnds  bool
		end        func(a *agent, sid string) error
	}{
		{"run_command, session/close", true, false, closeSession},
		{"stdio server, session/close", false, false, closeSession},
		{"stdio server, SIGKILL", false, true, func(a *agent, _ string) error { return a.Cmd.Process.Kill() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var a *agent
			var fake *fakemodel.Server
			var perms *permissionAnswers
			if tt.runCommand {
				a, fake, perms = startCommandAgent(t, &acpclient.Recorder{})
			} else {
				// Full access: in the other modes Landlock refuses the
				// server's write to cgroup.procs, and the escape this
				// test is about cannot happen.
				a = startAgentWith(t, nil, "--config", writeConfig(t, map[string]any{"sandbox": map[string]any{"mode": "full-access"}}))
			}
			agentPid := a.Cmd.Process.Pid
			a.newSession(t.TempDir(), fixtureServer("fixture", filepath.Join(t.TempDir(), "log")))
			var keep int
			for _, p := range descendants(agentPid) {
				if strings.Contains(cmdline(p), "mcp-fixture") {
					keep = p
				}
			}
			if keep == 0 {
				t.Fatal("no fixture process below the agent")
			}

			dir := t.TempDir()
			launch := escapeLauncher(t, dir, target)
			var sid string
			if tt.runCommand {
				sid = a.newSession(dir)
				fake.Push(runCommandCall("call_escape", launch), fakemodel.Turn{Text: "Done."})
				perms.queue("allow_once")
				if stop, out := a.prompt(sid, "run it"); stop != acpsdk.StopReasonEndTurn {
					t.Fatalf("stop %s:\n%s", stop, dump(out))
				}
			} else {
				sid = a.newSession(t.TempDir(), acpclient.Stdio("escaper", "/bin/sh", []string{"-c", launch + ` && exec "$0"`, fixtureBin}, map[string]string{}))
			}
			daemon := testutil.ReadPIDFiles(t, dir, "pid")[0]
			t.Cleanup(func() { _ = syscall.Kill(daemon, syscall.SIGKILL) })
			moved, err := os.ReadFile(filepath.Join(dir, "moved")) // written before "ready" let the launcher go on
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("the daemon's move to %s: %s", target, strings.TrimSpace(string(moved)))
			if testutil.Alive(daemon) {
				cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", daemon))
				if strings.HasPrefix(string(moved), "moved") && strings.Contains(string(cg), "/acp-agent-"+strconv.Itoa(agentPid)+"/") {
					t.Errorf("the daemon says it moved, yet runs in the agent's cgroup: %s", cg)
				}
				if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", daemon)); err == nil && strings.Contains(string(env), "ACP_AGENT_SERVER_TAG") {
					t.Fatalf("the daemon's environment was not cleared: %q", env)
				}
			}

			if err := tt.end(a, sid); err != nil {
				t.Fatal(err)
			}
			for _, p := range waitAllGone([]int{daemon}, 30*time.Second) {
				cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p))
				t.Errorf("daemon %d (%s, cgroup %s) left its cgroup (%s) and outlived its session (%s)", p, cmdline(p), strings.TrimSpace(string(cg)), strings.TrimSpace(string(moved)), tt.name)
			}
			if !tt.agentEnds && !testutil.Alive(keep) {
				t.Error("closing one session ended another session's server")
			}
		})
	}
}
