package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// The server side of the sessions extension (docs/gateway-protocol.md,
// "Sessions kept by the gateway") and of the turns' leases.

// hasExt reports whether the extension name is enabled on the connection.
func (c *serverConn) hasExt(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exts[name] != 0
}

func (c *serverConn) tenantName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tenant
}

// turnState is a turn running in this process under a lease: ctx is the
// turn's (done once it is being cancelled), done is closed when its lease is
// released.
type turnState struct {
	ctx  context.Context
	done chan struct{}
}

// leaseOutcome is the Observer's name of how taking a lease ended with err.
func leaseOutcome(err error) string {
	var we *jsonrpc2.Error
	switch {
	case err == nil:
		return "acquired"
	case errors.As(err, &we) && we.Code == CodeBusy:
		return "busy"
	}
	return "error"
}

// endingTurnWait bounds the wait for a cancelled turn of the same session
// to end before a new one takes its lease.
const endingTurnWait = 10 * time.Second

// lease takes the lease a chat.send runs under: that of the stored session
// when it names one (which must be the connection's tenant's), from the
// server's Leases, else a process-local one of the connection's session
// key. A turn of the same session that this process is cancelling
// (chat.abort, a dropped connection) is waited for, so that a prompt right
// after a cancel is not refused. Another holder's lease is a CodeBusy error
// naming the session (in the translator's words: ChatSendParams.shownID)
// and the holder; a failure of the leases (a store's) is an internalError.
// release gives the lease up and ends the turn's record; call it once, when
// the turn ends.
func (c *serverConn) lease(ctx context.Context, p ChatSendParams) (l *store.Lease, release func(), err error) {
	if obs := c.s.opts.Observer; obs != nil {
		start := time.Now()
		defer func() { obs.LeaseWaited(leaseOutcome(err), time.Since(start)) }()
	}
	id := "key:" + c.scoped(p.SessionKey)
	leases := store.Leases(&c.s.keyLeases)
	if p.SessionID != "" {
		leases = c.s.opts.Leases
		if !c.hasExt(ExtSessions) {
			return nil, nil, badRequest("chat.send: sessionId needs the sessions extension, which is not enabled on this connection")
		}
		if _, err := c.ownRecord(ctx, p.SessionID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, nil, wireError(CodeForbidden, "chat.send: session %q is not one of this tenant's sessions", p.SessionID)
			}
			return nil, nil, c.storeError("chat.send", err)
		}
		id = p.SessionID
	}
	c.s.mu.Lock()
	prev := c.s.turns[id]
	c.s.mu.Unlock()
	if prev != nil && prev.ctx.Err() != nil {
		wctx, cancel := context.WithTimeout(ctx, endingTurnWait)
		select {
		case <-prev.done:
		case <-wctx.Done():
		}
		cancel()
	}
	if p.SessionID != "" && !c.fencedStore() {
		// The turn writes of the session's older leases are checked
		// against this process's leases (appendTurn): none is between its
		// check and its write when the new lease is taken.
		unlock := c.s.fence(id)
		l, err = leases.Acquire(ctx, id, c.s.opts.Replica)
		unlock()
	} else {
		l, err = leases.Acquire(ctx, id, c.s.opts.Replica)
	}
	var le *store.LeasedError
	switch {
	case errors.As(err, &le):
		return nil, nil, busyError(p.shownID(), le.Owner)
	case err != nil && ctx.Err() != nil:
		return nil, nil, wireError(CodeUnavailable, "chat.send: %v", context.Cause(ctx))
	case err != nil:
		return nil, nil, c.internalError(CodeUnavailable, fmt.Sprintf("chat.send: taking the lease of session %s", p.shownID()), err)
	}
	ts := &turnState{ctx: ctx, done: make(chan struct{})}
	c.s.mu.Lock()
	c.s.turns[id] = ts
	c.s.mu.Unlock()
	release = func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := l.Release(rctx); err != nil {
			c.s.log.Warn("releasing a session's lease failed", "session", l.ID, "err", err)
		}
		c.s.mu.Lock()
		if c.s.turns[id] == ts {
			delete(c.s.turns, id)
		}
		c.s.mu.Unlock()
		close(ts.done)
	}
	return l, release, nil
}

// ownRecord returns the stored session id if it is the connection's
// tenant's; a session of another tenant is store.ErrNotFound, exactly as
// a missing one.
func (c *serverConn) ownRecord(ctx context.Context, id string) (store.Record, error) {
	rec, err := c.s.opts.Store.Get(ctx, id)
	if err != nil {
		return store.Record{}, err
	}
	if rec.Tenant != c.tenantName() {
		return store.Record{}, store.ErrNotFound
	}
	return rec, nil
}

