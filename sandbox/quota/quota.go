package quota

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
)

// Defaults of Limits.
const (
	DefaultServersPerSession = 10
	// DefaultToolsPerSession: tools past the model's budget are deferred
	// behind tool search, so a session can hold many; without tool search
	// (config context.toolSearch "off") every definition goes with every
	// request, and DefaultToolsPerSessionNoSearch applies.
	DefaultToolsPerSession         = 1000
	DefaultToolsPerSessionNoSearch = 100
	// DefaultMaxResultText is the text of one tool result the session
	// keeps; the model sees a token budget of it and pages the rest.
	DefaultMaxResultText = 4 << 20
	DefaultMaxMedia      = 5 << 20 // bytes of one image, audio or blob block
)

// Limits are the per-session quotas (config "limits"). Zero fields mean the
// Default* constants.
type Limits struct {
	// ServersPerSession caps the MCP servers of a session, default servers
	// from the config included.
	ServersPerSession int
	// ToolsPerSession caps the bridged tools of a session; tools beyond it
	// are left out, and reported.
	ToolsPerSession int
	// MaxResultText caps the text of one tool result, in bytes.
	MaxResultText int
	// MaxMedia caps one image, audio or blob block, in bytes (decoded).
	MaxMedia int
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.ServersPerSession <= 0 {
		l.ServersPerSession = DefaultServersPerSession
	}
	if l.ToolsPerSession <= 0 {
		l.ToolsPerSession = DefaultToolsPerSession
	}
	if l.MaxResultText <= 0 {
		l.MaxResultText = DefaultMaxResultText
	}
	if l.MaxMedia <= 0 {
		l.MaxMedia = DefaultMaxMedia
	}
	return l
}

// TextBudget caps the text of one tool result across its blocks. Use one
// per result; it is not safe for concurrent use.
type TextBudget struct {
	max, used, cut int
}

// NewTextBudget returns a budget of max bytes.
func NewTextBudget(max int) *TextBudget { return &TextBudget{max: max} }

// Take returns the part of s that fits in what is left of the budget, cut at
// a UTF-8 boundary, and records what was cut.
func (b *TextBudget) Take(s string) string {
	left := b.max - b.used
	if len(s) <= left {
		b.used += len(s)
		return s
	}
	keep := max(left, 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	b.used += keep
	b.cut += len(s) - keep
	return s[:keep]
}

// Note returns the note to append when text was cut, or "".
func (b *TextBudget) Note() string {
	if b.cut == 0 {
		return ""
	}
	return fmt.Sprintf("[acp-agent: the tool result was truncated: %s of text cut, over the limit of %s per result]",
		Size(b.cut), Size(b.max))
}

// MediaNote returns the note that replaces a binary block of n bytes over
// the limit max.
func MediaNote(kind, mimeType string, n, max int) string {
	return fmt.Sprintf("[acp-agent: %s (%s, %s) left out: over the limit of %s per block]", kind, mimeType, Size(n), Size(max))
}

// Size renders a byte count for people in IEC units, as
// github.com/dustin/go-humanize's IBytes does (three significant digits:
// "512 B", "12.5 KiB", "256 KiB", "1.5 GiB"), except that a whole number
// under ten units has no ".0" ("1 KiB", "5 MiB"), as the notes and errors
// that quote limits have always read. A negative n reads "-1 B". It is the
// one spelling of sizes in the agent's notes: TextBudget.Note, MediaNote,
// and the front ends' limit errors.
func Size(n int) string {
	if n < 0 {
		return strconv.Itoa(n) + " B"
	}
	return strings.Replace(humanize.IBytes(uint64(n)), ".0 ", " ", 1)
}
