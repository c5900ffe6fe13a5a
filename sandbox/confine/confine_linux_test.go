package confine_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
	"github.com/seed02d3eb6b/acp-agent/sandbox/process"
)

func TestMain(m *testing.M) {
	// The confined starts here run this binary as their launcher, then as
	// the dialing helper.
	confine.Main()
	dialHelper()
	// As the agent does: the subreaper, and a cgroup per child where
	// cgroup v2 is writable.
	if err := process.Setup(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// dialEnv, set to a host:port, makes the test binary a helper that dials
// it over TCP and exits: 0 connected, 13 refused with EACCES, 1 otherwise.
const dialEnv = "SANDBOX_TEST_DIAL"

// dialHelper is the helper, run from TestMain.
func dialHelper() {
	addr, ok := os.LookupEnv(dialEnv)
	if !ok {
		return
	}
	var d net.Dialer
	d.SetMultipathTCP(false) // Landlock rules TCP, not MPTCP
	c, err := d.Dial("tcp", addr)
	switch {
	case err == nil:
		_ = c.Close()
		os.Exit(0)
	case errors.Is(err, os.ErrPermission):
		os.Exit(13)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// needLandlock skips the test unless the kernel has Landlock ABI min or
// later, and returns the ABI.
func needLandlock(t testing.TB, min int) int {
	abi := confine.ABI()
	if abi < min {
		t.Skipf("kernel Landlock ABI %d, need %d", abi, min)
	}
	return abi
}

// runConfined starts cmd through the launcher with r, as a server would be
// started (Command, Start), and returns its combined output and exit error
// once it has been waited for.
func runConfined(t testing.TB, cmd *exec.Cmd, r *confine.Rules) (string, error) {
	t.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if r != nil {
		if err := confine.Wrap(cmd, *r); err != nil {
			t.Fatal(err)
		}
	}
	p, err := process.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	return out.String(), p.Err()
}

func TestConfine_WritesOnlyInsideTheWriteDirs(t *testing.T) {
	abi := needLandlock(t, 1)
	t.Logf("kernel Landlock ABI %d", abi)
	inside, outside := t.TempDir(), t.TempDir()
	r := &confine.Rules{FS: true, Read: []string{"/"}, Write: []string{inside, "/dev/null"}}
	env := []string{"PATH=" + os.Getenv("PATH"), "INSIDE=" + inside, "OUTSIDE=" + outside}

	out, err := runConfined(t, process.Command(t.Context(), "sh", []string{"-c", `echo x > "$INSIDE/f" && echo ok 2>/dev/null`}, inside, env), r)
	if err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("write inside the write dir: %v, output %q", err, out)
	}
	if data, err := os.ReadFile(filepath.Join(inside, "f")); err != nil || string(data) != "x\n" {
		t.Fatalf("file written inside: %q, %v", data, err)
	}

	out, err = runConfined(t, process.Command(t.Context(), "sh", []string{"-c", `echo x > "$OUTSIDE/f"`}, inside, env), r)
	if err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("write outside the write dirs: %v, output %q; want EACCES", err, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file appeared outside: %v", err)
	}
}

// TestConfine_KeepsTheStartedProcess checks that the launcher execs in
// place: the command runs as the very process Start forked (its pid, so
// its process group, parent-death signal and cgroup), with no_new_privs
// and without the rules variable.
func TestConfine_KeepsTheStartedProcess(t *testing.T) {
	needLandlock(t, 1)
	dir := t.TempDir()
	r := &confine.Rules{FS: true, Read: []string{"/"}, Write: []string{dir}}
	cmd := process.Command(t.Context(), "sh", []string{"-c", `echo $$; grep NoNewPrivs /proc/self/status; env | grep -c ` + confine.RulesEnv + ` || true`}, dir, []string{"PATH=" + os.Getenv("PATH")})
	out, err := runConfined(t, cmd, r)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("output %q", out)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	if lines[0] != pid {
		t.Errorf("the command runs as pid %s, Start forked %s", lines[0], pid)
	}
	if !strings.HasSuffix(lines[1], "1") {
		t.Errorf("no_new_privs: %q", lines[1])
	}
	if lines[2] != "0" {
		t.Errorf("%s reached the command", confine.RulesEnv)
	}
}

func TestConfine_NetworkFalseRefusesTCPConnect(t *testing.T) {
	needLandlock(t, 4)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // ends when ln is closed
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, network := range []bool{true, false} {
		t.Run("network "+strconv.FormatBool(network), func(t *testing.T) {
			env := []string{dialEnv + "=" + ln.Addr().String()}
			r := &confine.Rules{FS: true, Read: []string{"/"}, Network: network}
			out, err := runConfined(t, process.Command(t.Context(), self, nil, t.TempDir(), env), r)
			var exit *exec.ExitError
			switch {
			case network && err != nil:
				t.Fatalf("connect with network allowed: %v, %s", err, out)
			case !network && (!errors.As(err, &exit) || exit.ExitCode() != 13):
				t.Fatalf("connect with network false: %v, %s; want EACCES (13)", err, out)
			}
		})
	}
}

// BenchmarkStart compares a plain start of true with one through the
// launcher: Start to Done, cgroup and teardown bookkeeping included.
func BenchmarkStart(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip(err)
	}
	dir := b.TempDir()
	for _, tt := range []struct {
		name string
		r    *confine.Rules
	}{
		{"plain", nil},
		{"confined", &confine.Rules{FS: true, Read: []string{"/"}, Write: []string{dir}, Scoped: true}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			if tt.r != nil {
				needLandlock(b, 1)
			}
			for b.Loop() {
				if out, err := runConfined(b, process.Command(b.Context(), truePath, nil, dir, []string{}), tt.r); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}

// TestConfine_ScopedCannotSignalOtherChildren checks the scoping of ABI 6:
// a confined process cannot signal a process outside its Landlock domain,
// such as another child of the agent, while an unconfined one can.
func TestConfine_ScopedCannotSignalOtherChildren(t *testing.T) {
	needLandlock(t, 6)
	dir := t.TempDir()
	sleeper := process.Command(t.Context(), "sleep", []string{"60"}, dir, []string{"PATH=" + os.Getenv("PATH")})
	other, err := process.Start(sleeper)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Kill()
	pid := strconv.Itoa(sleeper.Process.Pid)
	for _, scoped := range []bool{false, true} {
		r := &confine.Rules{FS: true, Read: []string{"/"}, Write: []string{dir}, Network: true, Scoped: scoped}
		out, err := runConfined(t, process.Command(t.Context(), "sh", []string{"-c", "kill -0 " + pid}, dir, []string{"PATH=" + os.Getenv("PATH")}), r)
		if scoped && (err == nil || !strings.Contains(out, "ermitted")) {
			t.Errorf("scoped: kill -0 of another child: %v, %q; want EPERM", err, out)
		}
		if !scoped && err != nil {
			t.Errorf("not scoped: kill -0 of another child: %v, %q", err, out)
		}
	}
}

// TestConfine_NarrowedReads checks that a rule set with Read narrowed
// refuses reading outside it and its system directories.
func TestConfine_NarrowedReads(t *testing.T) {
	needLandlock(t, 1)
	dir, secret := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "key"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, _ := confine.For(confine.WorkspaceWrite, confine.Workspace{Cwd: dir}, confine.Server{Read: []string{dir}}, "/bin/sh")
	out, err := runConfined(t, process.Command(t.Context(), "sh", []string{"-c", "cat " + filepath.Join(secret, "key")}, dir, []string{"PATH=" + os.Getenv("PATH")}), &r)
	if err == nil || strings.Contains(out, "s3cret") || !strings.Contains(out, "Permission denied") {
		t.Fatalf("read outside the read list: %v, %q; want EACCES", err, out)
	}
}

// TestConfine_LauncherFailureNamesTheMode checks what a start the launcher
// cannot carry out says: the command, the mode and the cause, exit 126.
func TestConfine_LauncherFailureNamesTheMode(t *testing.T) {
	needLandlock(t, 1)
	dir := t.TempDir()
	cmd := process.Command(t.Context(), "/bin/true", nil, dir, nil)
	cmd.Path = filepath.Join(dir, "missing") // resolved, then gone
	r := &confine.Rules{Mode: confine.WorkspaceWrite, FS: true, Read: []string{"/"}, Write: []string{dir}}
	out, err := runConfined(t, cmd, r)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 126 || !strings.Contains(out, "confining "+cmd.Args[2]) || !strings.Contains(out, "(workspace-write mode)") {
		t.Fatalf("%v, %q; want exit 126 naming the command and the mode", err, out)
	}
}
