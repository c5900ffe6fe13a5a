package signin

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/oauth2"
)

// ErrDeleteRecord, returned by the function given to [Store.Update], removes
// the record of the key instead of saving one; Update then returns nil, nil.
var ErrDeleteRecord = errors.New("signin: delete the record")

// ErrCorrupt is wrapped by the errors a [FileStore] returns when its file is
// not a token file it can read.
var ErrCorrupt = errors.New("signin: corrupt token file")

// signedOut returns the error a token source reports when it has no usable
// grant: an invalid_grant [oauth2.RetrieveError], which go-sdk's Streamable
// HTTP transport answers by sending the request without an Authorization
// header, so that the server's 401 starts a new sign-in.
func signedOut(serverURL, why string) error {
	return &oauth2.RetrieveError{
		ErrorCode:        "invalid_grant",
		ErrorDescription: fmt.Sprintf("no usable grant for MCP server %s: %s; sign in again", serverURL, why),
	}
}

// redactedError carries an error whose text may hold a secret (a token
// endpoint's response body, say) under a text with the secrets removed. Unwrap
// keeps errors.As working (for *oauth2.RetrieveError).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// maxErrorDetail bounds how much of a wrapped error's text (which may include a
// server's response body) goes into an error message.
const maxErrorDetail = 300

// redact wraps err with the message prefix + err's text in which every
// non-empty secret is replaced by "[redacted]" and which is cut to
// maxErrorDetail bytes.
func redact(prefix string, err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	for _, s := range secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, "[redacted]")
		}
	}
	if len(text) > maxErrorDetail {
		text = text[:maxErrorDetail] + "…"
	}
	return &redactedError{msg: prefix + ": " + text, err: err}
}

// secrets lists the secrets of rec, for redact.
func (r *Record) secrets() []string {
	s := []string{r.ClientSecret}
	if r.Token != nil {
		s = append(s, r.Token.AccessToken, r.Token.RefreshToken)
	}
	return s
}