// sessions serves the sessions extension's methods, always scoped by the
// connection's tenant.
func (c *serverConn) sessions(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if !c.hasExt(ExtSessions) {
		if c.s.opts.Store == nil {
			return nil, wireError(CodeMethodNotFound, "%s: this gateway keeps no sessions (it runs without --store)", method)
		}
		return nil, wireError(CodeMethodNotFound, "%s: the sessions extension was not asked for in connect", method)
	}
	st := c.s.opts.Store
	decode := func(v any) error {
		if err := json.Unmarshal(params, v); err != nil {
			return badRequest("%s: %v", method, err)
		}
		return nil
	}
	// owned checks that id is the tenant's session, as not_found otherwise.
	owned := func(id string) error {
		if id == "" {
			return badRequest("%s: id is empty", method)
		}
		if _, err := c.ownRecord(ctx, id); err != nil {
			return c.storeError(method, err)
		}
		return nil
	}
	// update runs f, a store write of the tenant's session id.
	update := func(id string, f func() error) (any, error) {
		if err := owned(id); err != nil {
			return nil, err
		}
		if err := f(); err != nil {
			return nil, c.storeError(method, err)
		}
		return struct{}{}, nil
	}
	switch method {
	case "sessions.create":
		var p SessionCreateParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		if p.Record.ID == "" || p.Record.Key == "" {
			return nil, badRequest("%s: record.id and record.key must be set", method)
		}
		if err := st.Create(ctx, p.Record.record(c.tenantName())); err != nil {
			return nil, c.storeError(method, err)
		}
		return struct{}{}, nil
	case "sessions.get":
		var p SessionIDParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		if p.ID == "" {
			return nil, badRequest("%s: id is empty", method)
		}
		rec, err := c.ownRecord(ctx, p.ID)
		if err != nil {
			return nil, c.storeError(method, err)
		}
		return wireRecord(rec), nil
	case "sessions.list":
		var p SessionListParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		recs, next, err := st.List(ctx, store.ListOptions{Tenant: c.tenantName(), Cwd: p.Cwd, Cursor: p.Cursor, Limit: p.Limit})
		if err != nil {
			return nil, c.storeError(method, err)
		}
		res := SessionListResult{Sessions: make([]WireRecord, len(recs)), NextCursor: next}
		for i, r := range recs {
			res.Sessions[i] = wireRecord(r)
		}
		return res, nil
	case "sessions.setServers":
		var p SessionSetServersParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		return update(p.ID, func() error { return st.SetServers(ctx, p.ID, p.Servers) })
	case "sessions.setModel":
		var p SessionSetModelParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		return update(p.ID, func() error { return st.SetModel(ctx, p.ID, p.Model) })
	case "sessions.setTitle":
		var p SessionSetTitleParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		return update(p.ID, func() error { return st.SetTitle(ctx, p.ID, p.Title) })
	case "sessions.delete":
		var p SessionIDParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		if err := owned(p.ID); err != nil {
			return nil, err
		}
		if err := c.deleteSession(ctx, p.ID); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	case "sessions.turns":
		var p SessionIDParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		if err := owned(p.ID); err != nil {
			return nil, err
		}
		turns, err := st.Turns(ctx, p.ID)
		if err != nil {
			return nil, c.storeError(method, err)
		}
		res := SessionTurnsResult{Turns: make([]WireTurn, len(turns))}
		for i, t := range turns {
			res.Turns[i] = wireTurn(t)
		}
		return res, nil
	case "sessions.appendTurn":
		var p SessionAppendTurnParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		if err := owned(p.ID); err != nil {
			return nil, err
		}
		if err := c.appendTurn(ctx, p); err != nil {
			return nil, c.storeError(method, err)
		}
		return struct{}{}, nil
	}
	return nil, wireError(CodeMethodNotFound, "unknown method %q", method)
}

