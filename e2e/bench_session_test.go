package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// goneDeadline is how long the guard benchmarks wait for the agent and its
// children to be gone before failing: generous, for a loaded machine; the
// figures they report are far below it.
const goneDeadline = 30 * time.Second

// childStart is one fixture's start, as it reported it in
// FIXTURE_READY_FILE: its pid, the moment its Go code started (exec) and
// the moment it was about to serve (ready).
type childStart struct {
	pid         int
	exec, ready time.Time
}

// readyLines reads the n lines the fixtures wrote to path.
func readyLines(b *testing.B, path string, n int) []childStart {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var out []childStart
	for line := range strings.Lines(string(data)) {
		var c childStart
		var exec, ready int64
		if _, err := fmt.Sscanf(line, "%d %d %d", &c.pid, &exec, &ready); err != nil {
			b.Fatalf("%s: %q: %v", path, line, err)
		}
		c.exec, c.ready = time.Unix(0, exec), time.Unix(0, ready)
		out = append(out, c)
	}
	if len(out) != n {
		b.Fatalf("%s: %d fixtures reported their start, want %d:\n%s", path, len(out), n, data)
	}
	return out
}

// sessionServers is the mcpServers JSON of n fixture servers (stdio) that
// report their start to readyFile.
func sessionServers(b *testing.B, n int, readyFile string) string {
	b.Helper()
	servers := make([]any, n)
	for i := range servers {
		servers[i] = map[string]any{
			"name": fmt.Sprintf("f%d", i), "command": fixtureBin, "args": []string{},
			"env": []any{map[string]string{"name": "FIXTURE_READY_FILE", "value": readyFile}},
		}
	}
	data, err := json.Marshal(servers)
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// newBenchSession does session/new on p with n fixture servers in cwd and
// returns the session id, the wall time of the request (from just before
// it is written to just after its response is read) and the fixtures'
// starts.
func newBenchSession(b *testing.B, p *rawPeer, cwd string, n int) (sid string, sent, answered time.Time, children []childStart) {
	b.Helper()
	// In the cwd: the fixtures run confined to it (workspace-write).
	dir, err := os.MkdirTemp(cwd, ".ready-")
	if err != nil {
		b.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	params := fmt.Sprintf(`{"cwd":%q,"mcpServers":%s}`, cwd, sessionServers(b, n, ready))
	sent = time.Now()
	res := p.call(b, "session/new", params)
	answered = time.Now()
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &s); err != nil || s.SessionID == "" {
		b.Fatalf("session/new: %s (%v)", res, err)
	}
	return s.SessionID, sent, answered, readyLines(b, ready, n)
}

// pidfds opens a pidfd for each child, failing b if one is already gone.
func pidfds(b *testing.B, children []childStart) []int {
	b.Helper()
	fds := make([]int, len(children))
	for i, c := range children {
		fd, err := unix.PidfdOpen(c.pid, 0)
		if err != nil {
			b.Fatalf("pidfd_open(%d): %v (the fixture was gone before teardown)", c.pid, err)
		}
		fds[i] = fd
	}
	return fds
}

// waitExited waits until every process behind fds has exited (a pidfd
// polls readable then), closes the fds and returns when the last one
// exited; it fails b if one is left after goneDeadline.
func waitExited(b *testing.B, fds []int, children []childStart) time.Time {
	b.Helper()
	defer func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}()
	deadline := time.Now().Add(goneDeadline)
	left := slices.Clone(fds)
	for len(left) > 0 {
		wait := time.Until(deadline)
		if wait <= 0 {
			var pids []int
			for i, fd := range fds {
				if slices.Contains(left, fd) {
					pids = append(pids, children[i].pid)
				}
			}
			b.Fatalf("fixtures %v still run %v after teardown began", pids, goneDeadline)
		}
		polls := make([]unix.PollFd, len(left))
		for i, fd := range left {
			polls[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		}
		if _, err := unix.Poll(polls, int(wait.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			b.Fatal(err)
		}
		left = left[:0]
		for _, pf := range polls {
			if pf.Revents == 0 {
				left = append(left, int(pf.Fd))
			}
		}
	}
	return time.Now()
}

// BenchmarkSessionNew10 measures session/new with 10 Go fixture servers
// (stdio) from a raw ACP client (one agent, one session/new then
// session/close per iteration; the children's exit and the end of the
// agent's teardown work are awaited outside the figures), with the default
// SQLite store and with --store memory. ns/op is session/new alone.
//
// Each fixture reports its own start (FIXTURE_READY_FILE): exec, the
// first moment its Go code ran, and ready, the moment it was about to read
// its first request. The metrics, per session/new, in milliseconds:
//
//   - new-ms: wall time, from just before the request is written to just
//     after its response is read.
//   - child-ms: the slowest fixture's start-up, max(ready - exec): the
//     children's critical path that is not the agent's.
//   - first-exec-ms: request sent -> first fixture's exec: the agent's work
//     before its first child runs (reading the request, vetting cwd, the
//     store, building the environment, fork+exec).
//   - spawn-spread-ms: first exec -> last exec: how far apart the ten
//     starts are (the agent's serial work per child, and the children
//     competing for the two cores).
//   - last-ready-ms: request sent -> last fixture ready.
//   - tail-ms: last fixture ready -> response read: the MCP handshakes
//     (server/discover, tools/list, prompts/list, resources/list: both
//     sides of each hop, so the fixtures' share is in it) and the response.
//   - agent-ms: new-ms - child-ms, the wall time that is not the slowest
//     child's start-up. An upper bound of the agent's own work: it still
//     holds the children's side of the handshake round trips, pipe hops
//     and the ten children's competition for the cores.
//   - agent-cpu-ms: the CPU time the agent's threads used during the
//     session/new (/proc/<pid>/task/*/schedstat): the agent's own work,
//     without waiting. Its share of fork+exec is in it; its in-process
//     server's start (the session's own tools) too.
func BenchmarkSessionNew10(b *testing.B) {
	for _, c := range []struct {
		name string
		args []string
	}{{"sqlite", nil}, {"memory", []string{"--store", "memory"}}} {
		b.Run(c.name, func(b *testing.B) {
			p := startRawPeer(b, agentBin, append(c.args, agentProfileArgs(b)...))
			p.call(b, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
			cwd := b.TempDir()
			var newMS, childMS, firstExec, spread, lastReady, tail, cpu float64
			for b.Loop() {
				cpu0 := cpuTime(b, p.cmd.Process.Pid)
				sid, sent, answered, children := newBenchSession(b, p, cwd, 10)
				b.StopTimer()
				cpu += ms(cpuTime(b, p.cmd.Process.Pid) - cpu0)
				execs, readies := make([]time.Time, len(children)), make([]time.Time, len(children))
				var slowest time.Duration
				for i, ch := range children {
					execs[i], readies[i] = ch.exec, ch.ready
					slowest = max(slowest, ch.ready.Sub(ch.exec))
				}
				first, last := slices.MinFunc(execs, time.Time.Compare), slices.MaxFunc(execs, time.Time.Compare)
				lastR := slices.MaxFunc(readies, time.Time.Compare)
				newMS += ms(answered.Sub(sent))
				childMS += ms(slowest)
				firstExec += ms(first.Sub(sent))
				spread += ms(last.Sub(first))
				lastReady += ms(lastR.Sub(sent))
				tail += ms(answered.Sub(lastR))
				fds := pidfds(b, children)
				p.call(b, "session/close", fmt.Sprintf(`{"sessionId":%q}`, sid))
				waitExited(b, fds, children)
				settle(b, p.cmd.Process.Pid)
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(newMS/n, "new-ms")
			b.ReportMetric(childMS/n, "child-ms")
			b.ReportMetric((newMS-childMS)/n, "agent-ms")
			b.ReportMetric(cpu/n, "agent-cpu-ms")
			b.ReportMetric(firstExec/n, "first-exec-ms")
			b.ReportMetric(spread/n, "spawn-spread-ms")
			b.ReportMetric(lastReady/n, "last-ready-ms")
			b.ReportMetric(tail/n, "tail-ms")
		})
	}
}

// BenchmarkCloseChildrenGone guards session/close's teardown: a session
// with 3 fixture servers per iteration, and close-ms is the time from just
// before the session/close request is written to the moment the last of
// the three has exited (pidfd). It fails if one still runs goneDeadline
// after the request.
func BenchmarkCloseChildrenGone(b *testing.B) {
	p := startRawPeer(b, agentBin, append([]string{"--store", "memory"}, agentProfileArgs(b)...))
	p.call(b, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	cwd := b.TempDir()
	var total float64
	for b.Loop() {
		b.StopTimer()
		sid, _, _, children := newBenchSession(b, p, cwd, 3)
		fds := pidfds(b, children)
		settle(b, p.cmd.Process.Pid) // the last teardown's sweep is over
		b.StartTimer()
		sent := time.Now()
		p.call(b, "session/close", fmt.Sprintf(`{"sessionId":%q}`, sid))
		total += ms(waitExited(b, fds, children).Sub(sent))
	}
	b.ReportMetric(total/float64(b.N), "close-ms")
}

// BenchmarkEOFExit guards the agent's exit on stdin EOF: per iteration an
// agent with one session of 3 fixture servers has its stdin closed;
// exit-ms is the time from the close to the agent's exit (its status
// collected), gone-ms to the moment the agent and all three children have
// exited. It fails if the agent or a child still runs goneDeadline after
// the EOF.
func BenchmarkEOFExit(b *testing.B) {
	var exit, gone float64
	for b.Loop() {
		b.StopTimer()
		p := startRawPeer(b, agentBin, []string{"--store", "memory"})
		p.call(b, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
		_, _, _, children := newBenchSession(b, p, b.TempDir(), 3)
		fds := pidfds(b, children)
		exited := make(chan time.Time, 1)
		b.StartTimer()
		closed := time.Now()
		if err := p.in.Close(); err != nil {
			b.Fatal(err)
		}
		go func() {
			_ = p.cmd.Wait() // startRawPeer's cleanup waits again, for nothing
			exited <- time.Now()
		}()
		var agentAt time.Time
		select {
		case agentAt = <-exited:
		case <-time.After(goneDeadline):
			_ = p.cmd.Process.Kill()
			<-exited
			b.Fatalf("the agent still ran %v after its stdin closed", goneDeadline)
		}
		last := waitExited(b, fds, children)
		exit += ms(agentAt.Sub(closed))
		if last.Before(agentAt) {
			last = agentAt
		}
		gone += ms(last.Sub(closed))
	}
	b.ReportMetric(exit/float64(b.N), "exit-ms")
	b.ReportMetric(gone/float64(b.N), "gone-ms")
}

// cpuTime is the CPU time pid's threads have used so far, from
// /proc/<pid>/task/*/schedstat (nanosecond resolution; a thread that has
// exited no longer counts, and the Go runtime rarely ends one).
func cpuTime(b *testing.B, pid int) time.Duration {
	b.Helper()
	paths, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total time.Duration
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the thread ended
		}
		var ns int64
		if _, err := fmt.Sscan(string(data), &ns); err == nil {
			total += time.Duration(ns)
		}
	}
	if total == 0 {
		b.Fatalf("no CPU time for pid %d in /proc", pid)
	}
	return total
}

// settle waits, outside the figures, until the agent has used no CPU for
// 50ms (at most 5s): its teardown of the last session (reaping, sweeping
// /proc) goes on after the children have exited, and must not be counted
// in the next session/new.
func settle(b *testing.B, pid int) {
	b.Helper()
	last, at := cpuTime(b, pid), time.Now()
	testutil.Eventually(5*time.Second, func() bool {
		if time.Since(at) < 50*time.Millisecond {
			return false
		}
		now := cpuTime(b, pid)
		idle := now-last < 100*time.Microsecond
		last, at = now, time.Now()
		return idle
	}) // not settled within 5 s: measure anyway, as before
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
