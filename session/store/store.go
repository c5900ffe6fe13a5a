package store

import (
	"context"
	"strings"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
)

// Record is what is stored about one session. Secret values never are: of
// its MCP servers only the names and transports are kept, since the client
// sends the servers (env, headers) again on session/load, and of the
// servers its user added (ServerChanges) no literal env or header value.
type Record struct {
	// ID is the ACP sessionId; Key the gateway session key.
	ID, Key string
	// Cwd is the session's working directory (absolute).
	Cwd string
	// Title is taken from the first prompt (TitleFrom) when the first turn
	// is committed, unless one was set before (SetTitle); empty until then.
	// A title set by SetTitle is never replaced by the automatic one.
	Title string
	// Created and Updated are the times of creation and of the last
	// committed turn.
	Created, Updated time.Time
	// Servers are the session's MCP servers as last connected.
	Servers []Server
	// Model is the ID of the model the session last used (its "model"
	// config option); empty for a session stored before models were kept,
	// which means the default model.
	Model string
	// Mode is the session's mode as last set (SetMode): "read-only",
	// "workspace-write" or "full-access", kept as given; "" when never
	// set: the configuration's default applies.
	Mode string
	// ServerChanges are the changes the session's user made to its MCP
	// servers while it ran (servers added, removed, disabled: /mcp), as
	// JSON that package session owns and reads again on every reopen;
	// nil when none was made. Of an added server's env and header values
	// only those written with ${VAR} references are kept (as written, read
	// from the agent's environment at connect); session withholds the
	// others. The store keeps the bytes as given.
	ServerChanges []byte
	// Tenant owns the session on a shared gateway (the tenant of the
	// token that created it); "" is the single owner of a local store.
	Tenant string
	// Usage is the session's total: the sum of its committed turns'
	// Usage, added by AppendTurn in the turn's transaction. Create stores
	// it as given (zero for a new session). Zero for a session whose turns
	// were all stored before usage was kept.
	Usage gateway.Usage
}

// Server names one MCP server of a session and its transport.
type Server struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
}

// Turn is one committed prompt turn.
type Turn struct {
	// Messages are the turn's conversation messages: the user message, the
	// assistant messages and the tool results.
	Messages []gateway.Message
	// StopReason is why the turn ended.
	StopReason gateway.StopReason
	// Usage is the tokens of the turn's model requests (zero for a turn
	// that asked no model, or stored before usage was kept).
	Usage gateway.Usage
	// Compaction, when set, is the compaction the turn made: from it on,
	// the model sees its summary and the messages from Compaction.From on
	// (see gateway.View). The transcript keeps every message for replay.
	Compaction *gateway.Compaction
	// At is when the turn was stored, an input of AppendTurn (zero: the
	// store's clock): the session's updated time becomes NextUpdated of it.
	// Turns returns it where the store keeps it (SQLite), else zero.
	At time.Time
}

// Title is the title the turn gives a session that has none: the first
// line of its prompt (TitleFrom), or "" when it does not start with the
// user's message.
func (t Turn) Title() string {
	if len(t.Messages) == 0 || t.Messages[0].Role != gateway.RoleUser {
		return ""
	}
	return TitleFrom(t.Messages[0].Content)
}

// NextUpdated is the updated time of a session updated at prev once a
// turn stored at at (zero: now) is appended: at in whole milliseconds, or
// prev plus 1 ms when that is not after prev, so that each turn moves it
// and session/list orders sessions by their last turn. Every store keeps
// this rule, so that the agent knows a session's updated time without
// reading it back.
func NextUpdated(prev, at time.Time) time.Time {
	if at.IsZero() {
		at = time.Now()
	}
	at = at.Truncate(time.Millisecond)
	if !at.After(prev) {
		return prev.Add(time.Millisecond)
	}
	return at
}

