package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
)

// BenchmarkConfinedStart is what confining one process start costs: the
// release binary as the launcher (acp-agent confine PATH ARGV..., Landlock
// rules of a workspace-write session, then exec) against today's plain
// exec, each running /bin/true to its exit.
func BenchmarkConfinedStart(b *testing.B) {
	if confine.Supported().ABI < 1 {
		b.Skip("no Landlock: nothing to measure")
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip(err)
	}
	dir := b.TempDir()
	r, _ := confine.For(confine.WorkspaceWrite, confine.Workspace{Cwd: dir, Temp: dir}, confine.Server{}, truePath)
	spec, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"plain", func() *exec.Cmd { return exec.Command(truePath) }},
		{"confined", func() *exec.Cmd {
			c := exec.Command(agentBin, confine.Subcommand, truePath, "true")
			c.Env = append(os.Environ(), confine.RulesEnv+"="+string(spec))
			return c
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				if out, err := tt.cmd().CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
