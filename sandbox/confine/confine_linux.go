package confine

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

const supported = true

// launchFailed is the launcher's exit status when it cannot confine or
// exec the command (as a shell's "cannot execute").
const launchFailed = 126

// ABI returns the kernel's Landlock ABI version, 0 when it has none (not
// built in, or not enabled at boot: lsm=).
func ABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// Main runs the launcher and never returns when the process is one
// (argv[1] is [Subcommand]; without [RulesEnv] or a command it says how it
// is used and exits 2); otherwise it returns at once. Call it first in main, and in TestMain of a package whose tests
// start confined processes. A launcher that cannot confine or exec its
// command says why on stderr, naming the mode, and exits 126 (as a shell's
// "cannot execute").
func Main() {
	if len(os.Args) < 2 || os.Args[1] != Subcommand {
		return
	}
	spec, ok := os.LookupEnv(RulesEnv)
	if !ok || len(os.Args) < 4 {
		fmt.Fprintf(os.Stderr, "acp-agent %s PATH ARGV0 [ARG...]: the launcher the agent starts its confined processes through; it needs their Landlock rules as JSON in %s\n", Subcommand, RulesEnv)
		os.Exit(2)
	}
	var r Rules
	err := json.Unmarshal([]byte(spec), &r)
	if err == nil {
		err = launch(r, os.Args[2], os.Args[3:])
	} else {
		err = fmt.Errorf("reading the rules in %s: %w", RulesEnv, err)
	}
	mode := ""
	if r.Mode != "" {
		mode = " (" + string(r.Mode) + " mode)"
	}
	fmt.Fprintf(os.Stderr, "acp-agent: confining %s%s: %v\n", os.Args[2], mode, err)
	os.Exit(launchFailed)
}

// launch restricts the calling thread by r and execs path with argv and
// the environment less RulesEnv. It returns only on failure.
func launch(r Rules, path string, argv []string) error {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, RulesEnv+"=")
	})
	fd, flags, err := config(r).NewRulesetFD(rules(r)...)
	if err != nil {
		return err
	}
	runtime.LockOSThread() // never unlocked: the thread is replaced by the exec
	if fd >= 0 {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
		}
		if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
			return fmt.Errorf("landlock_restrict_self: %w", err)
		}
		_ = unix.Close(fd)
	}
	return syscall.Exec(path, argv, env)
}

// config is the Landlock configuration for r: every access right the
// newest ABI go-landlock knows (V11), downgraded to what the kernel has
// (BestEffort), less the network rights when r allows the network and the
// scopes when r does not ask for them. Denials after the exec are logged
// (ABI 7+ audit), as they would not be by default.
func config(r Rules) landlock.Config {
	c := landlock.V11
	if !r.FS {
		c.HandledAccessFS = 0
	}
	if r.Network {
		c.HandledAccessNet = 0
	}
	if !r.Scoped {
		c.Scoped = 0
	}
	return c.BestEffort().EnableLoggingForSubprocesses()
}

// rules returns r's filesystem rules: a directory's rights apply beneath
// it; a file gets the rights that apply to files. Missing paths are
// skipped. Writable directories may have files moved between them
// (refer, ABI 2+) and their pathname Unix sockets connected (ABI 9+);
// read-only ones neither.
func rules(r Rules) []landlock.Rule {
	if !r.FS {
		return nil
	}
	var out []landlock.Rule
	readDirs, readFiles := split(r.Read)
	writeDirs, writeFiles := split(r.Write)
	if len(readDirs) > 0 {
		out = append(out, landlock.RODirs(readDirs...).IgnoreIfMissing())
	}
	if len(readFiles) > 0 {
		out = append(out, landlock.ROFiles(readFiles...).IgnoreIfMissing())
	}
	if len(writeDirs) > 0 {
		out = append(out, landlock.RWDirs(writeDirs...).WithRefer().WithResolveUnix().IgnoreIfMissing())
	}
	if len(writeFiles) > 0 {
		out = append(out, landlock.RWFiles(writeFiles...).IgnoreIfMissing())
	}
	if r.Devices {
		devDirs, devFiles := split(devices)
		out = append(out, landlock.RWFiles(devFiles...).WithIoctlDev().IgnoreIfMissing())
		if len(devDirs) > 0 {
			out = append(out, landlock.RWDirs(devDirs...).WithIoctlDev().IgnoreIfMissing())
		}
	}
	return out
}

// split parts paths into directories and the rest; a path that cannot be
// read counts as a directory, for go-landlock to skip.
func split(paths []string) (dirs, files []string) {
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			files = append(files, p)
		} else {
			dirs = append(dirs, p)
		}
	}
	return dirs, files
}
