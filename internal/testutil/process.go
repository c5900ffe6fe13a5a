//go:build unix

package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Alive reports whether the process pid exists and is not a zombie (on
// Linux, read from /proc/<pid>/stat: a zombie is an exited process that no
// one has reaped yet, so it has ended).
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return runtime.GOOS != "linux" // no /proc: signal 0 is all we know
	}
	// The state is the field after the command, which is in parentheses and
	// may itself hold ") ".
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	fields := strings.Fields(s[i+2:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// WaitGone reports whether pid was gone (see Alive) before d passed.
func WaitGone(pid int, d time.Duration) bool {
	return Eventually(d, func() bool { return !Alive(pid) })
}

// ReadPIDFiles waits (up to 30 s each) for the files names in dir to hold a
// process id, as a test command writes them ("echo $$ > sh.pid"), and
// returns the ids in the order of names.
func ReadPIDFiles(t testing.TB, dir string, names ...string) []int {
	t.Helper()
	out := make([]int, 0, len(names))
	for _, n := range names {
		var pid int
		WaitFor(t, 30*time.Second, func() bool {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				return false
			}
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil
		}, "no process id in %s", n)
		out = append(out, pid)
	}
	return out
}
