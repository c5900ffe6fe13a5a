package acp

import (
	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Compaction the editor can show (the schema's compaction_update and
// compaction_summary_chunk). To a client that advertised
// clientCapabilities.session.compaction, each compaction of the history
// for the model (the runner's EventCompaction steps, at the threshold, on a
// "too long" refusal, or by /compact) is a compaction_update in_progress
// when it starts, a compaction_summary_chunk for each piece of the summary
// as the model writes it, then a compaction_update completed with the whole
// summary, failed with why, or cancelled (the turn was cancelled meanwhile);
// a failed or cancelled one clears what was streamed of its summary. A
// client without the capability gets an agent message when a compaction
// completed or failed (compactionText), and nothing else.

// compactionOn reports whether the client takes compaction updates.
func (a *Agent) compactionOn() bool { return a.client.compaction.Load() }

// eventUpdates are the session/update notifications of a turn's event for
// this Agent's client: sessionUpdates, but a compaction's steps as
// compaction updates to a client that takes them.
func (a *Agent) eventUpdates(ev gateway.Event) []update {
	if ev.Kind == gateway.EventCompaction && ev.Compaction != nil && a.compactionOn() {
		return compactionUpdates(ev.Compaction)
	}
	return sessionUpdates(ev)
}

// compactionUpdates are the updates of one step of a compaction, for a
// client that advertised session.compaction.
func compactionUpdates(c *gateway.CompactionReport) []update {
	switch c.Status {
	case gateway.CompactionInProgress:
		if c.Delta != "" {
			return []update{{CompactionChunk: &compactionSummaryChunk{CompactionID: c.ID, Content: acpsdk.TextBlock(c.Delta)}}}
		}
		return []update{{Compaction: &compactionUpdate{CompactionID: c.ID, Status: string(c.Status)}}}
	case gateway.CompactionCompleted:
		summary := []acpsdk.ContentBlock{acpsdk.TextBlock(c.Summary)}
		return []update{{Compaction: &compactionUpdate{CompactionID: c.ID, Status: string(c.Status), Summary: &summary}}}
	case gateway.CompactionFailed, gateway.CompactionCancelled:
		var cleared []acpsdk.ContentBlock // null: the pieces streamed are no summary
		return []update{{Compaction: &compactionUpdate{CompactionID: c.ID, Status: string(c.Status), Summary: &cleared, Error: c.Err}}}
	}
	return nil
}
