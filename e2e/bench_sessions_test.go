package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// sessionsAgent is an agent (--store memory, --debug-addr on a free
// loopback port) spoken to in raw JSON-RPC lines by many callers at once:
// one writer lock, one reader goroutine routing each response to its caller
// by id. It is what an editor with many sessions open looks like, with no
// client-side overhead to speak of.
type sessionsAgent struct {
	cmd   *exec.Cmd
	pid   int
	debug string // host:port of the agent's /debug/pprof/

	wmu sync.Mutex // guards in and next
	in  io.WriteCloser
	nxt int

	mu        sync.Mutex // guards pending, completed and readErr
	pending   map[int]chan rawResponse
	completed map[string]int // completed tool calls by sessionId
	readErr   error

	reader sync.WaitGroup // the reader goroutine
}

type rawResponse struct {
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// startSessionsAgent starts the agent with args on top of --store memory
// and --debug-addr 127.0.0.1:0, and waits (generously) for the debug
// server's address in its log file. The agent is stopped and waited for
// when b ends.
func startSessionsAgent(b *testing.B, args ...string) *sessionsAgent {
	b.Helper()
	dir := b.TempDir()
	logFile := filepath.Join(dir, "agent.log")
	args = append([]string{"--store", "memory", "--debug-addr", "127.0.0.1:0", "--log-file", logFile}, args...)
	cmd := exec.Command(agentBin, append(args, agentProfileArgs(b)...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_CONFIG_HOME=" + dir}
	if v := os.Getenv("GODEBUG"); v != "" { // memprofilerate=1 for exact heap profiles
		cmd.Env = append(cmd.Env, "GODEBUG="+v)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	a := &sessionsAgent{cmd: cmd, pid: cmd.Process.Pid, in: in, pending: map[int]chan rawResponse{}, completed: map[string]int{}}
	a.reader.Go(func() { a.read(out) })
	b.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
		a.reader.Wait()
	})
	var data []byte
	if !testutil.Eventually(time.Minute, func() bool {
		data, _ = os.ReadFile(logFile)
		for _, line := range strings.Split(string(data), "\n") {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving pprof" {
				a.debug = rec.Addr
			}
		}
		return a.debug != ""
	}) {
		b.Fatalf("the agent logged no debug address in a minute; log:\n%s", data)
	}
	a.call(b, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	return a
}

// read routes responses to their callers until stdout ends; then every
// pending and later call fails.
func (a *sessionsAgent) read(out io.Reader) {
	r := bufio.NewReaderSize(out, 64<<10)
	var err error
	for {
		var line []byte
		line, err = r.ReadBytes('\n')
		if err != nil {
			break
		}
		var msg struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if sid, ok := completedToolCall(line); ok {
			a.mu.Lock()
			a.completed[sid]++
			a.mu.Unlock()
			continue
		}
		if json.Unmarshal(line, &msg) != nil || msg.ID == nil || msg.Method != "" {
			continue // a notification, or a request of the agent's (none in direct mode)
		}
		a.mu.Lock()
		ch := a.pending[*msg.ID]
		delete(a.pending, *msg.ID)
		a.mu.Unlock()
		if ch != nil {
			ch <- rawResponse{Result: msg.Result, Error: msg.Error}
		}
	}
	a.mu.Lock()
	a.readErr = fmt.Errorf("the agent's stdout ended: %v", err)
	for id, ch := range a.pending {
		close(ch)
		delete(a.pending, id)
	}
	a.mu.Unlock()
}

// tryCall sends one request and waits (at most 5 minutes) for its result.
// It is safe for concurrent use.
func (a *sessionsAgent) tryCall(method, params string) (json.RawMessage, error) {
	ch := make(chan rawResponse, 1)
	a.wmu.Lock()
	a.nxt++
	id := a.nxt
	a.mu.Lock()
	if a.readErr != nil {
		a.mu.Unlock()
		a.wmu.Unlock()
		return nil, a.readErr
	}
	a.pending[id] = ch
	a.mu.Unlock()
	_, err := fmt.Fprintf(a.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
	a.wmu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", method, err)
	}
	select {
	case res, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: no response: the agent's stdout ended", method)
		}
		if res.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, res.Error)
		}
		return res.Result, nil
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("%s: no response in 5 minutes", method)
	}
}

