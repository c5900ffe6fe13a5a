package mcpregistry

import (
	"errors"
	"fmt"
)

// ErrNotFound is wrapped by the error of [Client.Get] when the registry
// answers 404: it has no server of that name, or not that version.
var ErrNotFound = errors.New("not found in the registry")

// StatusError is a registry's answer other than 200 (and 404, which is
// [ErrNotFound]): the URL asked, the HTTP status and the registry's
// "error" message, when its body had one (at most 200 bytes of it).
type StatusError struct {
	URL     string
	Status  int
	Message string
}

func (e *StatusError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("registry %s: HTTP %d: %s", e.URL, e.Status, e.Message)
	}
	return fmt.Sprintf("registry %s: HTTP %d", e.URL, e.Status)
}

// ResolveError is why a server.json cannot become a config entry: the
// server's name, the field of server.json at fault ("packages[1].registryType",
// "remotes[0].url") and the rule it breaks, written for the person who ran the
// command ("nuget packages are not supported; use --package npm, pypi or oci,
// or --remote").
type ResolveError struct {
	Server string
	Field  string
	Rule   string
}

func (e *ResolveError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("server %s: %s", e.Server, e.Rule)
	}
	return fmt.Sprintf("server %s: %s: %s", e.Server, e.Field, e.Rule)
}
