package store

import (
	"context"
	"errors"
	"sync"
)

// ForTenant returns the view of st that tenant sees on a shared gateway
// (opts may be nil):
// the sessions it creates are its own (Record.Tenant is set to tenant),
// List lists only its own, and every other method on a session of another
// tenant answers ErrNotFound, exactly as for a missing one, so a tenant
// cannot tell another's sessions from none. The view keeps st's
// BatchStore and FencedStore where st has them, and Close does not close
// st (the view's owner closes it). Ownership checked once is remembered
// (a record's tenant never changes), so a session's turns cost no extra
// read after its first. Safe for concurrent use.
func ForTenant(st Store, tenant string, opts *TenantOptions) Store {
	v := &tenantView{st: st, tenant: tenant}
	if opts != nil {
		v.hide = opts.HideError
	}
	batch, isBatch := st.(BatchStore)
	fenced, isFenced := st.(FencedStore)
	switch {
	case isBatch && isFenced:
		return &tenantBatchFenced{tenantBatch{v, batch}, fenced}
	case isBatch:
		return &tenantBatch{v, batch}
	case isFenced:
		return &tenantFenced{v, fenced}
	}
	return v
}

// TenantOptions configure ForTenant.
type TenantOptions struct {
	// HideError, if set, replaces every error of the store that is not
	// about the request (ErrNotFound, ErrBadCursor, ErrFenced and the
	// context's errors pass as they are) with what the tenant may see: a
	// store's error names its database, host or file, which another tenant's
	// operator, not this tenant, may know. It typically logs err under a
	// reference and returns an error giving the reference (HiddenError).
	HideError func(err error) error
}

// HiddenError is an error of the session store a tenant is not shown: Ref
// is the reference its log line carries.
type HiddenError struct{ Ref string }

// Error gives the reference and where the cause is.
func (e *HiddenError) Error() string {
	return "the session store failed (ref " + e.Ref + "); the gateway's operator finds the cause in its log"
}

// hideable reports whether err is one HideError replaces.
func hideable(err error) bool {
	return err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrBadCursor) && !errors.Is(err, ErrFenced) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// tenantView is ForTenant's view.
type tenantView struct {
	st     Store
	tenant string
	hide   func(error) error // TenantOptions.HideError, or nil
	owned  sync.Map          // session id → struct{}: the tenant's, checked
}

// shown is err as the tenant may see it.
func (v *tenantView) shown(err error) error {
	if v.hide == nil || !hideable(err) {
		return err
	}
	return v.hide(err)
}

// own checks that session id is the tenant's (ErrNotFound otherwise).
func (v *tenantView) own(ctx context.Context, id string) error {
	if _, ok := v.owned.Load(id); ok {
		return nil
	}
	rec, err := v.st.Get(ctx, id)
	if err != nil {
		return v.shown(err)
	}
	if rec.Tenant != v.tenant {
		return ErrNotFound
	}
	v.owned.Store(id, struct{}{})
	return nil
}

func (v *tenantView) Create(ctx context.Context, r Record) error {
	r.Tenant = v.tenant
	if err := v.st.Create(ctx, r); err != nil {
		return v.shown(err)
	}
	v.owned.Store(r.ID, struct{}{})
	return nil
}

func (v *tenantView) Get(ctx context.Context, id string) (Record, error) {
	rec, err := v.st.Get(ctx, id)
	if err != nil {
		return Record{}, v.shown(err)
	}
	if rec.Tenant != v.tenant {
		return Record{}, ErrNotFound
	}
	return rec, nil
}

func (v *tenantView) SetServers(ctx context.Context, id string, servers []Server) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.shown(v.st.SetServers(ctx, id, servers))
}

func (v *tenantView) SetModel(ctx context.Context, id, model string) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.shown(v.st.SetModel(ctx, id, model))
}

func (v *tenantView) SetServerChanges(ctx context.Context, id string, changes []byte) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.shown(v.st.SetServerChanges(ctx, id, changes))
}

func (v *tenantView) SetMode(ctx context.Context, id, mode string) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.shown(v.st.SetMode(ctx, id, mode))
}

func (v *tenantView) SetTitle(ctx context.Context, id, title string) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.shown(v.st.SetTitle(ctx, id, title))
}

func (v *tenantView) Delete(ctx context.Context, id string) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	if err := v.st.Delete(ctx, id); err != nil {
		return v.shown(err)
	}
	v.owned.Delete(id)
	return nil
}

func (v *tenantView) List(ctx context.Context, opts ListOptions) ([]Record, string, error) {
	opts.Tenant = v.tenant
	recs, next, err := v.st.List(ctx, opts)
	return recs, next, v.shown(err)
}

func (v *tenantView) AppendTurn(ctx context.Context, id string, turn Turn) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.shown(v.st.AppendTurn(ctx, id, turn))
}

func (v *tenantView) Turns(ctx context.Context, id string) ([]Turn, error) {
	if err := v.own(ctx, id); err != nil {
		return nil, err
	}
	turns, err := v.st.Turns(ctx, id)
	return turns, v.shown(err)
}

// Close implements Store; the shared store stays open.
func (v *tenantView) Close() error { return nil }

type tenantBatch struct {
	*tenantView
	batch BatchStore
}

func (v *tenantBatch) AppendTurns(ctx context.Context, batch []SessionTurn) error {
	for _, t := range batch {
		if err := v.own(ctx, t.ID); err != nil {
			return err
		}
	}
	return v.shown(v.batch.AppendTurns(ctx, batch))
}

type tenantFenced struct {
	*tenantView
	fenced FencedStore
}

func (v *tenantFenced) AppendTurnFenced(ctx context.Context, id string, token int64, turn Turn) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.shown(v.fenced.AppendTurnFenced(ctx, id, token, turn))
}

type tenantBatchFenced struct {
	tenantBatch
	fenced FencedStore
}

func (v *tenantBatchFenced) AppendTurnFenced(ctx context.Context, id string, token int64, turn Turn) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.shown(v.fenced.AppendTurnFenced(ctx, id, token, turn))
}

// HideLeaseErrors returns l whose Acquire errors other than a
// *LeasedError (another holder: the front end names it) and the context's
// pass through hide, as TenantOptions.HideError does for a store's: the
// leases of a database name it in their errors.
func HideLeaseErrors(l Leases, hide func(error) error) Leases {
	return hiddenLeases{l, hide}
}

type hiddenLeases struct {
	Leases
	hide func(error) error
}

func (h hiddenLeases) Acquire(ctx context.Context, id, owner string) (*Lease, error) {
	l, err := h.Leases.Acquire(ctx, id, owner)
	var le *LeasedError
	if err == nil || errors.As(err, &le) || !hideable(err) {
		return l, err
	}
	return nil, h.hide(err)
}
