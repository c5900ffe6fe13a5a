package store

import (
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// A session's automatic title, the first prompt's first visible line,
// carries no escape sequences, control or format characters.
func TestTitleFrom(t *testing.T) {
	for in, want := range map[string]string{
		"Fix the build\nand more":                                "Fix the build",
		"\u001b]0;PWNED\u0007\u001b[2J\nFix \u202egnp.exe\u200b": "Fix gnp.exe",
		"\u001b[31mred\u001b[0m alert":                           "red alert",
		"   \n\n":                                                "",
	} {
		if got := TitleFrom([]gateway.Content{gateway.TextContent(in)}); got != want {
			t.Errorf("TitleFrom(%q) = %q, want %q", in, got, want)
		}
	}
	if got := TitleFrom([]gateway.Content{gateway.TextContent(strings.Repeat("word ", 40))}); len([]rune(got)) != MaxTitleRunes {
		t.Errorf("a long first line: %q (%d characters), want %d", got, len([]rune(got)), MaxTitleRunes)
	}
}
