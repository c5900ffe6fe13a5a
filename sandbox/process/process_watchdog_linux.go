package process

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// watchdogScript is the watchdog: it reads "+ PGID" and "- PGID" lines, and
// "c+ NS" and "c- NS" lines (NS a cgroup namespace as /proc/<pid>/ns/cgroup
// reads, "cgroup:[N]"), on fd 3 and, when they end because the agent exited
// (even by SIGKILL, which runs no teardown), kills the process groups still
// listed. The parent-death signal ends each server; this ends what else is
// in its group. Then it kills, in rounds until none is left, every process
// in a cgroup namespace still listed that started before the agent's end:
// what moved itself out of its cgroup (see Setup). A namespace's number
// may pass to a new namespace once the agent, which held it, is gone and it
// is empty; a process of that new one starts after the agent's end, and is
// spared (the start time of cut, run at the end, is the end). A name is
// quoted wherever it is a pattern: its brackets are no bracket expression.
// Given the
// base cgroup as $1, it then kills every process below it (cgroup.kill, or
// each pid of every cgroup.procs in rounds on kernels without it) and
// removes the children's cgroups and the base, retrying for about 10 s while
// they empty. The watchdog runs in a group of its own, in the agent's
// cgroup, detached from the agent (its parent shell exits at once), and
// ignores the signals a terminal or a process manager sends the agent's
// group.
const watchdogScript = `(
trap '' HUP INT TERM
cg=$1
gs=' '
ns=' '
while read -r op g; do
	case $op in
	+) gs="$gs$g " ;;
	-) case $gs in *" $g "*) gs="${gs%% $g *} ${gs#* $g }" ;; esac ;;
	c+) ns="$ns$g " ;;
	c-) case $ns in *" $g "*) ns="${ns%%" $g "*} ${ns#*" $g "}" ;; esac ;;
	esac
done
now=$(cut -d' ' -f22 /proc/self/stat)
for g in $gs; do kill -9 -$g 2>/dev/null; done
i=0
while [ "$ns" != ' ' ] && [ -n "$now" ] && [ $i -lt 50 ]; do
	found=
	for f in /proc/[0-9]*/ns/cgroup; do
		l=$(readlink "$f" 2>/dev/null) || continue
		case $ns in *" $l "*) ;; *) continue ;; esac
		p=${f#/proc/}
		p=${p%%/*}
		read -r st < "/proc/$p/stat" || continue
		set -- ${st##*)}
		[ "${20}" -lt "$now" ] && kill -9 "$p" && found=1
	done
	[ -n "$found" ] || break
	i=$((i+1))
done 2>/dev/null
[ -n "$cg" ] && [ -d "$cg" ] || exit 0
[ -e "$cg/cgroup.kill" ] && echo 1 > "$cg/cgroup.kill"
i=0
while :; do
	if [ ! -e "$cg/cgroup.kill" ]; then
		for f in "$cg/cgroup.procs" "$cg"/*/cgroup.procs; do
			[ -f "$f" ] && while read -r p; do kill -9 "$p"; done < "$f"
		done
	fi
	for d in "$cg"/*/; do [ -d "$d" ] && rmdir "$d"; done
	rmdir "$cg" && break
	i=$((i+1))
	[ $i -lt 100 ] || break
	sleep 0.1
done
) <&3 3<&- >/dev/null 2>&1 &`

// watchdog is the agent's end of the watchdog's input.
var watchdog struct {
	sync.Mutex
	w *os.File // nil when the watchdog could not start
}

// startWatchdog starts the watchdog for the agent, with base the base
// cgroup ("" for none). Without /bin/sh there is no watchdog: SIGKILL of the
// agent then ends only the servers themselves (parent-death signal), and
// the base cgroup, emptied by each child's teardown, stays after the agent
// exits.
func startWatchdog(base string) {
	w, err := runWatchdog(base)
	if err != nil {
		return
	}
	watchdog.Lock()
	watchdog.w = w
	watchdog.Unlock()
}

// runWatchdog starts /bin/sh running watchdogScript for base and returns
// the write end of its input: closing it, or the process's exit, sets the
// watchdog off.
func runWatchdog(base string) (*os.File, error) {
	r, w, err := os.Pipe() // close-on-exec: no server inherits w
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "sh", base)
	cmd.ExtraFiles = []*os.File{r}
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	if err == nil {
		// The shell exits at once, leaving the watchdog. ECHILD: the reaper
		// took its status (Setup starts the watchdog before the reaper, a
		// test may not).
		if err = cmd.Wait(); errors.Is(err, syscall.ECHILD) {
			err = nil
		}
	}
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	return w, nil
}

// tellWatchdogNS adds (op '+') or removes (op '-') the cgroup namespace ns
// ("cgroup:[N]") from the watchdog's list.
func tellWatchdogNS(op byte, ns string) {
	watchdog.Lock()
	defer watchdog.Unlock()
	if watchdog.w != nil {
		_, _ = watchdog.w.WriteString("c" + string(op) + " " + ns + "\n")
	}
}

// tellWatchdog adds (op '+') or removes (op '-') the process group pgid from
// the watchdog's list.
func tellWatchdog(op byte, pgid int) {
	watchdog.Lock()
	defer watchdog.Unlock()
	if watchdog.w != nil {
		_, _ = watchdog.w.WriteString(string(op) + " " + strconv.Itoa(pgid) + "\n")
	}
}
