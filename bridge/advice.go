package bridge

import (
	"errors"
	"fmt"

	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// ErrorText is the text a user (or the model) is shown for err, an error
// of a session's MCP servers (ServerStatus.Err, a tool call's failure): err's
// own text, followed by what to do about the refusals of the policies the
// bridge enforces, whose errors state only the fact:
//
//   - a *urlpolicy.Error that a setting would lift: " (set
//     sandbox.allowPrivateNetworks to allow it)", "; use https, or add
//     the host to sandbox.allowHosts" for plain http, or "; its operator
//     may list the host in sandbox.allowHosts" for loopback refused by
//     urlpolicy.Policy.RefuseLoopback (https would be refused too);
//   - a *quota.RateLimitError: "; retry in N s";
//   - a *signin.CorruptError (the sign-in token file): ": delete it and
//     sign in to its MCP servers again";
//   - a server's reason after Manager.Logout ("signed out"): " (/logout);
//     /login signs in again";
//   - an error with a remedy (a Remedy() string method, such as
//     *StdioRefusedError): "; " and the remedy.
//
// Any other error is its own text. A nil err is "".
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error() + advice(err)
}

// advice is what ErrorText adds to err's text, or "".
func advice(err error) string {
	var pe *urlpolicy.Error
	var rle *quota.RateLimitError
	var corrupt *signin.CorruptError
	var rem interface{ Remedy() string }
	switch {
	case errors.As(err, &pe) && pe.Loopback:
		return "; its operator may list the host in " + pe.Setting
	case errors.As(err, &pe) && pe.Setting == urlpolicy.SettingAllowHosts:
		return "; use https, or add the host to " + pe.Setting
	case errors.As(err, &pe) && pe.Setting != "":
		return " (set " + pe.Setting + " to allow it)"
	case errors.As(err, &rle):
		return fmt.Sprintf("; retry in %d s", rle.RetrySeconds())
	case errors.As(err, &corrupt):
		return ": delete it and sign in to its MCP servers again"
	case errors.Is(err, errSignedOut):
		return " (/logout); /login signs in again"
	case errors.As(err, &rem) && rem.Remedy() != "":
		return "; " + rem.Remedy()
	}
	return ""
}

// advised returns err with the text ErrorText gives it, for the errors the
// bridge returns to be shown as they are (a tool call's, a prompt's, a
// resource read's); errors.Is and errors.As see through it. It returns err
// itself when there is nothing to add.
func advised(err error) error {
	if err == nil || advice(err) == "" {
		return err
	}
	return &advisedError{err: err, msg: ErrorText(err)}
}

// advisedError is an error shown with the advice ErrorText adds.
type advisedError struct {
	err error
	msg string
}

func (e *advisedError) Error() string { return e.msg }
func (e *advisedError) Unwrap() error { return e.err }
