package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// Store returns the store.Store the gateway keeps for this client's
// tenant, over the sessions extension (docs/gateway-protocol.md): Dial the
// client with Extensions {ExtSessions: ExtSessionsVersion} so that a gateway
// without a store is refused. Errors map back: not_found is
// store.ErrNotFound (a session of another tenant too), bad_cursor
// store.ErrBadCursor, conflict store.ErrFenced. Each call waits up to
// 10s for a connection while the client reconnects. A turn's AppendTurn
// carries the lease token of the turn's chat.send, so that it is fenced by
// the turn's lease. Close does nothing: close the Client. Safe for
// concurrent use.
func (r *Client) Store() store.Store { return remoteStore{r} }

type remoteStore struct{ c *Client }

var _ store.Store = remoteStore{}

// call runs one sessions.* method on the current connection.
func (s remoteStore) call(ctx context.Context, method string, params, result any) error {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	p, err := s.c.current(wctx)
	cancel()
	if err != nil {
		return err
	}
	err = p.call(ctx, method, params, result)
	var re *RemoteError
	if errors.As(err, &re) {
		switch re.Code {
		case CodeNotFound:
			return fmt.Errorf("%w (gateway %s: %s)", store.ErrNotFound, s.c.currentURL(), re.Message)
		case CodeBadCursor:
			return fmt.Errorf("%w (gateway %s: %s)", store.ErrBadCursor, s.c.currentURL(), re.Message)
		case CodeConflict:
			return fmt.Errorf("%w (gateway %s: %s)", store.ErrFenced, s.c.currentURL(), re.Message)
		}
	}
	if err != nil {
		return fmt.Errorf("the gateway's session store (%s): %w", s.c.currentURL(), err)
	}
	return nil
}

// learn remembers which stored session a session key is, for chat.send.
func (s remoteStore) learn(r WireRecord) {
	s.c.mu.Lock()
	s.c.ids[r.Key] = r.ID
	s.c.mu.Unlock()
}

func (s remoteStore) Create(ctx context.Context, r store.Record) error {
	w := wireRecord(r)
	if err := s.call(ctx, "sessions.create", SessionCreateParams{Record: w}, nil); err != nil {
		return err
	}
	s.learn(w)
	return nil
}

func (s remoteStore) Get(ctx context.Context, id string) (store.Record, error) {
	var w WireRecord
	if err := s.call(ctx, "sessions.get", SessionIDParams{ID: id}, &w); err != nil {
		return store.Record{}, err
	}
	s.learn(w)
	return w.record(""), nil
}

func (s remoteStore) SetServers(ctx context.Context, id string, servers []store.Server) error {
	return s.call(ctx, "sessions.setServers", SessionSetServersParams{ID: id, Servers: servers}, nil)
}

func (s remoteStore) SetModel(ctx context.Context, id, model string) error {
	return s.call(ctx, "sessions.setModel", SessionSetModelParams{ID: id, Model: model}, nil)
}

func (s remoteStore) SetTitle(ctx context.Context, id, title string) error {
	return s.call(ctx, "sessions.setTitle", SessionSetTitleParams{ID: id, Title: title}, nil)
}

// Delete implements store.Store: sessions.delete, which the gateway
// refuses (busy, -32005) while any replica runs a turn of the session.
func (s remoteStore) Delete(ctx context.Context, id string) error {
	if err := s.call(ctx, "sessions.delete", SessionIDParams{ID: id}, nil); err != nil {
		return err
	}
	s.c.mu.Lock()
	delete(s.c.fences, id)
	s.c.mu.Unlock()
	return nil
}

func (s remoteStore) List(ctx context.Context, opts store.ListOptions) ([]store.Record, string, error) {
	var res SessionListResult
	if err := s.call(ctx, "sessions.list", SessionListParams{Cwd: opts.Cwd, Cursor: opts.Cursor, Limit: opts.Limit}, &res); err != nil {
		return nil, "", err
	}
	out := make([]store.Record, len(res.Sessions))
	for i, w := range res.Sessions {
		out[i] = w.record("")
	}
	return out, res.NextCursor, nil
}

func (s remoteStore) AppendTurn(ctx context.Context, id string, turn store.Turn) error {
	s.c.mu.Lock()
	token := s.c.fences[id]
	s.c.mu.Unlock()
	return s.call(ctx, "sessions.appendTurn", SessionAppendTurnParams{ID: id, LeaseToken: token, Turn: wireTurn(turn)}, nil)
}

// Turns implements store.Store. A session's history read from the store
// (session/load) holds no turn of this client's yet: the next chat.send
// sends no historyLease, and the gateway checks the history against the
// store.
func (s remoteStore) Turns(ctx context.Context, id string) ([]store.Turn, error) {
	s.c.setSynced(id, 0)
	var res SessionTurnsResult
	if err := s.call(ctx, "sessions.turns", SessionIDParams{ID: id}, &res); err != nil {
		return nil, err
	}
	out := make([]store.Turn, len(res.Turns))
	for i, t := range res.Turns {
		out[i] = t.turn()
	}
	return out, nil
}

func (s remoteStore) Close() error { return nil }

// attacher is a History that reads a stored session's history again
// (session.History).
type attacher interface {
	Attach(ctx context.Context, key, id string) ([]store.Turn, error)
}

// reload reads the history of the stored session id, attached under key,
// from the store again (the gateway ran a turn on the stored history, which
// this client's lacked: ChatSendResult.HistoryReloaded), so that the turn
// joins the stored history and the next turn sends it. It reports whether
// it did; a failure is logged, and the next chat.send, sent with no
// historyLease, finds the history stale again and runs on the stored one.
func (r *Client) reload(ctx context.Context, key, id string) bool {
	a, ok := r.hist().(attacher)
	if !ok || id == "" {
		return false
	}
	if _, err := a.Attach(ctx, key, id); err != nil {
		r.log.Warn("reloading a session's history from the gateway's store failed", "session", id, "err", err)
		return false
	}
	return true
}
