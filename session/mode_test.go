package session

import (
	"errors"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
)

// TestSession_Mode checks a session's mode: the default of a new one, a
// change stored and kept by a reopen, an unknown mode refused.
func TestSession_Mode(t *testing.T) {
	c, _ := newTestCore(t, CoreOptions{DefaultMode: confine.WorkspaceWrite})
	cwd := t.TempDir()
	s, err := c.Open(t.Context(), OpenRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Mode(); m != confine.WorkspaceWrite {
		t.Fatalf("new session's mode %q, want the default", m)
	}
	if _, err := s.SetMode(t.Context(), "anything"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SetMode of an unknown mode: %v, want ErrInvalid", err)
	}
	stale, err := s.SetMode(t.Context(), confine.ReadOnly)
	if err != nil || len(stale) != 0 || s.Mode() != confine.ReadOnly {
		t.Fatalf("SetMode: %v, stale %v, mode %q", err, stale, s.Mode())
	}
	id := s.ID()
	s.End()
	s, err = c.Open(t.Context(), OpenRequest{ID: id, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Mode(); m != confine.ReadOnly {
		t.Errorf("reopened session's mode %q, want the stored read-only", m)
	}
	f, err := c.Open(t.Context(), OpenRequest{Fork: id, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if m := f.Mode(); m != confine.ReadOnly {
		t.Errorf("forked session's mode %q, want its source's", m)
	}
}
