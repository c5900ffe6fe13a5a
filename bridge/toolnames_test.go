package bridge

import (
	"regexp"
	"strings"
	"testing"
)

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestBridgedNames(t *testing.T) {
	long := strings.Repeat("x", 80)
	tests := []struct {
		name string
		refs []ToolRef
		want []string // "" means: check only validity, hashing and uniqueness
	}{
		{"plain", []ToolRef{{"fs", "read_file"}}, []string{"mcp__fs__read_file"}},
		{"dashes kept", []ToolRef{{"my-srv", "get-sum"}}, []string{"mcp__my-srv__get-sum"}},
		{"dots and spaces", []ToolRef{{"a.b", "x y"}}, []string{"mcp__a_b__x_y"}},
		{"unicode one underscore per rune", []ToolRef{{"café", "日本"}}, []string{"mcp__caf_____"}},
		{"empty pieces", []ToolRef{{"", ""}}, []string{"mcp______"}},
		{"exactly 64", []ToolRef{{"s", strings.Repeat("t", 64-len("mcp__s__"))}}, []string{"mcp__s__" + strings.Repeat("t", 56)}},
		{"too long", []ToolRef{{"s", long}}, []string{""}},
		{"collision after sanitizing", []ToolRef{{"s", "a.b"}, {"s", "a_b"}}, []string{"", ""}},
		{"same tool on two servers differ", []ToolRef{{"one", "echo"}, {"two", "echo"}}, []string{"mcp__one__echo", "mcp__two__echo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BridgedNames(tt.refs)
			seen := map[string]bool{}
			for i, n := range got {
				if !validName.MatchString(n) {
					t.Errorf("name %q is not ^[a-zA-Z0-9_-]{1,64}$", n)
				}
				if seen[n] {
					t.Errorf("duplicate name %q", n)
				}
				seen[n] = true
				if tt.want[i] != "" && n != tt.want[i] {
					t.Errorf("name[%d] = %q, want %q", i, n, tt.want[i])
				}
				if tt.want[i] == "" && !regexp.MustCompile(`_[0-9a-f]{8}$`).MatchString(n) {
					t.Errorf("name %q should end with a stable hash", n)
				}
			}
		})
	}
}

func TestBridgedNames_StableAcrossOrderAndSessions(t *testing.T) {
	a := BridgedNames([]ToolRef{{"s", "a.b"}, {"s", "a_b"}, {"s", strings.Repeat("y", 90)}})
	b := BridgedNames([]ToolRef{{"s", strings.Repeat("y", 90)}, {"s", "a_b"}, {"s", "a.b"}})
	if a[0] != b[2] || a[1] != b[1] || a[2] != b[0] {
		t.Errorf("names depend on order: %v vs %v", a, b)
	}
	if a[0] == a[1] {
		t.Errorf("colliding tools got the same name %q", a[0])
	}
}

func TestBridgedNames_TruncatedKeepsPrefix(t *testing.T) {
	n := BridgedNames([]ToolRef{{"fixture", "a_tool_with_a_deliberately_very_long_name_that_needs_truncation_when_bridged"}})[0]
	if len(n) != MaxToolNameLen || !strings.HasPrefix(n, "mcp__fixture__a_tool_with") {
		t.Errorf("name %q (%d chars), want 64 chars keeping the readable prefix", n, len(n))
	}
}

func FuzzBridgedNames(f *testing.F) {
	f.Add("fs", "read_file", "fs", "read.file")
	f.Add("", "", "\x00", "ü")
	f.Fuzz(func(t *testing.T, s1, t1, s2, t2 string) {
		refs := []ToolRef{{s1, t1}, {s2, t2}}
		got := BridgedNames(refs)
		if len(got) != 2 {
			t.Fatalf("got %d names", len(got))
		}
		for _, n := range got {
			if !validName.MatchString(n) {
				t.Fatalf("invalid name %q for %q", n, refs)
			}
		}
		if refs[0] != refs[1] && got[0] == got[1] {
			t.Fatalf("distinct refs %q got the same name %q", refs, got[0])
		}
	})
}