// ListOptions select sessions for List.
type ListOptions struct {
	// Tenant keeps only that tenant's sessions; "" lists the sessions with
	// no tenant (a local store's). Always applied.
	Tenant string
	// Cwd, if set, keeps only the sessions of that working directory.
	Cwd string
	// Cursor continues a listing where the previous page ended ("" starts).
	Cursor string
	// Limit is the page size; zero or negative means 50.
	Limit int
}

// Store keeps sessions and their transcripts across agent restarts. Every
// method is safe for concurrent use, and, for the embedded SQLite store
// (package session/store/sqlite), across processes sharing the database.
type Store interface {
	// Create stores a new session record.
	Create(ctx context.Context, r Record) error
	// Get returns the record of the session with id, or ErrNotFound.
	Get(ctx context.Context, id string) (Record, error)
	// SetServers replaces the recorded MCP servers of the session.
	SetServers(ctx context.Context, id string, servers []Server) error
	// SetServerChanges replaces the session's Record.ServerChanges (nil
	// clears them), or ErrNotFound. The updated time is left as it is.
	SetServerChanges(ctx context.Context, id string, changes []byte) error
	// SetModel records the ID of the model the session uses, or ErrNotFound.
	SetModel(ctx context.Context, id, model string) error
	// SetMode records the session's mode (Record.Mode), or ErrNotFound.
	// The store keeps mode as given, without checking it; "" goes back
	// to the configuration's default. The updated time is left as it is.
	SetMode(ctx context.Context, id, mode string) error
	// SetTitle sets the session's title (a client's session/set_title),
	// or ErrNotFound. The updated time is left as it is. A title set
	// before the first turn is kept by AppendTurn; "" lets the next turn
	// set the automatic one.
	SetTitle(ctx context.Context, id, title string) error
	// Delete removes the session and everything kept of it, in one
	// transaction: its record, its turns (transcript, usage and
	// compaction) and, where the store has them, its lease rows. An
	// unknown id is ErrNotFound. Deleting a session another process is
	// running is the caller's to prevent (take its lease first).
	Delete(ctx context.Context, id string) error
	// List returns sessions, newest (last updated) first, a page at a time,
	// and the cursor of the next page ("" at the end).
	List(ctx context.Context, opts ListOptions) ([]Record, string, error)
	// AppendTurn commits one finished turn of the session, in one
	// transaction: its messages, its stop reason, its usage and compaction,
	// the session's usage total (Record.Usage), the updated time, and the
	// title when the session has none yet.
	AppendTurn(ctx context.Context, id string, turn Turn) error
	// Turns returns every committed turn of the session, oldest first,
	// whole: messages, stop reason, usage and compaction (zero and nil for
	// a turn stored before they were kept).
	Turns(ctx context.Context, id string) ([]Turn, error)
	// Close releases the store.
	Close() error
}

// BatchStore is a Store that commits the turns of several sessions at once
// (group commit), which costs one commit (and one fsync, where the store
// syncs) instead of one per turn.
type BatchStore interface {
	Store
	// AppendTurns commits every turn of batch, in order, in one
	// transaction, each as AppendTurn would; if one fails, none is
	// committed and the error names it.
	AppendTurns(ctx context.Context, batch []SessionTurn) error
}

// SessionTurn is one turn of session ID, for BatchStore.AppendTurns.
type SessionTurn struct {
	ID   string
	Turn Turn
}

// MaxTitleRunes is the most characters (runes) of an automatic title: the
// first prompt's words (TitleFrom) or the model's.
const MaxTitleRunes = 80

// TitleFrom returns a session title made from a prompt: its first line
// with visible text, as textsafe.Line makes it (no escape sequences,
// control or format characters), at most MaxTitleRunes characters.
func TitleFrom(content []gateway.Content) string {
	for line := range strings.SplitSeq(gateway.PromptText(content), "\n") {
		if title := textsafe.Line(line, MaxTitleRunes); title != "" {
			return title
		}
	}
	return ""
}
