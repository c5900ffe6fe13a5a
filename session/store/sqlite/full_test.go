//go:build unix

package sqlite

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// A write the file cannot take (the process may not grow files,
// RLIMIT_FSIZE, as on a full disk) is store.ErrFull in a *store.FileError
// naming the file; once there is room, writes succeed again. The test
// lowers the limit of the whole test binary: it must not run in parallel.
func TestSQLite_FullDiskIsErrFull(t *testing.T) {
	path := t.TempDir() + "/sessions.db"
	st, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	if err := st.Create(t.Context(), store.Record{ID: "sess_a", Key: "acp:sess_a", Cwd: "/w", Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 1, Max: old.Max}); err != nil {
		t.Skipf("cannot lower RLIMIT_FSIZE: %v", err)
	}
	err = st.AppendTurn(t.Context(), "sess_a", turn(strings.Repeat("x", 64<<10), "y"))
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatal(rerr)
	}
	var fe *store.FileError
	if !errors.Is(err, store.ErrFull) || !errors.As(err, &fe) || fe.Path != path {
		t.Fatalf("AppendTurn on a full disk = %v; want store.ErrFull in a *store.FileError naming %s", err, path)
	}
	if !strings.HasSuffix(err.Error(), ": the disk may be full or the file not allowed to grow") {
		t.Errorf("AppendTurn on a full disk = %q; want the fact alone (what to do is the front end's)", err)
	}
	if err := st.AppendTurn(t.Context(), "sess_a", turn("after", "y")); err != nil {
		t.Errorf("AppendTurn once there is room: %v", err)
	}
}
