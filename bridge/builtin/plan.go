package builtin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// The values of a plan entry's status and priority, as ACP has them
// (https://agentclientprotocol.com/protocol/agent-plan).
var (
	planStatuses   = []string{"pending", "in_progress", "completed"}
	planPriorities = []string{"high", "medium", "low"}
)

// PlanEntryInput is one task of update_plan.
type PlanEntryInput struct {
	Content  string `json:"content" jsonschema:"what the task is, in a few words"`
	Status   string `json:"status" jsonschema:"pending, in_progress or completed"`
	Priority string `json:"priority,omitempty" jsonschema:"high, medium or low (default medium)"`
}

// UpdatePlanInput is update_plan's arguments: the whole plan, which
// replaces the previous one.
type UpdatePlanInput struct {
	Entries []PlanEntryInput `json:"entries" jsonschema:"every task of the plan, in order; an empty list clears the plan"`
}

// UpdatePlanOutput is update_plan's structured result: how many tasks the
// plan has in each status.
type UpdatePlanOutput struct {
	Entries    int `json:"entries"`
	Pending    int `json:"pending"`
	InProgress int `json:"inProgress"`
	Completed  int `json:"completed"`
}

// updatePlan checks the plan and hands it to the client (gateway.Show.Plan
// in the result's _meta, an ACP "plan" update); it changes nothing else.
func (t *tools) updatePlan(_ context.Context, _ *mcp.CallToolRequest, in UpdatePlanInput) (*mcp.CallToolResult, UpdatePlanOutput, error) {
	plan := &gateway.Plan{Entries: make([]gateway.PlanEntry, 0, len(in.Entries))}
	var out UpdatePlanOutput
	for i, e := range in.Entries {
		if strings.TrimSpace(e.Content) == "" {
			return nil, UpdatePlanOutput{}, fmt.Errorf("entries[%d].content: must be a non-empty description of the task", i)
		}
		if !slices.Contains(planStatuses, e.Status) {
			return nil, UpdatePlanOutput{}, fmt.Errorf("entries[%d].status %q: must be one of %s", i, e.Status, strings.Join(planStatuses, ", "))
		}
		if e.Priority == "" {
			e.Priority = "medium"
		}
		if !slices.Contains(planPriorities, e.Priority) {
			return nil, UpdatePlanOutput{}, fmt.Errorf("entries[%d].priority %q: must be one of %s (or left out for medium)", i, e.Priority, strings.Join(planPriorities, ", "))
		}
		plan.Entries = append(plan.Entries, gateway.PlanEntry{Content: e.Content, Status: e.Status, Priority: e.Priority})
		switch e.Status {
		case "pending":
			out.Pending++
		case "in_progress":
			out.InProgress++
		case "completed":
			out.Completed++
		}
	}
	out.Entries = len(plan.Entries)
	msg := "Plan cleared."
	if out.Entries > 0 {
		msg = fmt.Sprintf("Plan updated: %d task(s), %d completed, %d in progress, %d pending.", out.Entries, out.Completed, out.InProgress, out.Pending)
	}
	return withShow(text(msg), gateway.Show{Plan: plan}), out, nil
}

// addUpdatePlan registers update_plan on s: kind think, read-only (it
// changes nothing on disk, so the permission policy never asks).
func addUpdatePlan(s *mcp.Server, t *tools) {
	no := false
	mcp.AddTool(s, &mcp.Tool{
		Name:        "update_plan",
		Meta:        kind("think"),
		Description: "Show your task list to the user: send the whole plan each time (it replaces the previous one; an empty list clears it). Each entry has content, a status (pending, in_progress or completed) and optionally a priority (high, medium or low; default medium). Keep one task in_progress while you work on it.",
		Annotations: &mcp.ToolAnnotations{Title: "Update plan", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
	}, t.updatePlan)
}
