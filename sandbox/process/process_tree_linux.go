package process

import (
	"bytes"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// procInfo is one line of /proc/<pid>/stat, in part.
type procInfo struct {
	ppid, pgid int
	zombie     bool
	start      uint64 // start time in clock ticks since boot
}

// readProcs reads every process of /proc. Processes that vanish while it
// reads are left out.
func readProcs() map[int]procInfo {
	entries, _ := os.ReadDir("/proc")
	procs := make(map[int]procInfo, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, ok := readProc(pid); ok {
			procs[pid] = info
		}
	}
	return procs
}

// readProc parses /proc/<pid>/stat (proc(5)): the fields after the command
// name, which is in parentheses and may hold anything.
func readProc(pid int) (procInfo, bool) {
	var buf [512]byte // a stat line is about 300 bytes
	data, err := readProcFile("/proc/"+strconv.Itoa(pid)+"/stat", buf[:0])
	if err != nil {
		return procInfo{}, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 > len(data) {
		return procInfo{}, false
	}
	// f[0] state, f[1] ppid, f[2] pgrp, ... f[19] starttime: the first 20
	// fields, without allocating the other 30 (teardown parses every
	// process, many times).
	var f [20][]byte
	n := 0
	for w := range bytes.FieldsSeq(data[i+1:]) {
		f[n] = w
		if n++; n == len(f) {
			break
		}
	}
	if n < len(f) {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procInfo{}, false
	}
	state := string(f[0])
	return procInfo{ppid: ppid, pgid: pgid, zombie: state == "Z" || state == "X", start: start}, true
}

// readProcFile appends the contents of the /proc file at path to buf and
// returns it. Teardown reads every process's stat, several times per
// server: plain open/read/close system calls, without what os.File adds for
// files it may poll (fstat, non-blocking mode, the netpoller), halve its
// cost.
func readProcFile(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(512, cap(buf)))
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, err
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// descendants returns every process below root in procs, by parent links.
func descendants(procs map[int]procInfo, root int) []int {
	kids := make(map[int][]int)
	for pid, info := range procs {
		kids[info.ppid] = append(kids[info.ppid], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