// deleteSession deletes the stored session id under its lease, so that
// no replica runs a turn of it meanwhile: a turn of it that this process
// is cancelling is waited for (as lease does), and one that a holder runs
// is a CodeBusy error naming the session and the holder. Taking the lease
// bumps its token, so a write of an older turn is fenced out; the store's
// Delete removes the lease's row with the rest.
func (c *serverConn) deleteSession(ctx context.Context, id string) error {
	c.s.mu.Lock()
	prev := c.s.turns[id]
	c.s.mu.Unlock()
	if prev != nil && prev.ctx.Err() != nil {
		wctx, cancel := context.WithTimeout(ctx, endingTurnWait)
		select {
		case <-prev.done:
		case <-wctx.Done():
		}
		cancel()
	}
	l, err := c.s.opts.Leases.Acquire(ctx, id, c.s.opts.Replica)
	var le *store.LeasedError
	switch {
	case errors.As(err, &le):
		return wireError(CodeBusy, "sessions.delete: %s: it cannot be deleted while it runs a turn; cancel the turn there (or wait for it to end), then delete it", le)
	case err != nil:
		return c.internalError(CodeUnavailable, fmt.Sprintf("sessions.delete: taking the lease of session %s", id), err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := l.Release(rctx); err != nil {
			c.s.log.Warn("releasing a session's lease failed", "session", id, "err", err)
		}
	}()
	if err := c.s.opts.Store.Delete(ctx, id); err != nil {
		return c.storeError("sessions.delete", err)
	}
	return nil
}

// appendTurn commits a turn, fenced by its lease token when it has one: in
// the store's transaction for a store.FencedStore, else against this
// process's LocalLeases (a store only this gateway writes), the check and
// the write ordered with the session's next lease (Server.fence).
func (c *serverConn) appendTurn(ctx context.Context, p SessionAppendTurnParams) (err error) {
	if obs := c.s.opts.Observer; obs != nil {
		start := time.Now()
		defer func() { obs.StoreCommit(1, time.Since(start), err) }()
	}
	turn := p.Turn.turn()
	if p.LeaseToken != 0 {
		if fs, ok := c.s.opts.Store.(store.FencedStore); ok {
			return fs.AppendTurnFenced(ctx, p.ID, p.LeaseToken, turn)
		}
		if ll, ok := c.s.opts.Leases.(*store.LocalLeases); ok {
			defer c.s.fence(p.ID)()
			if ll.Latest(p.ID) != p.LeaseToken {
				return store.ErrFenced
			}
		}
	}
	return c.s.opts.Store.AppendTurn(ctx, p.ID, turn)
}

// fencedStore reports whether the store fences turn writes in its own
// transaction (store.FencedStore).
func (c *serverConn) fencedStore() bool {
	_, ok := c.s.opts.Store.(store.FencedStore)
	return ok
}

// fence locks the stripe of Server.fences of session id and returns its
// unlock.
func (s *Server) fence(id string) (unlock func()) {
	h := fnv.New32a()
	h.Write([]byte(id))
	mu := &s.fences[h.Sum32()%uint32(len(s.fences))]
	mu.Lock()
	return mu.Unlock
}

// currentView returns the history a turn of the stored session p.SessionID
// runs on, the connection's tenant's and under its lease (token): the one
// chat.send carried (v), unless another translator or replica may have
// written the session since that history was read. That is known without
// reading the store when the translator ran and committed the session's
// last turn under the lease just before this one (p.HistoryLease ==
// token-1): each turn takes the lease, so no other can have come between.
// Otherwise the stored turns are read (once after each session/load, and
// after each turn of another translator) and folded as the translator
// folds them (gateway.ViewAfter): when that view differs from v, the turn
// runs on it and reloaded is true, for the translator to reload its own.
//
// Turn writes without a lease token (sessions.appendTurn with no
// leaseToken, which no translator of this version sends after a chat.send)
// are not seen by the token check.
func (c *serverConn) currentView(ctx context.Context, p ChatSendParams, token int64, v gateway.View) (_ gateway.View, reloaded bool, _ error) {
	if p.HistoryLease != 0 && token == p.HistoryLease+1 {
		return v, false, nil
	}
	turns, err := c.s.opts.Store.Turns(ctx, p.SessionID)
	if err != nil {
		return gateway.View{}, false, err
	}
	var stored gateway.View
	for _, t := range turns {
		stored = gateway.ViewAfter(stored, gateway.Turn{Messages: t.Messages, StopReason: t.StopReason, Usage: t.Usage, Compaction: t.Compaction})
	}
	if sameView(stored, v) {
		return v, false, nil
	}
	c.s.log.Info("a translator's history of a session was not the stored one: the turn runs on the stored history", "session", p.SessionID,
		"storedMessages", stored.Base+len(stored.Messages), "sentMessages", v.Base+len(v.Messages))
	return stored, true, nil
}

// sameView reports whether two views are the same for the model: the same
// JSON (they come from JSON: the translator's over the wire, the store's
// from its rows).
func sameView(a, b gateway.View) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}
