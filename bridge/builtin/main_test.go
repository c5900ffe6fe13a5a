package builtin

import (
	"os"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
)

func TestMain(m *testing.M) {
	// run_command's confined children start through this binary, the
	// launcher in tests.
	confine.Main()
	os.Exit(m.Run())
}