func (a *sessionsAgent) call(b *testing.B, method, params string) json.RawMessage {
	b.Helper()
	res, err := a.tryCall(method, params)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// fixtureServers is the mcpServers of a session with one Go fixture
// server over stdio, and fixtureCall the /call each of its sessions makes.
func fixtureServers() string {
	server, _ := json.Marshal(map[string]any{"name": "fixture", "command": fixtureBin, "args": []string{}, "env": []any{}})
	return "[" + string(server) + "]"
}

const fixtureCall = `/call mcp__fixture__echo {\"message\":\"hi\"}`

// builtinCall is the one call of a session with no mcpServers: a built-in
// tool that needs no client capability (list_directory reads the cwd
// itself), so the session's in-process server connects.
const builtinCall = `/call mcp__acp__list_directory {\"path\":\".\"}`

// openAndCall opens a session with one Go fixture server and makes one
// /call through it; it returns the session id.
func (a *sessionsAgent) openAndCall(cwd string) (string, error) {
	return a.openWith(cwd, fixtureServers(), fixtureCall)
}

// openWith opens a session with the mcpServers given (a JSON array) and,
// unless call is empty, runs the prompt call (a /call, JSON-escaped), which
// must end end_turn after exactly one completed tool call; it returns the
// session id.
func (a *sessionsAgent) openWith(cwd, servers, call string) (string, error) {
	dir, _ := json.Marshal(cwd)
	res, err := a.tryCall("session/new", fmt.Sprintf(`{"cwd":%s,"mcpServers":%s}`, dir, servers))
	if err != nil {
		return "", err
	}
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &s); err != nil || s.SessionID == "" {
		return "", fmt.Errorf("session/new: %s (%v)", res, err)
	}
	if call == "" {
		return s.SessionID, nil
	}
	return s.SessionID, a.callIn(s.SessionID, call)
}

// callIn makes the /call call in session sid: one turn that must end after
// exactly one completed tool call.
func (a *sessionsAgent) callIn(sid, call string) error {
	prompt := fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"%s"}]}`, sid, call)
	res, err := a.tryCall("session/prompt", prompt)
	if err != nil {
		return err
	}
	// The turn's updates precede its response on the one stream the
	// reader reads in order: its completed call is counted by now.
	a.mu.Lock()
	completed := a.completed[sid]
	delete(a.completed, sid)
	a.mu.Unlock()
	if !strings.Contains(string(res), `"end_turn"`) || completed != 1 {
		return fmt.Errorf("session/prompt: %s after %d completed tool calls, want end_turn after 1", res, completed)
	}
	return nil
}

func (a *sessionsAgent) closeSession(sid string) error {
	_, err := a.tryCall("session/close", fmt.Sprintf(`{"sessionId":%q}`, sid))
	return err
}

// debugGet reads one page of the agent's debug server.
func (a *sessionsAgent) debugGet(b *testing.B, path string) string {
	b.Helper()
	c := &http.Client{Timeout: 2 * time.Minute}
	res, err := c.Get("http://" + a.debug + path)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %s %v", path, res.Status, err)
	}
	return string(body)
}

var goroutineTotal = regexp.MustCompile(`goroutine profile: total (\d+)`)

// goroutines is the agent's goroutine count.
func (a *sessionsAgent) goroutines(b *testing.B) int {
	m := goroutineTotal.FindStringSubmatch(a.debugGet(b, "/debug/pprof/goroutine?debug=1"))
	if m == nil {
		b.Fatal("no goroutine total in the goroutine profile")
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var heapInuse = regexp.MustCompile(`# HeapInuse = (\d+)`)

