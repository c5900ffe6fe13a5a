package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// The store's errors state the fact; the remedies of ErrDamaged and
// ErrFull, which gateway.ErrorText shows, say what to do about a damaged or
// full file, wherever the error is in the chain.
func TestErrorText(t *testing.T) {
	driver := errors.New("database disk image is malformed (11)")
	full := errors.New("disk I/O error (778)")
	for _, tt := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{store.ErrNotFound, "session not found"},
		{&store.SchemaError{Have: 9, Want: 5}, "the database has schema version 9, newer than this acp-agent's 5"},
		{&store.FileError{Path: "/s.db", Err: fmt.Errorf("%w (%w)", store.ErrDamaged, driver)},
			"session store /s.db: the database is damaged (database disk image is malformed (11)): move the file away (or restore it from a backup) and start acp-agent again, which creates a new empty store"},
		{fmt.Errorf("the turn could not be stored: %w", &store.FileError{Path: "/s.db", Err: fmt.Errorf("%w: %w", full, store.ErrFull)}),
			"the turn could not be stored: session store /s.db: disk I/O error (778): the disk may be full or the file not allowed to grow; once there is room, writes succeed again"},
	} {
		if got := gateway.ErrorText(tt.err); got != tt.want {
			t.Errorf("ErrorText(%v) = %q\nwant %q", tt.err, got, tt.want)
		}
	}
}
