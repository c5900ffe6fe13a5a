package doccheck

import (
	"slices"
	"strings"
	"testing"
)

// TestDocLinks_Fixture runs the doc link check over testdata/links, whose
// comments hold every kind of link, and wants exactly its broken ones.
func TestDocLinks_Fixture(t *testing.T) {
	r := newResolver(t, "./internal/doccheck/testdata/links")
	if len(r.own) != 1 {
		t.Fatalf("listed %d packages, want testdata/links alone", len(r.own))
	}
	var got []string
	for _, b := range r.checkPackage(t, r.own[0]) {
		// file:line: text: why; the why is free prose.
		parts := strings.SplitN(b, ": ", 3)
		got = append(got, parts[0]+": "+parts[1])
		t.Log(b)
	}
	const file = "internal/doccheck/testdata/links/links.go"
	want := []string{
		file + ":12: [Gone]",
		file + ":13: [T.Gone]",
		file + ":14: [T.Promoted]",
		file + ":15: [links.Gone]",
		file + ":16: [errors.Gone]",
		file + ":17: [gateway.Registry.Gone]",
		file + ":18: [store.Record]",
		file + ":19: [example.com/nowhere.Thing]",
		file + ":28: [Gone2]",
		file + ":32: [T.Gone3]",
		file + ":33: [Gone4]",
		file + ":47: [I.Gone5]",
		file + ":57: [gateway.Gone6]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