// heapKiB is the agent's in-use Go heap in KiB right after a collection
// (runtime.MemStats.HeapInuse, as /debug/pprof/heap?gc=1 reports it).
func (a *sessionsAgent) heapKiB(b *testing.B) float64 {
	m := heapInuse.FindStringSubmatch(a.debugGet(b, "/debug/pprof/heap?debug=1&gc=1"))
	if m == nil {
		b.Fatal("no HeapInuse in the heap profile")
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	return n / 1024
}

// idleFreeBytes is the agent's threshold (cmd/acp-agent releaseWhenIdle):
// an idle agent with at least this much free heap returns it to the OS.
const idleFreeBytes = 4 << 20

// awaitReleased waits (up to a minute) until the agent, idle, holds less
// than idleFreeBytes of free heap it has not returned to the OS
// (runtime.MemStats HeapIdle - HeapReleased, from /debug/vars, checked
// once a second: a heavier or more frequent check would keep the agent
// from counting as idle): what an agent left idle for seconds holds. It
// fails b otherwise.
func (a *sessionsAgent) awaitReleased(b *testing.B) {
	var unreturned uint64
	released := testutil.EventuallyEvery(time.Minute, time.Second, func() bool {
		var vars struct {
			Memstats struct{ HeapIdle, HeapReleased uint64 }
		}
		if err := json.Unmarshal([]byte(a.debugGet(b, "/debug/vars")), &vars); err != nil {
			b.Fatalf("/debug/vars: %v", err)
		}
		unreturned = vars.Memstats.HeapIdle - vars.Memstats.HeapReleased
		return unreturned < idleFreeBytes
	})
	if !released {
		b.Fatalf("a minute idle, the agent still holds %.1f MiB of free heap it has not returned to the OS", float64(unreturned)/(1<<20))
	}
}

// footprint is what the agent holds at one moment: RSS and Go heap in KiB,
// goroutines, child processes.
type footprint struct {
	rss, heap           float64
	goroutines, threads int
}

// footprint measures the agent idle: after a collection, once it has
// returned its free heap to the OS (releaseWhenIdle, within seconds of
// going idle).
func (a *sessionsAgent) footprint(b *testing.B) footprint {
	a.heapKiB(b) // a collection: the garbage of the work before is free heap now
	a.awaitReleased(b)
	heap := a.heapKiB(b) // collects first, so RSS is read after the GC too
	return footprint{rss: float64(rssKiB(b, a.pid)), heap: heap, goroutines: a.goroutines(b), threads: procStatus(b, a.pid, "Threads")}
}

// reportPerSession reports (after - before) / n per session.
func reportPerSession(b *testing.B, before, after footprint, n int) {
	b.ReportMetric((after.rss-before.rss)/float64(n), "rss-KiB/session")
	b.ReportMetric((after.heap-before.heap)/float64(n), "heap-KiB/session")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(n), "goroutines/session")
	b.ReportMetric(float64(after.threads-before.threads)/float64(n), "threads/session")
}

// warmUp opens, uses and closes one session with one Go fixture server,
// so the lazily built parts of the agent (code paged in, pools, the first
// session's one-time setup) are in the baseline rather than charged to the
// sessions measured.
func warmUp(b *testing.B, a *sessionsAgent) {
	warmUpWith(b, a, fixtureServers(), fixtureCall)
}

// warmUpWith is warmUp for sessions opened with servers and call (see
// openWith).
func warmUpWith(b *testing.B, a *sessionsAgent, servers, call string) {
	sid, err := a.openWith(b.TempDir(), servers, call)
	if err != nil {
		b.Fatal(err)
	}
	if err := a.closeSession(sid); err != nil {
		b.Fatal(err)
	}
	a.waitSettled(b, -1)
}

