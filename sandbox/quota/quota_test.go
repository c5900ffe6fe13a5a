package quota

import (
	"strings"
	"testing"
)

func TestTextBudget(t *testing.T) {
	b := NewTextBudget(10)
	if got := b.Take("hello"); got != "hello" || b.Note() != "" {
		t.Errorf("Take = %q, note %q", got, b.Note())
	}
	if got := b.Take("wörld!!"); got != "wörl" { // ö is 2 bytes: 5+5 = 10
		t.Errorf("Take = %q", got)
	}
	if got := b.Take("more"); got != "" {
		t.Errorf("Take after the budget = %q", got)
	}
	if note := b.Note(); !strings.Contains(note, "7 B of text cut") || !strings.Contains(note, "limit of 10 B") {
		t.Errorf("note = %q", note)
	}
}

func TestTextBudget_CutsAtRuneBoundary(t *testing.T) {
	b := NewTextBudget(4)
	if got := b.Take("aé€"); got != "aé" { // a(1) é(2) €(3): 4 bytes keep "aé" (3)
		t.Errorf("Take = %q", got)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 256 << 10: "256 KiB", 5 << 20: "5 MiB", 6_500_000: "6.2 MiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLimitsWithDefaults(t *testing.T) {
	l := Limits{ToolsPerSession: 5}.WithDefaults()
	if l.ServersPerSession != 10 || l.ToolsPerSession != 5 || l.MaxResultText != 4<<20 || l.MaxMedia != 5<<20 {
		t.Errorf("limits = %+v", l)
	}
}
