package bridge

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
)

// ValidateServerName checks the name of an MCP server entry (ACP mcpServers
// or the config file's mcpServers) and returns nil, or an error stating the
// rule broken, with the name quoted so that nothing invisible reaches a
// terminal. A name must be valid UTF-8, not empty or only white space, and
// hold no control characters (C0, DEL, C1), no invisible formatting
// characters (Unicode Cf: zero-width and bidirectional controls such as
// U+202E) and no line or paragraph separators (U+2028, U+2029): the name is
// shown in /servers, in logs and in tool labels, where such characters hide
// or reorder text.
func ValidateServerName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("must be a non-empty string")
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("name %q is not valid UTF-8", name)
	}
	for i, r := range name {
		if textsafe.Hidden(r) {
			return fmt.Errorf("name %q has the control or invisible formatting character %U at byte %d; a server name must be visible text", name, r, i)
		}
	}
	return nil
}
