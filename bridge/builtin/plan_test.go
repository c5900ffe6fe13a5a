package builtin

import (
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

func TestUpdatePlan(t *testing.T) {
	opts := Options{Root: t.TempDir()}
	res := callWith(t, opts, "update_plan", map[string]any{"entries": []any{
		map[string]any{"content": "read the code", "status": "completed", "priority": "high"},
		map[string]any{"content": "fix the bug", "status": "in_progress"},
		map[string]any{"content": "write a test", "status": "pending", "priority": "low"},
	}})
	if got := mustOK(t, "update_plan", res); got != "Plan updated: 3 task(s), 1 completed, 1 in progress, 1 pending." {
		t.Errorf("update_plan text = %q", got)
	}
	want := []gateway.PlanEntry{
		{Content: "read the code", Status: "completed", Priority: "high"},
		{Content: "fix the bug", Status: "in_progress", Priority: "medium"},
		{Content: "write a test", Status: "pending", Priority: "low"},
	}
	sh := showOf(t, res)
	if sh == nil || sh.Plan == nil || len(sh.Plan.Entries) != len(want) {
		t.Fatalf("update_plan show = %+v, want the plan", sh)
	}
	for i := range want {
		if sh.Plan.Entries[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, sh.Plan.Entries[i], want[i])
		}
	}
	// An empty list clears the plan: a Plan without entries.
	res = callWith(t, opts, "update_plan", map[string]any{"entries": []any{}})
	if got := mustOK(t, "update_plan", res); got != "Plan cleared." {
		t.Errorf("empty plan text = %q", got)
	}
	if sh := showOf(t, res); sh == nil || sh.Plan == nil || len(sh.Plan.Entries) != 0 {
		t.Errorf("empty plan show = %+v, want a Plan without entries", sh)
	}

	for _, tc := range []struct {
		name  string
		entry map[string]any
		want  []string
	}{
		{"status", map[string]any{"content": "x", "status": "done"}, []string{"entries[1].status", `"done"`, "pending, in_progress, completed"}},
		{"priority", map[string]any{"content": "x", "status": "pending", "priority": "urgent"}, []string{"entries[1].priority", `"urgent"`, "high, medium, low"}},
		{"content", map[string]any{"content": "  ", "status": "pending"}, []string{"entries[1].content", "non-empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := callWith(t, opts, "update_plan", map[string]any{"entries": []any{
				map[string]any{"content": "fine", "status": "pending"}, tc.entry}})
			mustFail(t, "update_plan", res, tc.want...)
			if showOf(t, res) != nil {
				t.Error("an invalid plan was shown")
			}
		})
	}
	res = callWith(t, opts, "update_plan", map[string]any{})
	if got := resultText(res); !res.IsError || !strings.Contains(got, "entries") {
		t.Errorf("update_plan without entries = %q (isError %v), want an error naming entries", got, res.IsError)
	}
}
