package connect

import (
	"errors"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// ErrGaveUp is wrapped by Run's error when the Proxy stopped trying to
// reach the gateway: Options.MaxElapsed passed without a connection, or
// the dialer said trying again cannot help ([Permanent]). The error's text
// names the gateway, how long it tried and the last cause.
var ErrGaveUp = errors.New("gave up connecting to the gateway")

// errClosedByProxy is the cause of a Link the Proxy closed itself.
var errClosedByProxy = errors.New("closed by the proxy")

// errEditorEnded is the cause of Run's context once the editor's input
// has ended.
var errEditorEnded = errors.New("the editor closed the connection")

// redact returns err with the gateway's URL (which may carry a token in
// its query) redacted where its text names it, and every http(s) URL
// (urlpolicy.RedactError); errors.Is and errors.As still see err.
func (p *Proxy) redact(err error) error {
	if err == nil {
		return nil
	}
	err = urlpolicy.RedactError(err)
	if p.opts.URL == "" || p.opts.URL == p.url || !strings.Contains(err.Error(), p.opts.URL) {
		return err
	}
	return &redactedError{err: err, msg: strings.ReplaceAll(err.Error(), p.opts.URL, p.url)}
}

// redactedError is an error whose text is redacted.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
