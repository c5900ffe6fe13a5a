package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// History is the gateway.History of live sessions, backed by a Store: what
// the model sees of each attached session (its gateway.View: the latest
// compaction, the messages after it, the usage so far) is cached in memory,
// and each finished turn is committed to the store whole (messages, stop
// reason, usage, compaction) in one transaction. The store keeps every
// message for replay; the view is rebuilt from the stored turns at Attach,
// so a reloaded session continues where its last compaction left it.
//
// Append returns once the turn is committed (group commit: the turns of
// every session that end while a commit is under way are committed
// together, in one transaction on a BatchStore; on a quiet agent the
// appending goroutine commits its own turn), so a turn whose prompt was
// answered is stored, and survives a crash of the agent: SIGKILL loses at
// most the turns still running. A turn the store refuses (a full disk)
// fails: it never joins the view, so the conversation and the stored
// transcript go on together without it, with no gap. Commits of one
// session are made in order; Attach of a session, Forget, Flush and Close
// wait for its commits under way. Safe for concurrent use.
//
// A session's turns may be fenced by a lease token (Fence), for a fleet of
// replicas sharing a store.FencedStore: such a turn is committed alone with
// AppendTurnFenced, by its own Append call rather than the committer, and
// fails, wrapping store.ErrFenced, once another holder has taken the
// session's lease. Reload catches an attached session up with turns that
// another process committed.
type History struct {
	store store.Store
	log   *slog.Logger

	mu      sync.Mutex
	live    map[string]*liveHistory  // gateway session key → attached session
	pending map[string]chan struct{} // session id → closed when its last queued commit is done
	queue   []*commit                // waiting for the committer
	closed  bool
	// started is set while a commit is under way or the committer runs.
	// An Append that finds it unset commits its own turn (lead); the
	// turns queued meanwhile go to the committer, which waits for more on
	// wake (one signal buffered) and returns once idle for committerIdle,
	// or at Close. It outlives a burst of turns: a new goroutine per turn
	// grew its stack through the store's deep calls again each time
	// (copystack was a tenth of the agent's CPU on /call turns); an idle
	// History holds none.
	started    bool
	wake, stop chan struct{}
	committers sync.WaitGroup // the committer, and fenced commits, for Close
	// onCommit, if set (ObserveCommits), hears of each group commit.
	onCommit func(turns int, d time.Duration, err error)
}

// ObserveCommits makes f hear of every group commit, for metrics: the
// turns it held, its wall time, and its error (the first turn's that
// failed; nil when all were stored); a fenced turn (Fence) is a commit of
// its own. f runs on the goroutine that made the commit (the committer, or
// an Append that committed its own turn: never two at once; a fenced
// turn's: its Append's) and must not block: the next commit waits for it.
// Call it before the first Append; nil stops it.
func (h *History) ObserveCommits(f func(turns int, d time.Duration, err error)) {
	h.mu.Lock()
	h.onCommit = f
	h.mu.Unlock()
}

// commit is one turn waiting for the committer.
type commit struct {
	id    string
	turn  store.Turn
	token int64 // the lease token to fence the commit by; 0: none
	err   error
	done  chan struct{} // closed once err is set
}

type liveHistory struct {
	id string
	// view is what the model sees: gateway.ViewAfter of every turn. Its
	// Messages are appended to in place; View hands out clipped copies.
	view gateway.View
	// turns is how many stored turns view holds: those read at Attach and
	// those appended since (Reload returns the ones after them).
	turns int
	// fence, when not 0, is the lease token the session's turns are
	// committed under (Fence).
	fence int64
	// updated and title are the stored record's, as of Attach and the
	// turns appended and titles noted since (Stamp).
	updated time.Time
	title   string
}

var _ gateway.History = (*History)(nil)

// maxBatch bounds the turns of one group commit; commitTimeout bounds one
// commit (a database that does not answer fails the turns, not the agent).
const (
	maxBatch      = 256
	commitTimeout = 30 * time.Second
)

