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

// ErrCorrupt: a [FileStore]'s file is not a token file it can read. The
// store's errors are a [*CorruptError], which is ErrCorrupt to errors.Is.
var ErrCorrupt = errors.New("signin: corrupt token file")

// CorruptError is the error of a [FileStore] whose file Path is not a
// token file it can read (not JSON, another version, an invalid record).
// It reads "signin: corrupt token file <Path> (<Err>)"; the file is kept
// as it is, for the user to delete or repair, as [CorruptError.Remedy]
// says. errors.Is(err, ErrCorrupt) holds; errors.As sees Err.
type CorruptError struct {
	// Path is the token file.
	Path string
	// Err is what is wrong with it, such as the JSON decoder's error or
	// "version 7, want 1".
	Err error
}

func (e *CorruptError) Error() string { return fmt.Sprintf("%v %s (%v)", ErrCorrupt, e.Path, e.Err) }

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns Err.
func (e *CorruptError) Unwrap() error { return e.Err }

// Remedy says what to do about the file, ": delete it and sign in to its
// MCP servers again", as the front ends show it after the error's text
// (gateway.ErrorText, whose Remedier contract it meets).
func (e *CorruptError) Remedy() string { return ": delete it and sign in to its MCP servers again" }

// EndpointError is a URL of the sign-in of an MCP server that the URL
// policy refused (urlpolicy.SignInPolicy): a request or redirect the flow
// would have sent, an endpoint its metadata advertised, or the sign-in
// link. It reads like `token endpoint http://127.0.0.1:5555/token of MCP
// server "remote" is refused: a server not on loopback may not send the
// agent to loopback`. errors.Is(err, urlpolicy.ErrRefused) holds.
type EndpointError struct {
	// Server is the MCP server's name (Config.Server).
	Server string
	// Kind says what the URL is, such as "token endpoint" or
	// "authorization server metadata redirect"; "" when unknown.
	Kind string
	// URL is the refused URL without userinfo, query or fragment.
	URL string
	// Rule is the rule broken (the *urlpolicy.Error's Rule).
	Rule string
	// Err is the refusal, a *urlpolicy.Error.
	Err error
}

func (e *EndpointError) Error() string {
	kind := e.Kind
	if kind == "" {
		kind = "URL"
	}
	return fmt.Sprintf("%s %s of MCP server %q is refused: %s", kind, e.URL, e.Server, e.Rule)
}

// Unwrap returns Err, so that errors.Is(err, urlpolicy.ErrRefused) holds.
func (e *EndpointError) Unwrap() error { return e.Err }

// signedOut returns the error a token source reports when it has no usable
// grant: an invalid_grant [oauth2.RetrieveError], which go-sdk's Streamable
// HTTP transport (and bridge's for SSE) answers by sending the request
// without an Authorization header, so that the server's 401 starts a new
// sign-in: the front end's sign-in link is what the user is told to do.
func signedOut(serverURL, why string) error {
	return &oauth2.RetrieveError{
		ErrorCode:        "invalid_grant",
		ErrorDescription: fmt.Sprintf("no usable grant for MCP server %s: %s", serverURL, why),
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
