// Command testprogress runs `go test -json` for make test and says what is
// running while it runs: a line when a package starts, and every -every (10 s
// by default) a line naming the packages still running, each with how long it
// has run and its longest-running tests. The JSON events go unchanged to the
// standard input of a viewer command (gotestsum, which prints each test as it
// ends and the summary); the progress lines go to standard error, beside the
// viewer's output, not through it.
//
// Usage:
//
//	testprogress [-every 10s] [-module PATH] [-view 'gotestsum --raw-command -- cat'] -- go test -json ./...
//
// The viewer's words are split at white space. Without -view the events go to
// standard output. testprogress exits with go test's status, or 1 when go
// test passed and the viewer failed.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	every := flag.Duration("every", 10*time.Second, "how often to name what is still running")
	view := flag.String("view", "", "the command that reads the events on its standard input (split at white space)")
	module := flag.String("module", "", "the module's import path, left out of the package names printed")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testprogress [-every 10s] [-module PATH] [-view 'gotestsum --raw-command -- cat'] -- go test -json PACKAGES")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *every <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	prefix := ""
	if *module != "" {
		prefix = strings.TrimSuffix(*module, "/") + "/"
	}
	os.Exit(run(flag.Args(), strings.Fields(*view), *every, prefix))
}

// run runs the test command, copies its standard output to the viewer (or to
// standard output), reports progress on standard error, and returns the exit
// status.
func run(testArgs, viewArgs []string, every time.Duration, prefix string) int {
	var (
		out     io.Writer = os.Stdout
		viewer  *exec.Cmd
		viewIn  io.WriteCloser
		viewErr error
	)
	if len(viewArgs) > 0 {
		viewer = exec.Command(viewArgs[0], viewArgs[1:]...)
		viewer.Stdout, viewer.Stderr = os.Stdout, os.Stderr
		var err error
		if viewIn, err = viewer.StdinPipe(); err != nil {
			fmt.Fprintf(os.Stderr, "testprogress: viewer %s: %v\n", viewArgs[0], err)
			return 1
		}
		if err := viewer.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "testprogress: viewer %s: %v\n", viewArgs[0], err)
			return 1
		}
		out = viewIn
	}

	test := exec.Command(testArgs[0], testArgs[1:]...)
	test.Stderr = os.Stderr
	testOut, err := test.StdoutPipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testprogress: %s: %v\n", testArgs[0], err)
		return 1
	}
	if err := test.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testprogress: %s: %v\n", testArgs[0], err)
		return 1
	}

	p := newProgress(time.Now, prefix)
	var mu sync.Mutex // serialises p and the writes to os.Stderr
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the heartbeat; stops when done is closed
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				mu.Lock()
				if line := p.still(); line != "" {
					fmt.Fprintln(os.Stderr, line)
				}
				mu.Unlock()
			}
		}
	}()

	sc := bufio.NewScanner(testOut)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	writeFailed := false
	for sc.Scan() {
		line := sc.Bytes()
		mu.Lock()
		if msg := p.event(line); msg != "" {
			fmt.Fprintln(os.Stderr, msg)
		}
		mu.Unlock()
		if !writeFailed {
			if _, err := out.Write(append(line, '\n')); err != nil {
				// The viewer is gone: keep reading so go test is not blocked.
				writeFailed = true
			}
		}
	}
	close(done)
	wg.Wait()

	testErr := test.Wait()
	if viewer != nil {
		viewIn.Close()
		viewErr = viewer.Wait()
	}
	var exit *exec.ExitError
	switch {
	case errors.As(testErr, &exit):
		return exit.ExitCode()
	case testErr != nil:
		fmt.Fprintf(os.Stderr, "testprogress: %s: %v\n", testArgs[0], testErr)
		return 1
	case viewErr != nil:
		fmt.Fprintf(os.Stderr, "testprogress: viewer %s: %v\n", viewArgs[0], viewErr)
		return 1
	}
	return 0
}

// testEvent is the part of a `go test -json` event (cmd/test2json) that
// progress reads.
type testEvent struct {
	Action  string
	Package string
	Test    string
}

