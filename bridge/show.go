package bridge

import (
	"encoding/json"
	"maps"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// MetaShow is the key of the _meta of a CallToolResult, or of a progress
// notification, under which an in-process server (TransportInProcess, code
// of this program and so trusted) says how the client should show the call:
// a [gateway.Show] as JSON ({"diffs":[{"path","oldText","newText"}],
// "terminals":["id"],"locations":[{"path","line"}],"plan":{"entries":[…]}}).
// The ACP front end turns it into diff and terminal content, locations and a
// plan update. It is ignored from any other server: a remote server must
// not dictate what the editor shows as the agent's own changes.
const MetaShow = "acp-agent/show"

// showFromMeta decodes meta[MetaShow] for a server of transport t. It
// returns nil when there is nothing valid to show: a malformed value is
// dropped, as are diffs and locations whose path is not absolute and plan
// entries with an unknown status or priority.
func showFromMeta(t Transport, meta mcp.Meta) *gateway.Show {
	v, ok := meta[MetaShow]
	if !ok || t != TransportInProcess {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var sh gateway.Show
	if json.Unmarshal(b, &sh) != nil {
		return nil
	}
	out := gateway.Show{Terminals: sh.Terminals, Plan: sh.Plan}
	for _, d := range sh.Diffs {
		if filepath.IsAbs(d.Path) {
			out.Diffs = append(out.Diffs, d)
		}
	}
	for _, l := range sh.Locations {
		if filepath.IsAbs(l.Path) && l.Line >= 0 {
			out.Locations = append(out.Locations, l)
		}
	}
	if sh.Plan != nil {
		out.Plan = &gateway.Plan{Entries: make([]gateway.PlanEntry, 0, len(sh.Plan.Entries))}
		for _, e := range sh.Plan.Entries {
			if validPlanEntry(e) {
				out.Plan.Entries = append(out.Plan.Entries, e)
			}
		}
	}
	if out.Diffs == nil && out.Terminals == nil && out.Locations == nil && out.Plan == nil {
		return nil
	}
	return &out
}

// rawWithoutShow returns raw, the CallToolResult of a server of transport
// t, without its MetaShow for an in-process server: the Show is presented
// (as diffs, terminals, locations, a plan), not repeated in rawOutput and
// the store, where a diff's whole file texts would double the size.
func rawWithoutShow(t Transport, raw any) any {
	res, ok := raw.(*mcp.CallToolResult)
	if !ok || t != TransportInProcess || res.Meta[MetaShow] == nil {
		return raw
	}
	c := *res
	c.Meta = maps.Clone(res.Meta)
	delete(c.Meta, MetaShow)
	if len(c.Meta) == 0 {
		c.Meta = nil
	}
	return &c
}

// validPlanEntry reports whether e has content and ACP's plan entry status
// and priority values (https://agentclientprotocol.com/protocol/agent-plan).
func validPlanEntry(e gateway.PlanEntry) bool {
	switch e.Status {
	case "pending", "in_progress", "completed":
	default:
		return false
	}
	switch e.Priority {
	case "high", "medium", "low":
	default:
		return false
	}
	return e.Content != ""
}
