package gateway

import "strings"

// Remedier is an error that knows what its user can do about it. Its
// Error states the fact; Remedy says what to do, and [ErrorText], which
// every front end shows errors with, puts the two together. The contract
// is structural: a package implements it with a Remedy method and need not
// import gateway (the sandbox packages and signin do not).
//
// The errors that implement it: *urlpolicy.Error (the setting that would
// allow the URL), *quota.RateLimitError (when to retry), *signin.CorruptError
// (the token file), store.ErrDamaged and store.ErrFull (the session store's
// file), *provider.Error (its Hint), the bridge's refusal of a stdio command
// on a gateway host (*bridge.StdioRefusedError) and its signed-out servers,
// session's *NameTakenError, *BusyError and *LeaseLostError, and any error
// made by [WithRemedy].
type Remedier interface {
	error
	// Remedy returns what the user can do about the error, or "" for
	// nothing to say. It is written to follow the error's text: ErrorText
	// joins it with "; ", unless it begins with a space, ':', ';' or ','
	// and so brings its own joint (" (set sandbox.allowPrivateNetworks to
	// allow it)", ": delete it and sign in to its MCP servers again").
	Remedy() string
}

// ErrorText is err as the user (or the model) is shown it: err's text
// followed by the remedy of every error in its tree that has one (a
// [Remedier]), innermost first, each once; an error with none is its own
// text, and a nil err is "". It is the one place where errors that state
// only the fact are given what to do about them, for every front end (acp,
// mcpserver, cmd/acp-agent, the slash commands of package session) and
// for the model (the bridge's tool results, the runner's failed tool
// calls), so the words are the same everywhere.
//
// The tree is walked as errors.As walks it (Unwrap() error and Unwrap()
// []error), depth first, each error's remedy after those of the errors it
// wraps: "lease lost (disk full): once there is room…; send the prompt
// again" reads in the order the text does. ErrorText is safe for
// concurrent use if err's methods are.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(err.Error())
	var seen []string
	walkRemedies(err, func(r string) {
		for _, s := range seen {
			if s == r {
				return
			}
		}
		seen = append(seen, r)
		if strings.IndexByte(" :;,", r[0]) < 0 {
			b.WriteString("; ")
		}
		b.WriteString(r)
	})
	return b.String()
}

// walkRemedies calls f with each non-empty remedy in err's tree, those of
// the errors err wraps (left to right) before err's own.
func walkRemedies(err error, f func(string)) {
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			walkRemedies(inner, f)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if inner != nil {
				walkRemedies(inner, f)
			}
		}
	}
	if r, ok := err.(Remedier); ok {
		if s := r.Remedy(); s != "" {
			f(s)
		}
	}
}

// WithRemedy returns err with remedy as its [Remedier.Remedy]: its text is
// err's, and errors.Is and errors.As see err. It gives a sentinel its
// remedy (var ErrX = WithRemedy(errors.New("…"), "…"), which errors.Is
// then tells by identity), and lets a front end add the remedy only it can
// write (cmd/acp-agent's "or start with --store memory"). A nil err is nil;
// an empty remedy returns err itself.
func WithRemedy(err error, remedy string) error {
	if err == nil || remedy == "" {
		return err
	}
	return &remediedError{err: err, remedy: remedy}
}

// remediedError is WithRemedy's error.
type remediedError struct {
	err    error
	remedy string
}

func (e *remediedError) Error() string  { return e.err.Error() }
func (e *remediedError) Unwrap() error  { return e.err }
func (e *remediedError) Remedy() string { return e.remedy }

var _ Remedier = (*remediedError)(nil)
