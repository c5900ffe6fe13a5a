package session

import (
	"errors"

	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// ErrorText is err as a front end shows it to its user: err's text and
// what the user can do about it, where the error states only the fact and
// leaves that to the front end. It is the one place those words are
// written for the errors of opening a session and of a turn:
//   - an error in err's chain with a Remedy() string method (a
//     *BusyError, a *LeaseLostError): "; " and its remedy;
//   - a session store's file (store.ErrorText);
//   - a *NameTakenError: "; choose another name";
//   - a *provider.Error with a Hint: the hint, in parentheses.
func ErrorText(err error) string {
	msg := store.ErrorText(err)
	var remedy interface{ Remedy() string }
	if errors.As(err, &remedy) {
		return msg + "; " + remedy.Remedy()
	}
	var taken *NameTakenError
	var pe *provider.Error
	switch {
	case errors.As(err, &taken):
		msg += "; choose another name"
	case errors.As(err, &pe) && pe.Hint != "":
		msg += " (" + pe.Hint + ")"
	}
	return msg
}

// ShownError is Err with the words a front end added to it (Text, as
// ErrorText writes them); errors.Is and errors.As see Err.
type ShownError struct {
	Err  error
	Text string
}

// Error returns Text.
func (e *ShownError) Error() string { return e.Text }

// Unwrap returns Err.
func (e *ShownError) Unwrap() error { return e.Err }

// Shown returns err with ErrorText's words, or err itself when there are
// none to add.
func Shown(err error) error {
	if err == nil {
		return nil
	}
	if msg := ErrorText(err); msg != err.Error() {
		return &ShownError{Err: err, Text: msg}
	}
	return err
}
