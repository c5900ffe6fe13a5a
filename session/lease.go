package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// Leases in the session core (CoreOptions.Leases): the fleet's guarantees,
// kept by every Core that shares a store with others. A prompt turn takes
// the session's lease after the session's turn lock and keeps it until it
// has returned (its commit included); its commit is fenced by the lease's
// token (History.Fence); a lost lease stops it; a turn whose token is not
// the one after the last this instance held first catches up with what
// other replicas committed (History.Reload, then the front end's Replayer).
// Open takes the lease around attaching the history, and Core.Delete
// around the delete.

const (
	// defaultOpenLeaseWait is CoreOptions.OpenLeaseWait's default.
	defaultOpenLeaseWait = 10 * time.Second
	// leaseReleaseTimeout bounds the release of a lease, which is not
	// abandoned when the turn's context ends.
	leaseReleaseTimeout = 10 * time.Second
	// openLeaseFirstRetry and openLeaseMaxRetry are the backoff of Open's
	// wait for a lease that another holder has.
	openLeaseFirstRetry = 50 * time.Millisecond
	openLeaseMaxRetry   = time.Second
)

// errLeaseLost is the cause of a turn context cancelled because its lease
// was lost.
var errLeaseLost = errors.New("the session's lease was lost")

// underLease runs f, a prompt turn of s, under the session's lease: taken
// first (another holder's is a *BusyError at once), released when f has
// returned. A lost lease cancels f's context and the turn's error is then
// a *LeaseLostError. Before f, s catches up with the turns committed
// elsewhere (catchUp); its commit is fenced by the lease's token. Called
// with s.turn held.
func (s *Session) underLease(ctx context.Context, f func(ctx context.Context) (gateway.StopReason, error)) (gateway.StopReason, error) {
	c := s.core
	l, err := c.turnLease(ctx, s.id)
	if err != nil {
		if ctx.Err() != nil {
			return gateway.StopCancelled, nil
		}
		return "", err
	}
	defer c.releaseLease(ctx, l)
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if l.Lost != nil {
		turnDone, watched := make(chan struct{}), make(chan struct{})
		go func() { // waited for below, before the lease is released
			defer close(watched)
			select {
			case <-l.Lost:
				stop(errLeaseLost)
				c.log.Warn("the session's lease was lost during a turn: the turn is stopped", "session", s.id)
				if obs := c.opts.Observer; obs != nil {
					obs.LeaseLost()
				}
			case <-turnDone:
			}
		}()
		defer func() { close(turnDone); <-watched }()
	}
	if err := s.catchUp(ctx, l.Token); err != nil {
		if ctx.Err() != nil {
			return s.lostOr(ctx, gateway.StopCancelled, nil)
		}
		return "", err
	}
	s.token = l.Token
	c.history.Fence(s.key, l.Token)
	defer c.history.Fence(s.key, 0)
	reason, err := f(ctx)
	return s.lostOr(ctx, reason, err)
}

// lostOr returns a turn's results, or a *LeaseLostError holding its error
// when ctx, the turn's, was cancelled because its lease was lost.
func (s *Session) lostOr(ctx context.Context, reason gateway.StopReason, err error) (gateway.StopReason, error) {
	if context.Cause(ctx) == errLeaseLost {
		return "", &LeaseLostError{ID: s.id, Err: err}
	}
	return reason, err
}

// catchUp reloads s's history when the lease token just taken is not the
// next one after the last s held (another holder, another replica, has had
// the lease since, and may have committed turns), or when s never learnt
// its token (its open did not get the lease), and hands the turns its
// client has not seen to the front end (Replayer) before the turn runs.
// Called with s.turn held.
func (s *Session) catchUp(ctx context.Context, token int64) error {
	if s.token != 0 && token == s.token+1 {
		return nil
	}
	turns, err := s.core.history.Reload(ctx, s.key)
	if err != nil {
		return fmt.Errorf("reading the session's history again (another replica may have run its turns): %w", err)
	}
	s.core.log.Info("the session's history was read again before its turn", "session", s.id, "token", token, "lastToken", s.token, "newTurns", len(turns))
	if r, ok := s.frontEnd.(Replayer); ok && len(turns) > 0 {
		r.Replay(ctx, s.id, turns)
	}
	return nil
}

// turnLease takes the lease of session id for a prompt turn, telling the
// Observer how that went.
func (c *Core) turnLease(ctx context.Context, id string) (l *store.Lease, err error) {
	if obs := c.opts.Observer; obs != nil {
		start := time.Now()
		defer func() { obs.LeaseWaited(leaseOutcome(err), time.Since(start)) }()
	}
	l, err = c.opts.Leases.Acquire(ctx, id, c.opts.Replica)
	return l, c.leaseError(ctx, id, err, false)
}

// leaseOutcome is the Observer's name of how taking a lease ended with err.
func leaseOutcome(err error) string {
	var busy *BusyError
	switch {
	case err == nil:
		return "acquired"
	case errors.As(err, &busy):
		return "busy"
	}
	return "error"
}

