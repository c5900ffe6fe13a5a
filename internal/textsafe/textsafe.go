// Package textsafe makes text from peers (a model, a client, an MCP
// server) safe to show on one line: in an editor's session list, a
// terminal's title bar, a log. Escape sequences could set a terminal's
// title or clear its screen, bidirectional overrides (U+202E) reorder what
// is read ("‮gnp.exe" shows as "exe.png"), and zero-width characters make
// two strings look alike.
package textsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r is a character that is not shown as text: a
// control character (Unicode Cc: C0, DEL, C1, ESC included), a format
// character (Cf: bidirectional controls such as U+202E and U+2066,
// zero-width U+200B–U+200D, U+FEFF) or a line or paragraph separator
// (U+2028, U+2029).
func Hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// Line returns s as one line of visible text: terminal escape sequences
// (ESC with what follows it: CSI "ESC [ … final", OSC/DCS/APC/PM strings up
// to BEL or "ESC \", and the C1 forms U+009B and U+009D) removed whole;
// tabs, line breaks and separators made spaces; every other Hidden
// character and invalid UTF-8 dropped; white space collapsed and trimmed;
// then at most max runes, the last one "…" when it was cut (max <= 0: no
// cap). "" when nothing visible is left. Safe for concurrent use.
func Line(s string, max int) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n <= 1:
			continue
		case r == 0x1b && i < len(s):
			switch s[i] {
			case '[':
				i = skipCSI(s, i+1)
			case ']', 'P', 'X', '^', '_':
				i = skipString(s, i+1)
			default:
				_, n := utf8.DecodeRuneInString(s[i:])
				i += n
			}
		case r == 0x9b:
			i = skipCSI(s, i)
		case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
			i = skipString(s, i)
		case r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || unicode.In(r, unicode.Zl, unicode.Zp):
			b.WriteByte(' ')
		case Hidden(r):
		default:
			b.WriteRune(r)
		}
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	if max > 0 && utf8.RuneCountInString(out) > max {
		out = strings.TrimSpace(string([]rune(out)[:max-1])) + "…"
	}
	return out
}

// skipCSI returns the index after the control sequence whose parameters
// start at s[i]: up to and including its final byte (0x40–0x7E), or the
// end of s.
func skipCSI(s string, i int) int {
	for ; i < len(s); i++ {
		if c := s[i]; c >= 0x40 && c <= 0x7e {
			return i + 1
		}
	}
	return i
}

// skipString returns the index after the control string (OSC, DCS, …)
// whose body starts at s[i]: after its BEL, ST ("ESC \" or U+009C), or the
// end of s.
func skipString(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x07 || r == 0x9c:
			return i + n
		case r == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		}
		i += n
	}
	return i
}
