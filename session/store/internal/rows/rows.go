// Package rows holds what the SQL stores (session/store/sqlite and
// session/store/postgres) share: the encodings of a session's record, its
// usage total and its turns in their rows, and the List cursor (which the
// memory store issues too).
package rows

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// UsageColumns are a session's usage total, one column per field of
// gateway.Usage, in the order of UsageArgs.
const UsageColumns = `usage_input, usage_cache_read, usage_cache_write, usage_output, usage_thought, usage_requests, usage_cost, usage_unpriced`

// UsageArgs are the fields of u in the order of UsageColumns.
func UsageArgs(u gateway.Usage) []any {
	return []any{u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.OutputTokens, u.ThoughtTokens, u.Requests, u.Cost, u.Unpriced}
}

// TurnColumns are the columns of a turn that ReadTurns reads, in order.
const TurnColumns = `messages, stop_reason, usage, compaction`

// TurnRow is a turn as its row holds it: messages, usage and compaction
// as JSON text, usage and compaction nil (NULL) for none.
type TurnRow struct {
	Messages          string
	Usage, Compaction *string
}

// AtMillis is when turn was stored, in Unix milliseconds: its At, or now
// when that is zero (store.NextUpdated's rule).
func AtMillis(turn store.Turn) int64 {
	if turn.At.IsZero() {
		return time.Now().UnixMilli()
	}
	return turn.At.UnixMilli()
}

// EncodeTurn returns the row of a turn of session id.
func EncodeTurn(id string, turn store.Turn) (TurnRow, error) {
	fail := func(err error) (TurnRow, error) {
		return TurnRow{}, fmt.Errorf("session %s: encoding the turn: %w", id, err)
	}
	data, err := json.Marshal(turn.Messages)
	if err != nil {
		return fail(err)
	}
	row := TurnRow{Messages: string(data)}
	if turn.Usage != (gateway.Usage{}) {
		b, err := json.Marshal(turn.Usage)
		if err != nil {
			return fail(err)
		}
		row.Usage = new(string(b))
	}
	if turn.Compaction != nil {
		b, err := json.Marshal(turn.Compaction)
		if err != nil {
			return fail(err)
		}
		row.Compaction = new(string(b))
	}
	return row, nil
}

// ReadTurns reads the turns of session id from a Turns query's rows (the
// TurnColumns; next, scan and rowsErr are the rows' methods), oldest first.
// A turn stored before usage and compaction were kept (NULL) reads as zero
// usage and no compaction.
func ReadTurns(id string, next func() bool, scan func(...any) error, rowsErr func() error) ([]store.Turn, error) {
	var out []store.Turn
	for next() {
		var row TurnRow
		var stop string
		if err := scan(&row.Messages, &stop, &row.Usage, &row.Compaction); err != nil {
			return nil, err
		}
		t := store.Turn{StopReason: gateway.StopReason(stop)}
		if err := json.Unmarshal([]byte(row.Messages), &t.Messages); err != nil {
			return nil, fmt.Errorf("session %s: a stored turn: %w", id, err)
		}
		if row.Usage != nil {
			if err := json.Unmarshal([]byte(*row.Usage), &t.Usage); err != nil {
				return nil, fmt.Errorf("session %s: a stored turn's usage: %w", id, err)
			}
		}
		if row.Compaction != nil {
			if err := json.Unmarshal([]byte(*row.Compaction), &t.Compaction); err != nil {
				return nil, fmt.Errorf("session %s: a stored turn's compaction: %w", id, err)
			}
		}
		out = append(out, t)
	}
	return out, rowsErr()
}

// RecordColumns are the columns ScanRecord reads, in order.
const RecordColumns = `id, gateway_key, cwd, title, created_at, updated_at, servers, model, mode, server_changes, tenant, ` + UsageColumns

// ScanRecord reads a record from a row of the RecordColumns (scan is the
// row's Scan method).
func ScanRecord(scan func(...any) error) (store.Record, error) {
	var r store.Record
	var created, updated int64
	var servers, changes string
	u := &r.Usage
	if err := scan(&r.ID, &r.Key, &r.Cwd, &r.Title, &created, &updated, &servers, &r.Model, &r.Mode, &changes, &r.Tenant,
		&u.InputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.OutputTokens, &u.ThoughtTokens, &u.Requests, &u.Cost, &u.Unpriced); err != nil {
		return store.Record{}, err
	}
	r.Created, r.Updated = time.UnixMilli(created), time.UnixMilli(updated)
	if changes != "" {
		r.ServerChanges = []byte(changes)
	}
	if err := json.Unmarshal([]byte(servers), &r.Servers); err != nil {
		return store.Record{}, fmt.Errorf("session %s: servers: %w", r.ID, err)
	}
	return r, nil
}

// OrEmpty is s, or an empty slice for nil, so that servers encode as [].
func OrEmpty(s []store.Server) []store.Server {
	if s == nil {
		return []store.Server{}
	}
	return s
}

// ReadPage reads the records of a List query that asked for limit+1 rows
// (next, scan and rowsErr are its rows' methods) and returns at most limit
// of them with the cursor of the next page ("" at the end).
func ReadPage(next func() bool, scan func(...any) error, rowsErr func() error, limit int) ([]store.Record, string, error) {
	var out []store.Record
	for next() {
		r, err := ScanRecord(scan)
		if err != nil {
			return nil, "", err
		}
		out = append(out, r)
	}
	if err := rowsErr(); err != nil {
		return nil, "", err
	}
	cursor := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		cursor = EncodeCursor(last.Updated.UnixMilli(), last.ID)
	}
	return out, cursor, nil
}

// EncodeCursor returns the List cursor of the page after the record of
// session id updated at (Unix milliseconds).
func EncodeCursor(at int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at, 10) + ":" + id))
}

// DecodeCursor returns what EncodeCursor encoded in c, or an error
// wrapping store.ErrBadCursor.
func DecodeCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", fmt.Errorf("%w %q", store.ErrBadCursor, c)
	}
	at, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil {
		return 0, "", fmt.Errorf("%w %q", store.ErrBadCursor, c)
	}
	return n, id, nil
}
