// Package defaults holds the defaults that acp-agent's front ends and its
// session core share for the options they all have: the name and version
// they give their peers (ACP initialize's agentInfo, MCP serverInfo, the
// MCP clientInfo sent to servers) and the logger a nil *slog.Logger stands
// for. It imports the standard library alone, so any package may import it.
package defaults

import "log/slog"

// The name and version an implementation gives its peers when its options
// leave them empty.
const (
	Name    = "acp-agent"
	Version = "dev"
)

// Implementation fills in the zero values among *name, *version and
// *logger: [Name], [Version], and a logger that discards everything. The
// pointers must not be nil; they point into the caller's own copy of its
// options (constructors copy their options on entry). It holds no state.
func Implementation(name, version *string, logger **slog.Logger) {
	if *name == "" {
		*name = Name
	}
	if *version == "" {
		*version = Version
	}
	if *logger == nil {
		*logger = slog.New(slog.DiscardHandler)
	}
}
