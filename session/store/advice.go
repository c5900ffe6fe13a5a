package store

import "errors"

// ErrorText is the text a user is shown for err, an error of a session
// store (or one wrapping it, such as gateway.ErrTurnNotStored's): err's own
// text followed by what to do about the store's file, which the store's
// errors leave to the front ends:
//
//   - [ErrDamaged]: ": move the file away (or restore it from a backup) and
//     start acp-agent again, which creates a new empty store";
//   - [ErrFull]: "; once there is room, writes succeed again".
//
// Any other error is its own text. A nil err is "". Every front end that
// shows a store's error (acp, mcpserver, cmd/acp-agent) shows it through
// ErrorText, so the words are the same everywhere.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error() + advice(err)
}

// advice is what ErrorText adds to err's text, or "".
func advice(err error) string {
	switch {
	case errors.Is(err, ErrDamaged):
		return ": move the file away (or restore it from a backup) and start acp-agent again, which creates a new empty store"
	case errors.Is(err, ErrFull):
		return "; once there is room, writes succeed again"
	}
	return ""
}
