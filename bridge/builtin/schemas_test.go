package builtin

import "testing"

// The tools' schemas are inferred from their Go types once per process, not
// for every session's server: inference took about 7,500 allocations a
// server, which every session/new paid.
func TestNew_InfersSchemasOnce(t *testing.T) {
	New(&Options{Root: t.TempDir()})
	dir := t.TempDir()
	if n := testing.AllocsPerRun(10, func() { New(&Options{Root: dir}) }); n > 2000 {
		t.Errorf("New allocates %.0f times after the first server: the tool schemas are inferred again", n)
	}
}
