package store

import "errors"

// ErrNotFound: no session has that ID (or gateway key).
var ErrNotFound = errors.New("session not found")

// ErrBadCursor: a List cursor this store did not issue.
var ErrBadCursor = errors.New("invalid cursor")

// ErrFenced: a write fenced with a lease token came after a later hold of
// the session's lease (the writer lost its lease).
var ErrFenced = errors.New("the session's lease has moved on: this write comes from an older turn")

// ErrDamaged marks a store whose database SQLite finds corrupt (quick_check
// at open, or a corrupt page later) or that is not a SQLite database. The
// error names the file and says what to do with it.
var ErrDamaged = errors.New("the database is damaged")

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