// NewHistory returns a History over store. log may be nil.
func NewHistory(st store.Store, log *slog.Logger) *History {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &History{store: st, log: log, live: make(map[string]*liveHistory), pending: make(map[string]chan struct{}),
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Attach binds the gateway session key to the stored session id and loads
// its committed turns (after this process's commits of id under way), so the
// model continues the conversation: the view is the stored turns folded
// with gateway.ViewAfter (the latest compaction, the messages after it, the
// usage of every turn). It returns the turns whole, every message included,
// for replay.
func (h *History) Attach(ctx context.Context, key, id string) ([]store.Turn, error) {
	if err := h.wait(ctx, id); err != nil {
		return nil, err
	}
	rec, err := h.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	turns, err := h.store.Turns(ctx, id)
	if err != nil {
		return nil, err
	}
	var v gateway.View
	for _, t := range turns {
		v = gateway.ViewAfter(v, gateway.Turn{Messages: t.Messages, StopReason: t.StopReason, Usage: t.Usage, Compaction: t.Compaction})
	}
	h.mu.Lock()
	h.live[key] = &liveHistory{id: id, view: v, turns: len(turns), updated: rec.Updated, title: rec.Title}
	h.mu.Unlock()
	return turns, nil
}

// Reload attaches the session attached under key again (see Attach),
// reading its committed turns from the store, and returns those after the
// turns the view held: the turns another process (a replica of a fleet)
// committed since this History attached the session or appended its last
// turn, which the session's client has not seen. The session's fence
// (Fence) is cleared. A key not attached is an error.
func (h *History) Reload(ctx context.Context, key string) ([]store.Turn, error) {
	h.mu.Lock()
	l := h.live[key]
	var seen int
	if l != nil {
		seen = l.turns
	}
	h.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("session key %q is not attached to a stored session", key)
	}
	turns, err := h.Attach(ctx, key, l.id)
	if err != nil {
		return nil, err
	}
	return turns[min(seen, len(turns)):], nil
}

// Fence makes the turns appended under key from now on committed under the
// lease token token, when the store is a store.FencedStore
// (AppendTurnFenced: refused with store.ErrFenced once a later hold of the
// session's lease exists); 0 ends it. A store that is not a FencedStore
// commits them as any other. A key not attached is ignored. Call it while
// no turn of the session is being appended (between turns, under the
// session's lease).
func (h *History) Fence(key string, token int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.live[key]; l != nil {
		l.fence = token
	}
}

// View implements gateway.History: the view of the session attached under
// key (the zero View for a key not attached). Its Messages are clipped, so
// later appends never show through it.
func (h *History) View(_ context.Context, key string) gateway.View {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.live[key]; l != nil {
		v := l.view
		v.Messages = slices.Clip(v.Messages)
		return v
	}
	return gateway.View{}
}

// Stamp returns the updated time and title of the stored record of the
// session attached under key, as of its last Append (store.NextUpdated
// with the turn's time, and the title its first prompt gave it), without
// reading the store: what a session_info_update tells the client after a
// turn. ok is false for a key not attached. The title is that of Attach's
// record and the turns since, and of NoteTitle.
func (h *History) Stamp(key string) (updated time.Time, title string, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.live[key]
	if l == nil {
		return time.Time{}, "", false
	}
	return l.updated, l.title, true
}

// NoteTitle tells the History that the stored title of the session
// attached under key is now title (store.Store.SetTitle), for Stamp. A
// key not attached is ignored.
func (h *History) NoteTitle(key, title string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.live[key]; l != nil {
		l.title = title
	}
}

// errClosed is Append's error after Close.
var errClosed = errors.New("the session history is closed (the agent is shutting down)")

// Append implements gateway.History: the turn is committed to the store
// whole, after the session's earlier turns, and then joins the cached view
// (gateway.ViewAfter: its messages, usage and compaction). The store's
// error, if any, is returned and the view is left as it was. ctx is not
// used to cancel the commit: a cancelled turn is stored too.
func (h *History) Append(ctx context.Context, key string, turn gateway.Turn) error {
	h.mu.Lock()
	l := h.live[key]
	if l == nil {
		h.mu.Unlock()
		return fmt.Errorf("session key %q is not attached to a stored session", key)
	}
	if h.closed {
		h.mu.Unlock()
		return errClosed
	}
	c := &commit{id: l.id, turn: store.Turn{Messages: turn.Messages, StopReason: turn.StopReason, Usage: turn.Usage, Compaction: turn.Compaction}, done: make(chan struct{})}
	fs, fenced := h.store.(store.FencedStore)
	if fenced && l.fence != 0 {
		// Alone, on this goroutine, after the session's commits under way.
		c.token = l.fence
		prev := h.pending[c.id]
		h.pending[c.id] = c.done
		observe := h.onCommit
		h.committers.Add(1) // for Close, as the committer is
		h.mu.Unlock()
		h.commitFenced(context.WithoutCancel(ctx), fs, c, prev, observe)
		h.committers.Done()
	} else {
		h.pending[c.id] = c.done // a session's commits go in the order they are queued
		h.queue = append(h.queue, c)
		if h.started {
			select {
			case h.wake <- struct{}{}:
			default: // a signal is pending already
			}
			h.mu.Unlock()
		} else {
			h.started = true
			h.committers.Add(1) // for Close, as the committer is
			h.mu.Unlock()
			h.lead()
			h.committers.Done()
		}
	}
	<-c.done

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending[c.id] == c.done {
		delete(h.pending, c.id)
	}
	if c.err != nil {
		h.log.Error("storing the turn failed; the conversation goes on without it", "session", c.id, "err", c.err)
		return c.err
	}
	if cur := h.live[key]; cur == l {
		l.view = gateway.ViewAfter(l.view, turn)
		l.turns++
		l.updated = store.NextUpdated(l.updated, c.turn.At)
		if l.title == "" {
			l.title = c.turn.Title()
		}
	}
	return nil
}

// commitFenced commits c alone, fenced by its token, once prev (the
// session's commit before it, or nil) is done; observe, if set, hears of
// it as of a group commit of one turn. A fenced-out commit's error names
// the session and wraps store.ErrFenced.
func (h *History) commitFenced(base context.Context, fs store.FencedStore, c *commit, prev chan struct{}, observe func(int, time.Duration, error)) {
	defer close(c.done)
	if prev != nil {
		<-prev
	}
	ctx, cancel := context.WithTimeout(base, commitTimeout)
	defer cancel()
	start := time.Now()
	c.turn.At = start
	c.err = fs.AppendTurnFenced(ctx, c.id, c.token, c.turn)
	if errors.Is(c.err, store.ErrFenced) {
		c.err = fmt.Errorf("session %s: another holder took the session's lease while this turn ran: %w", c.id, c.err)
	}
	if observe != nil {
		observe(1, time.Since(start), c.err)
	}
}

// lead commits the queue's first batch on the calling goroutine: that of
// an Append that found no commit under way, so the batch is its own turn.
// A quiet agent's turn is committed without a handoff to the committer
// and back (two wake-ups, a third of a stored turn's time), on a stack
// that has grown already. Turns queued meanwhile go to the committer, which
// lead starts, so that they are committed together (group commit), and
// the Append returns without waiting for them.
func (h *History) lead() {
	h.mu.Lock()
	batch, observe := h.take()
	h.mu.Unlock()
	h.commitObserved(context.Background(), batch, observe)
	h.mu.Lock()
	if len(h.queue) > 0 {
		// It commits every session's turns and outlives this call: its
		// commits' contexts derive from none of them.
		h.committers.Go(func() { h.committer(context.Background()) })
	} else {
		h.started = false
	}
	h.mu.Unlock()
}

// take removes the next batch from the queue (at most maxBatch turns, in
// order) and returns it with the commit observer. h.mu must be held.
func (h *History) take() ([]*commit, func(int, time.Duration, error)) {
	n := min(len(h.queue), maxBatch)
	batch := slices.Clone(h.queue[:n])
	h.queue = slices.Delete(h.queue, 0, n)
	return batch, h.onCommit
}

// commitObserved commits batch (commit), stamped with the time it starts,
// and tells observe, if not nil.
func (h *History) commitObserved(base context.Context, batch []*commit, observe func(int, time.Duration, error)) {
	start := time.Now()
	for _, c := range batch { // the time Stamp reckons with
		c.turn.At = start
	}
	h.commit(base, batch)
	if observe != nil {
		var err error
		for _, c := range batch {
			if err = c.err; err != nil {
				break
			}
		}
		observe(len(batch), time.Since(start), err)
	}
}

// committerIdle is how long the committer waits for a turn before it
// returns: longer than a model takes between the turns of a busy session.
const committerIdle = 10 * time.Second

// committer commits the queued turns, a batch at a time, waiting on wake
// for more; it returns once the queue has been empty for committerIdle, or
// at Close. Each commit's context derives from base.
func (h *History) committer(base context.Context) {
	idle := time.NewTimer(committerIdle)
	defer idle.Stop()
	for {
		h.mu.Lock()
		if len(h.queue) == 0 {
			h.mu.Unlock()
			idle.Reset(committerIdle)
			select {
			case <-h.wake:
				continue
			case <-h.stop:
			case <-idle.C:
			}
			h.mu.Lock()
			if len(h.queue) == 0 { // the next Append commits its own turn
				h.started = false
				h.mu.Unlock()
				return
			}
			h.mu.Unlock()
			continue
		}
		batch, observe := h.take()
		h.mu.Unlock()
		h.commitObserved(base, batch, observe)
	}
}

// commit commits batch: in one transaction on a BatchStore, else (and when
// that fails, to tell which turn the store refuses) one by one, in order.
func (h *History) commit(base context.Context, batch []*commit) {
	ctx, cancel := context.WithTimeout(base, commitTimeout)
	defer cancel()
	if bs, ok := h.store.(store.BatchStore); ok && len(batch) > 1 {
		turns := make([]store.SessionTurn, len(batch))
		for i, c := range batch {
			turns[i] = store.SessionTurn{ID: c.id, Turn: c.turn}
		}
		if err := bs.AppendTurns(ctx, turns); err == nil {
			for _, c := range batch {
				close(c.done)
			}
			return
		}
	}
	for _, c := range batch {
		c.err = h.store.AppendTurn(ctx, c.id, c.turn)
		close(c.done)
	}
}

// Forget implements gateway.History: the session's pending commits are
// waited for (without ctx's cancellation: they are the session's last
// turns), then the cache is dropped; the stored session stays.
func (h *History) Forget(ctx context.Context, key string) {
	h.mu.Lock()
	l := h.live[key]
	delete(h.live, key)
	h.mu.Unlock()
	if l != nil {
		_ = h.wait(context.WithoutCancel(ctx), l.id)
	}
}

// Flush waits until every turn appended so far is committed, or ctx ends
// (its error). Call it before reading sessions from the store directly
// (session/list).
func (h *History) Flush(ctx context.Context) error {
	h.mu.Lock()
	waits := make([]chan struct{}, 0, len(h.pending))
	for _, c := range h.pending {
		waits = append(waits, c)
	}
	h.mu.Unlock()
	for _, c := range waits {
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close waits for the commits under way and stops the committer; call it
// before closing the store. Append after Close fails.
func (h *History) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.stop)
	h.mu.Unlock()
	h.committers.Wait()
	return nil
}

// wait waits for the pending commits of session id, or ctx.
func (h *History) wait(ctx context.Context, id string) error {
	h.mu.Lock()
	c := h.pending[id]
	h.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