// progress tracks which packages and top-level tests are running, from the
// events of `go test -json`. Not safe for concurrent use.
type progress struct {
	now   func() time.Time
	start time.Time
	// pkgs are the packages started and not yet ended, by import path.
	pkgs map[string]*pkgState
	// order is the import paths of pkgs in the order they started.
	order []string
	// prefix is cut from the start of package names in the lines printed
	// (the module's import path and a slash); "" keeps them whole.
	prefix string
}

// pkgState is one running package.
type pkgState struct {
	start time.Time
	// tests are its running top-level tests (run or cont, no pause or end
	// yet), with when they last started running.
	tests map[string]time.Time
}

// newProgress returns a progress that reads the time from now and prints
// package names without prefix.
func newProgress(now func() time.Time, prefix string) *progress {
	return &progress{now: now, start: now(), pkgs: map[string]*pkgState{}, prefix: prefix}
}

// event records one line of go test -json and returns the line to print for
// it, if any: "=== start PKG" when a package starts, "=== end PKG: pass in
// 12s, 3 still running" when it ends. A line that is not an event is ignored.
func (p *progress) event(line []byte) string {
	var e testEvent
	if json.Unmarshal(line, &e) != nil || e.Package == "" {
		return ""
	}
	s := p.pkgs[e.Package]
	if s == nil && isPackageEnd(e) {
		return ""
	}
	if s == nil {
		s = &pkgState{start: p.now(), tests: map[string]time.Time{}}
		p.pkgs[e.Package] = s
		p.order = append(p.order, e.Package)
		if e.Action == "start" {
			return "=== start " + p.short(e.Package)
		}
	}
	if e.Test == "" {
		if !isPackageEnd(e) {
			return ""
		}
		delete(p.pkgs, e.Package)
		p.order = slices.DeleteFunc(p.order, func(name string) bool { return name == e.Package })
		return fmt.Sprintf("=== end %s: %s in %s, %d still running", p.short(e.Package), e.Action, round(p.now().Sub(s.start)), len(p.order))
	}
	if strings.Contains(e.Test, "/") { // a subtest: its top-level test is named
		return ""
	}
	switch e.Action {
	case "run", "cont":
		s.tests[e.Test] = p.now()
	case "pause", "pass", "fail", "skip":
		delete(s.tests, e.Test)
	}
	return ""
}

// isPackageEnd reports whether e ends its package.
func isPackageEnd(e testEvent) bool {
	return e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip")
}

// still returns the heartbeat line naming what is running, longest first
// within a package:
//
//	--- 2m10s: still running: e2e 2m5s (TestFleet_Failover 48s, TestLoad 31s, +5 more); session 12s
//
// or, when no package is running, that go test is compiling.
func (p *progress) still() string {
	now := p.now()
	if len(p.order) == 0 {
		return fmt.Sprintf("--- %s: no package running: go test is compiling test binaries", round(now.Sub(p.start)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s: still running:", round(now.Sub(p.start)))
	for i, name := range p.order {
		s := p.pkgs[name]
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s %s", p.short(name), round(now.Sub(s.start)))
		if len(s.tests) == 0 {
			continue
		}
		type running struct {
			name  string
			since time.Time
		}
		tests := make([]running, 0, len(s.tests))
		for t, since := range s.tests {
			tests = append(tests, running{t, since})
		}
		// Longest running first; the name breaks ties so the line is stable.
		slices.SortFunc(tests, func(a, b running) int {
			if c := a.since.Compare(b.since); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		})
		b.WriteString(" (")
		const shown = 3
		for j, t := range tests {
			if j == shown {
				fmt.Fprintf(&b, ", +%d more", len(tests)-shown)
				break
			}
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s", t.name, round(now.Sub(t.since)))
		}
		b.WriteString(")")
	}
	return b.String()
}

// short is a package's import path without the module's.
func (p *progress) short(pkg string) string {
	if rest, ok := strings.CutPrefix(pkg, p.prefix); ok && rest != "" {
		return rest
	}
	return pkg
}

// round is d to the second.
func round(d time.Duration) time.Duration { return d.Round(time.Second) }
