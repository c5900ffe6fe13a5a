package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// MaxTitle is the most characters (runes) a title set with SetTitle keeps;
// a longer one is cut, ending with "…".
const MaxTitle = 200

// Delete deletes session id and everything kept of it (Store.Delete: its
// record, transcript, usage and compaction, lease rows): a live instance
// is ended first (see [Session.End]: its turn is cancelled, its servers
// closed) and its turns under way are committed, then deleted. An unknown
// id is an error wrapping store.ErrNotFound. With CoreOptions.Leases, the
// session's lease is taken first (after the live instance's turn has
// ended) and released after the delete, so no replica is running a turn
// of it meanwhile: a session another holder runs a turn of is refused
// with a *BusyError (Delete set), and the lease's new token fences out a
// late commit of an older turn. A live instance is ended even when the
// delete is then refused: the stored session stays, for session/load.
func (c *Core) Delete(ctx context.Context, id string) error {
	if s := c.Lookup(id); s != nil {
		c.log.Info("deleting a live session: ending it first", "session", id)
		s.End()
	}
	if err := c.history.wait(ctx, id); err != nil {
		return err
	}
	l, err := c.deleteLease(ctx, id)
	if err != nil {
		return err
	}
	if l != nil {
		defer c.releaseLease(ctx, l)
	}
	if err := c.store.Delete(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("session %q: %w", id, err)
		}
		return fmt.Errorf("deleting session %s from the session store: %w", id, err)
	}
	c.log.Info("session deleted", "session", id)
	return nil
}

// SetTitle sets the title of the stored session id, live or not, and
// returns the title stored: title with its runs of white space (new lines
// included) made one space and trimmed, cut to MaxTitle characters. A title
// that is empty after that wraps ErrInvalid; an unknown id wraps
// store.ErrNotFound. The automatic title (the first prompt's first line)
// never replaces it.
func (c *Core) SetTitle(ctx context.Context, id, title string) (string, error) {
	title = textsafe.Line(title, MaxTitle)
	if title == "" {
		return "", Invalidf("title must have visible text (not only white space, control or formatting characters)")
	}
	s := c.Lookup(id)
	if s != nil { // the model's title must not replace it (title.go)
		s.titleMu.Lock()
		defer s.titleMu.Unlock()
		s.clientTitle = true
	}
	if err := c.store.SetTitle(ctx, id, title); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("session %q: %w", id, err)
		}
		return "", fmt.Errorf("storing the title of session %s: %w", id, err)
	}
	if s != nil {
		c.history.NoteTitle(s.key, title)
	}
	return title, nil
}

// Stamp returns the updated time and title of the stored record of live
// session id as of its last turn, without reading the store (History.Stamp):
// what a session_info_update tells the client after a turn. ok is false
// for a session that is not live.
func (c *Core) Stamp(id string) (updated time.Time, title string, ok bool) {
	s := c.Lookup(id)
	if s == nil {
		return time.Time{}, "", false
	}
	return c.history.Stamp(s.key)
}

// fork stores the copy of session src made by Open for OpenRequest.Fork:
// rec, the new session's record, is created, then src's committed turns
// (after this process's commits of src under way) are appended to it, in
// one transaction on a store.BatchStore. The copies keep the messages, stop
// reasons and compactions, so the model sees the fork as it saw src; not
// the usage, which src's user has been told of already: the fork's totals
// start at zero. A copy that fails is deleted again.
func (c *Core) fork(ctx context.Context, rec store.Record, src string) error {
	if err := c.history.wait(ctx, src); err != nil {
		return err
	}
	turns, err := c.store.Turns(ctx, src)
	if err != nil {
		return fmt.Errorf("reading session %s to fork it: %w", src, err)
	}
	if err := c.store.Create(ctx, rec); err != nil {
		return fmt.Errorf("storing the session: %w", err)
	}
	batch := make([]store.SessionTurn, len(turns))
	for i, t := range turns {
		t.Usage = gateway.Usage{}
		batch[i] = store.SessionTurn{ID: rec.ID, Turn: t}
	}
	err = nil
	if bs, ok := c.store.(store.BatchStore); ok && len(batch) > 0 {
		err = bs.AppendTurns(ctx, batch)
	} else {
		for _, b := range batch {
			if err = c.store.AppendTurn(ctx, b.ID, b.Turn); err != nil {
				break
			}
		}
	}
	if err != nil {
		if derr := c.store.Delete(context.WithoutCancel(ctx), rec.ID); derr != nil {
			c.log.Warn("deleting a fork whose copy failed failed too", "session", rec.ID, "err", derr)
		}
		return fmt.Errorf("copying the turns of session %s to its fork: %w", src, err)
	}
	c.log.Info("session forked", "session", rec.ID, "from", src, "turns", len(turns))
	return nil
}
