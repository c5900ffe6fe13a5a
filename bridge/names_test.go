package bridge

import (
	"strings"
	"testing"
)

func TestValidateServerName(t *testing.T) {
	for _, ok := range []string{"github", "my server", "files-2", "données", "工具"} {
		if err := ValidateServerName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, tt := range []struct{ name, want string }{
		{"", "non-empty"},
		{" \t ", "non-empty"},
		{"a\x00b", "U+0000"},
		{"evil\x1b[2J", "U+001B"},
		{"line\nbreak", "U+000A"},
		{"del\x7f", "U+007F"},
		{"c1\u0085", "U+0085"},
		{"gith\u202eub", "U+202E"},
		{"zero\u200bwidth", "U+200B"},
		{"sep\u2028x", "U+2028"},
		{"bad\xffutf8", "UTF-8"},
	} {
		err := ValidateServerName(tt.name)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want one naming %s", tt.name, err, tt.want)
			continue
		}
		if strings.ContainsAny(err.Error(), "\x00\x1b\n\x7f\u0085\u202e\u200b\u2028") {
			t.Errorf("%q: the error carries the raw character: %q", tt.name, err)
		}
	}
}