// waitSettled waits (up to 2 minutes) until the agent has no child process
// left and, if goroutines >= 0, at most goroutines+4 goroutines; it fails
// b with what is left otherwise.
func (a *sessionsAgent) waitSettled(b *testing.B, goroutines int) {
	b.Helper()
	var kids []int
	g := -1
	if testutil.Eventually(2*time.Minute, func() bool {
		kids = descendants(a.pid)
		if goroutines >= 0 {
			g = a.goroutines(b)
		}
		return len(kids) == 0 && g <= goroutines+4
	}) {
		return
	}
	msg := fmt.Sprintf("2 minutes after the last session/close: %d processes left under the agent", len(kids))
	if goroutines >= 0 {
		msg += fmt.Sprintf(", %d goroutines (baseline %d); goroutines:\n%s", g, goroutines,
			a.debugGet(b, "/debug/pprof/goroutine?debug=1"))
	}
	b.Fatal(msg)
}

// BenchmarkIdleSession is what an idle session costs the agent: b.N
// sessions, each with one Go fixture server and one /call made, left open
// and idle. It reports per session the agent's RSS and in-use Go heap
// (after a GC) and its goroutines; the servers, other processes, are not
// counted. ns/op is the time to open a session and make its call, one at a
// time. Run it with a fixed count: -benchtime=50x.
func BenchmarkIdleSession(b *testing.B) {
	a := startSessionsAgent(b)
	warmUp(b, a)
	before := a.footprint(b)
	cwd := b.TempDir()
	n := 0
	for b.Loop() {
		if _, err := a.openAndCall(cwd); err != nil {
			b.Fatal(err)
		}
		n++
	}
	after := a.footprint(b)
	a.saveProfiles(b)
	reportPerSession(b, before, after, n)
}

// saveProfiles writes, when ACP_BENCH_PROFILE=DIR is set, the agent's heap
// profile, goroutine dump, memory statistics and /proc status as of now to
// DIR/<benchmark>.idle.heap.pprof, .idle.goroutines.txt, .idle.memstats.txt
// and .idle.status.txt: what the open sessions hold.
func (a *sessionsAgent) saveProfiles(b *testing.B) {
	dir := os.Getenv("ACP_BENCH_PROFILE")
	if dir == "" {
		return
	}
	name := filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "_"))
	for file, path := range map[string]string{
		name + ".idle.heap.pprof":     "/debug/pprof/heap?gc=1",
		name + ".idle.goroutines.txt": "/debug/pprof/goroutine?debug=1",
		name + ".idle.memstats.txt":   "/debug/pprof/heap?debug=1", // runtime.MemStats at its end
	} {
		if err := os.WriteFile(file, []byte(a.debugGet(b, path)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// The kernel's side: RSS as anonymous, file-backed and shared memory.
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.pid))
	if err == nil {
		err = os.WriteFile(name+".idle.status.txt", status, 0o644)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// sessionsInFlight is how many session/new (+ one call) and session/close
// the many-sessions benchmarks keep in flight at once.
const sessionsInFlight = 16

// benchCounts reads env, a comma-separated list of positive session
// counts, or returns def when it is unset.
func benchCounts(b *testing.B, env string, def ...int) []int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	var counts []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want positive numbers separated by commas", env, v)
		}
		counts = append(counts, n)
	}
	return counts
}

// manySessions is one run of a many-sessions benchmark: n sessions opened
// by open (16 at a time), each with kids processes under the agent, then
// all closed (16 at a time); what is left is checked (no process under the
// agent and goroutines back to the baseline, within 4, both within 2
// minutes, or b fails). It reports the time to open (and call) all and to
// close all in seconds, per session the agent's RSS, Go heap and
// goroutines while all are open, and the agent's whole RSS then in MiB.
func manySessions(b *testing.B, a *sessionsAgent, n, kids int, open func() (string, error)) {
	manySessionsUsed(b, a, n, kids, open, nil)
}

