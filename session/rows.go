package session

import (
	"encoding/json"
	"fmt"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// The encodings of a session's usage total and of a turn in the rows of
// the SQL stores, SQLite and PostgreSQL.

// usageColumns are a session's usage total, one column per field of
// gateway.Usage, in the order of usageArgs.
const usageColumns = `usage_input, usage_cache_read, usage_cache_write, usage_output, usage_thought, usage_requests, usage_cost, usage_unpriced`

// usageArgs are the fields of u in the order of usageColumns.
func usageArgs(u gateway.Usage) []any {
	return []any{u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.OutputTokens, u.ThoughtTokens, u.Requests, u.Cost, u.Unpriced}
}

// turnColumns are the columns of a turn that readTurns reads, in order.
const turnColumns = `messages, stop_reason, usage, compaction`

// turnRow is a turn as its row holds it: messages, usage and compaction
// as JSON text, usage and compaction nil (NULL) for none.
type turnRow struct {
	messages          string
	usage, compaction *string
}

// encodeTurn returns the row of a turn of session id.
func encodeTurn(id string, turn Turn) (turnRow, error) {
	fail := func(err error) (turnRow, error) {
		return turnRow{}, fmt.Errorf("session %s: encoding the turn: %w", id, err)
	}
	data, err := json.Marshal(turn.Messages)
	if err != nil {
		return fail(err)
	}
	row := turnRow{messages: string(data)}
	if turn.Usage != (gateway.Usage{}) {
		b, err := json.Marshal(turn.Usage)
		if err != nil {
			return fail(err)
		}
		row.usage = new(string(b))
	}
	if turn.Compaction != nil {
		b, err := json.Marshal(turn.Compaction)
		if err != nil {
			return fail(err)
		}
		row.compaction = new(string(b))
	}
	return row, nil
}

// readTurns reads the turns of session id from a Turns query's rows (the
// turnColumns; next, scan and rowsErr are the rows' methods), oldest first.
// A turn stored before usage and compaction were kept (NULL) reads as zero
// usage and no compaction.
func readTurns(id string, next func() bool, scan func(...any) error, rowsErr func() error) ([]Turn, error) {
	var out []Turn
	for next() {
		var row turnRow
		var stop string
		if err := scan(&row.messages, &stop, &row.usage, &row.compaction); err != nil {
			return nil, err
		}
		t := Turn{StopReason: gateway.StopReason(stop)}
		if err := json.Unmarshal([]byte(row.messages), &t.Messages); err != nil {
			return nil, fmt.Errorf("session %s: a stored turn: %w", id, err)
		}
		if row.usage != nil {
			if err := json.Unmarshal([]byte(*row.usage), &t.Usage); err != nil {
				return nil, fmt.Errorf("session %s: a stored turn's usage: %w", id, err)
			}
		}
		if row.compaction != nil {
			if err := json.Unmarshal([]byte(*row.compaction), &t.Compaction); err != nil {
				return nil, fmt.Errorf("session %s: a stored turn's compaction: %w", id, err)
			}
		}
		out = append(out, t)
	}
	return out, rowsErr()
}