// leaseError is err, the error of taking the lease of session id, as the
// core returns it: another holder's lease a *BusyError (for Core.Delete
// when deleting), ctx's end its cause, any other error named.
func (c *Core) leaseError(ctx context.Context, id string, err error, deleting bool) error {
	var le *store.LeasedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &le):
		return &BusyError{ID: id, Owner: le.Owner, Delete: deleting, Err: err}
	case ctx.Err() != nil:
		return context.Cause(ctx)
	}
	return fmt.Errorf("taking the lease of session %s: %w", id, err)
}

// releaseLease gives l up, under a bound of its own: ctx's end does not
// abandon it. A failure is logged (a lease that could not be released is
// lost with its holder's connection, or held until this process ends).
func (c *Core) releaseLease(ctx context.Context, l *store.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
	defer cancel()
	if err := l.Release(rctx); err != nil {
		c.log.Warn("releasing a session's lease failed", "session", l.ID, "err", err)
	}
}

// attach attaches s's history (History.Attach), under the session's lease
// when the Core has Leases, so that no turn of it runs elsewhere meanwhile
// and a replay of the turns returned is whole; s learns the lease's token.
// A lease another holder keeps past CoreOptions.OpenLeaseWait is done
// without: s's first turn catches up, and the client is told that a turn
// is running elsewhere. A failure of the leases is logged and done without
// as well (the first turn reports it, if it lasts).
func (c *Core) attach(ctx context.Context, s *Session) ([]store.Turn, error) {
	if c.opts.Leases == nil {
		return c.history.Attach(ctx, s.key, s.id)
	}
	s.turn.Lock()
	defer s.turn.Unlock()
	l, err := c.waitLease(ctx, s.id)
	var busy *BusyError
	switch {
	case err == nil:
		defer c.releaseLease(ctx, l)
	case ctx.Err() != nil:
		return nil, err
	case errors.As(err, &busy):
		c.log.Info("the session opens while another holder runs a turn of it: its first turn catches up", "session", s.id, "holder", busy.Owner, "waited", c.opts.OpenLeaseWait)
		s.tellLater(RunningElsewhereText(busy.Owner))
	default:
		c.log.Warn("taking the session's lease to open it failed: it opens without", "session", s.id, "err", err)
	}
	turns, err := c.history.Attach(ctx, s.key, s.id)
	if err == nil && l != nil {
		s.token = l.Token
	}
	return turns, err
}

// RunningElsewhereText is what the user is told when a session opens while
// a turn of it runs on another replica, owner.
func RunningElsewhereText(owner string) string {
	return fmt.Sprintf("A turn of this session is still running on %s: its messages will show when your next prompt starts.\n", owner)
}

// waitLease takes the lease of session id for Open, waiting for another
// holder's for at most CoreOptions.OpenLeaseWait (retrying with
// exponential backoff); errors as leaseError's.
func (c *Core) waitLease(ctx context.Context, id string) (*store.Lease, error) {
	acquire := func() (*store.Lease, error) {
		l, err := c.opts.Leases.Acquire(ctx, id, c.opts.Replica)
		var le *store.LeasedError
		if err != nil && !errors.As(err, &le) {
			return nil, backoff.Permanent(err)
		}
		return l, err
	}
	b := &backoff.ExponentialBackOff{InitialInterval: openLeaseFirstRetry, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: openLeaseMaxRetry}
	opts := []backoff.RetryOption{backoff.WithBackOff(b), backoff.WithMaxElapsedTime(c.opts.OpenLeaseWait)}
	if c.opts.OpenLeaseWait < 0 {
		opts = append(opts, backoff.WithMaxTries(1))
	}
	l, err := backoff.Retry(ctx, acquire, opts...)
	return l, c.leaseError(ctx, id, err, false)
}

// tellLater tells s's client text (FrontEnd.Tell) from a goroutine of the
// session's (End ends and waits for it): Open's caller has not yet told
// the client of the session, and a front end holds its messages until then.
func (s *Session) tellLater(text string) {
	fe := s.frontEnd
	if fe == nil {
		return
	}
	ctx, cancel := s.background.Bind(s.base)
	s.tasks.Go(func() {
		defer cancel()
		ctx, stop := context.WithTimeout(ctx, tellTimeout)
		defer stop()
		fe.Tell(ctx, s.id, text)
	})
}

// deleteLease takes the lease of session id for Core.Delete (another
// holder's: a *BusyError), or returns nil without Leases. Release it once
// the session is deleted.
func (c *Core) deleteLease(ctx context.Context, id string) (*store.Lease, error) {
	if c.opts.Leases == nil {
		return nil, nil
	}
	l, err := c.opts.Leases.Acquire(ctx, id, c.opts.Replica)
	return l, c.leaseError(ctx, id, err, true)
}
