package store

import (
	"errors"
	"fmt"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// ErrNotFound: no session has that ID (or gateway key).
var ErrNotFound = errors.New("session not found")

// ErrBadCursor: a List cursor this store did not issue.
var ErrBadCursor = errors.New("invalid cursor")

// ErrFenced: a write fenced with a lease token came after a later hold of
// the session's lease (the writer lost its lease).
var ErrFenced = errors.New("the session's lease has moved on: this write comes from an older turn")

// ErrDamaged marks a store whose database SQLite finds corrupt (quick_check
// at open, or a corrupt page later) or that is not a SQLite database. The
// error names the file (a *FileError). Its remedy (a [gateway.Remedier],
// shown by [gateway.ErrorText]) is ": move the file away (or restore it
// from a backup) and start acp-agent again, which creates a new empty
// store".
var ErrDamaged = gateway.WithRemedy(errors.New("the database is damaged"),
	": move the file away (or restore it from a backup) and start acp-agent again, which creates a new empty store")

// ErrFull marks a write the store's file could not take: SQLite reported
// the disk full or an I/O error (a file not allowed to grow fails as
// either). Writes succeed again once there is room. The error names the
// file (a *FileError). Its remedy (a [gateway.Remedier], shown by
// [gateway.ErrorText]) is "once there is room, writes succeed again".
var ErrFull = gateway.WithRemedy(errors.New("the disk may be full or the file not allowed to grow"),
	"once there is room, writes succeed again")

// FileError is an error of the store kept in the file Path (SQLite): its
// text names the file, "session store <Path>: <Err>". errors.Is and
// errors.As see Err.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return "session store " + e.Path + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *FileError) Unwrap() error { return e.Err }

// SchemaError is a store's refusal of a database whose schema version Have
// is newer than Want, the newest this build knows: a newer acp-agent wrote
// it. It reads "the database has schema version 9, newer than this
// acp-agent's 5"; the engine's error around it names the database. What to
// do (upgrade, or use another database) depends on how the program names
// its store, so the front end that opened it says it.
type SchemaError struct {
	// Have is the database's schema version.
	Have int
	// Want is the schema version this build writes.
	Want int
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the database has schema version %d, newer than this acp-agent's %d", e.Have, e.Want)
}