// manySessionsUsed is manySessions, with use, if not nil, run in each
// session once all are open: its time is reported apart (use-all-s), and
// the footprint is taken once the sessions are idle again.
func manySessionsUsed(b *testing.B, a *sessionsAgent, n, kids int, open func() (string, error), use func(sid string) error) {
	before := a.footprint(b)
	ids := make([]string, n)
	var g errgroup.Group
	g.SetLimit(sessionsInFlight)
	start := time.Now()
	for i := range n {
		g.Go(func() (err error) {
			ids[i], err = open()
			if err != nil {
				return fmt.Errorf("session %d: %w", i, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	opened := time.Since(start)
	if use != nil {
		start = time.Now()
		for _, sid := range ids {
			g.Go(func() error { return use(sid) })
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "use-all-s")
	}
	if got := len(descendants(a.pid)); got != n*kids {
		b.Fatalf("%d sessions open, %d processes under the agent; want %d each", n, got, kids)
	}
	if kids == 0 {
		// Idle: the built-in servers' connections rest a while (bridge's
		// restAfter) after their last call; wait for that, not a time.
		if !testutil.Eventually(2*time.Minute, func() bool { return a.goroutines(b) <= before.goroutines+4 }) {
			b.Fatalf("2 minutes after the last call: %d goroutines, %d before the sessions: the built-in servers' connections did not rest", a.goroutines(b), before.goroutines)
		}
	}
	all := a.footprint(b)
	a.saveProfiles(b)
	start = time.Now()
	for _, sid := range ids {
		g.Go(func() error { return a.closeSession(sid) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	closed := time.Since(start)
	a.waitSettled(b, before.goroutines)
	b.ReportMetric(opened.Seconds(), "open-all-s")
	b.ReportMetric(closed.Seconds(), "close-all-s")
	b.ReportMetric(all.rss/1024, "rss-MiB")
	reportPerSession(b, before, all, n)
}

// BenchmarkSessions opens n concurrent sessions in one agent, each with its
// own Go fixture server, makes one /call in each, then closes them all (see
// manySessions), for n = 500 and 1,000 (ACP_BENCH_SESSIONS=N[,N...] for
// others); a fresh agent for each n. It reports the time to open (and
// call) all and to close all, per session the agent's RSS, Go heap and
// goroutines while all are open (the servers, other processes, are not
// counted). Run it once: -benchtime=1x (about 10 GiB of fixture processes
// at 1,000).
func BenchmarkSessions(b *testing.B) {
	for _, n := range benchCounts(b, "ACP_BENCH_SESSIONS", 500, 1000) {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				a := startSessionsAgent(b)
				warmUp(b, a)
				cwd := b.TempDir()
				manySessions(b, a, n, 1, func() (string, error) { return a.openAndCall(cwd) })
			}
		})
	}
}

// BenchmarkSessionsInProcess opens n concurrent sessions with no
// mcpServers, so each has only the agent's built-in in-process server
// (open-all-s: session/new of all), then makes one call of a built-in tool
// in each (use-all-s: list_directory, which needs no client capability, so
// that the server connects and builds its tools), waits until they idle
// again (the connections rest), measures, and closes them all (see
// manySessions): n = 1,000 by default, ACP_BENCH_INPROCESS=N[,N...] for
// others (10000 for the goal: open in 10 s, under 1 GiB of RSS,
// closed in 5 s). The agent runs with --store memory, or with the
// default SQLite store (a file in a temporary directory) when
// ACP_BENCH_STORE=sqlite. No process may start. Run it once: -benchtime=1x.
func BenchmarkSessionsInProcess(b *testing.B) {
	var args []string
	switch st := os.Getenv("ACP_BENCH_STORE"); st {
	case "", "memory":
	case "sqlite":
		args = append(args, "--store", filepath.Join(b.TempDir(), "sessions.db"))
	default:
		b.Fatalf("ACP_BENCH_STORE=%q: want memory or sqlite", st)
	}
	for _, n := range benchCounts(b, "ACP_BENCH_INPROCESS", 1000) {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				a := startSessionsAgent(b, args...)
				warmUpWith(b, a, "[]", builtinCall)
				cwd := b.TempDir()
				manySessionsUsed(b, a, n, 0, func() (string, error) { return a.openWith(cwd, "[]", "") },
					func(sid string) error { return a.callIn(sid, builtinCall) })
			}
		})
	}
}
