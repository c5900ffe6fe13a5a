// Package e2e runs the built acp-agent binary as an editor would: over
// stdio, with acp-go-sdk's client side or a third-party client (acpx),
// against real MCP servers (the Go fixture in testfixtures/mcpserver and the
// pinned npm servers of package.json, installed by `make test` with npm ci).
// Nothing here is skipped: a missing dependency fails the suite.
//
// Top-level tests call t.Parallel (go test runs -parallel of them at once:
// GOMAXPROCS by default, twice the cores under make test), except those that
// bound a latency (a turn ends within 2 s of a cancel or a kill, processes go
// within the teardown grace), the replay-throughput test and the conformance
// suites: those run first, one at a time, as go test runs every serial test
// before the parallel ones.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
)

// Paths set up by TestMain.
var (
	agentBin     string // the acp-agent binary
	fixtureBin   string // the Go MCP fixture server
	everything   string // server-everything's entry point (node)
	filesystem   string // server-filesystem's entry point (node)
	acpxCLI      string // acpx's entry point (node)
	supergateway string // supergateway's entry point (node)
)

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	tmp, err := os.MkdirTemp("", "acp-agent-e2e-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	agentBin = filepath.Join(tmp, "acp-agent")
	fixtureBin = filepath.Join(tmp, "mcp-fixture")
	// Built side by side: each build waits on the linker much of the time.
	// ACP_BENCH_AGENT names an agent binary to run instead of this tree's,
	// for before/after benchmarks on one machine (e.g. a build of main).
	bins := map[string]string{agentBin: "../cmd/acp-agent", fixtureBin: "../testfixtures/mcpserver"}
	if bin := os.Getenv("ACP_BENCH_AGENT"); bin != "" {
		if agentBin, err = filepath.Abs(bin); err != nil {
			return 0, err
		}
		delete(bins, filepath.Join(tmp, "acp-agent"))
	}
	var builds errgroup.Group
	for bin, pkg := range bins {
		builds.Go(func() error {
			var stderr bytes.Buffer
			args := []string{"build", "-o", bin}
			if raceEnabled { // the binaries are checked for races too
				args = append(args, "-race")
			}
			cmd := exec.Command("go", append(args, pkg)...)
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("go build %s: %v\n%s", pkg, err, stderr.String())
			}
			return nil
		})
	}
	if err := builds.Wait(); err != nil {
		return 0, err
	}
	nm, err := filepath.Abs("node_modules")
	if err != nil {
		return 0, err
	}
	everything = filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js")
	filesystem = filepath.Join(nm, "@modelcontextprotocol/server-filesystem/dist/index.js")
	acpxCLI = filepath.Join(nm, "acpx/dist/cli.js")
	supergateway = filepath.Join(nm, "supergateway/dist/index.js")
	for _, p := range []string{everything, filesystem, acpxCLI, supergateway} {
		if _, err := os.Stat(p); err != nil {
			return 0, fmt.Errorf("%v: the e2e npm packages are missing; run `make test` (it runs npm ci in e2e/)", err)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		return 0, fmt.Errorf("node is required by the e2e suite: %v", err)
	}
	return pgtest.Run(m), nil // stops the PostgreSQL server of the postgres tests
}
