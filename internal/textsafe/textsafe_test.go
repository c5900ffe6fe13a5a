package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"\u001b]0;PWNED\u0007\u001b[2J… \u202egnp.exe", 0, "… gnp.exe"},
		{"Fix the \u001b[31mred\u001b[0m build", 0, "Fix the red build"},
		{"a\u001b]8;;https://evil.example\u001b\\link\u001b]8;;\u001b\\b", 0, "alinkb"},
		{"bell\u0007 and\u0000 nul", 0, "bell and nul"},
		{"zero\u200bwidth\ufeff and \u2066isolate\u2069", 0, "zerowidth and isolate"},
		{"two\nlines\r\n\tand a tab\u2028sep", 0, "two lines and a tab sep"},
		{"c1 \u009b31m csi and \u009d0;x\u009c osc", 0, "c1 csi and osc"},
		{"Résumé 日本語 🚀", 0, "Résumé 日本語 🚀"},
		{"  spaced   out  ", 0, "spaced out"},
		{"bad \xff utf8", 0, "bad utf8"},
		{"\u001b[2J\u202e\u200b", 0, ""},
		{"trailing escape \u001b", 0, "trailing escape"},
		{"unterminated \u001b]0;title", 0, "unterminated"},
		{strings.Repeat("word ", 100), 10, "word word…"},
		{"日本語日本語日本語", 4, "日本語…"},
	} {
		got := Line(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		for _, r := range got {
			if Hidden(r) {
				t.Errorf("Line(%q) keeps the hidden %U", tt.in, r)
			}
		}
		if tt.max > 0 && utf8.RuneCountInString(got) > tt.max {
			t.Errorf("Line(%q, %d) has %d runes", tt.in, tt.max, utf8.RuneCountInString(got))
		}
	}
}

func FuzzLine(f *testing.F) {
	f.Add("\u001b]0;PWNED\u0007\u001b[2J… \u202egnp.exe", 20)
	f.Add("Résumé\n日本語", 0)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 300
		got := Line(s, max)
		if !utf8.ValidString(got) || got != strings.TrimSpace(got) || strings.Contains(got, "  ") {
			t.Fatalf("Line(%q) = %q", s, got)
		}
		for _, r := range got {
			if Hidden(r) {
				t.Fatalf("Line(%q) = %q keeps %U", s, got, r)
			}
		}
		if max > 0 && utf8.RuneCountInString(got) > max {
			t.Fatalf("Line(%q, %d) = %q: too long", s, max, got)
		}
	})
}
