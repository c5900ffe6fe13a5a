package store

import (
	"context"
	"sync"
)

// ForTenant returns the view of st that tenant sees on a shared gateway:
// the sessions it creates are its own (Record.Tenant is set to tenant),
// List lists only its own, and every other method on a session of another
// tenant answers ErrNotFound, exactly as for a missing one, so a tenant
// cannot tell another's sessions from none. The view keeps st's
// BatchStore and FencedStore where st has them, and Close does not close
// st (the view's owner closes it). Ownership checked once is remembered
// (a record's tenant never changes), so a session's turns cost no extra
// read after its first. Safe for concurrent use.
func ForTenant(st Store, tenant string) Store {
	v := &tenantView{st: st, tenant: tenant}
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

// tenantView is ForTenant's view.
type tenantView struct {
	st     Store
	tenant string
	owned  sync.Map // session id → struct{}: the tenant's, checked
}

// own checks that session id is the tenant's (ErrNotFound otherwise).
func (v *tenantView) own(ctx context.Context, id string) error {
	if _, ok := v.owned.Load(id); ok {
		return nil
	}
	rec, err := v.st.Get(ctx, id)
	if err != nil {
		return err
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
		return err
	}
	v.owned.Store(r.ID, struct{}{})
	return nil
}

func (v *tenantView) Get(ctx context.Context, id string) (Record, error) {
	rec, err := v.st.Get(ctx, id)
	if err != nil {
		return Record{}, err
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
	return v.st.SetServers(ctx, id, servers)
}

func (v *tenantView) SetModel(ctx context.Context, id, model string) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.st.SetModel(ctx, id, model)
}

func (v *tenantView) SetTitle(ctx context.Context, id, title string) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.st.SetTitle(ctx, id, title)
}

func (v *tenantView) Delete(ctx context.Context, id string) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	if err := v.st.Delete(ctx, id); err != nil {
		return err
	}
	v.owned.Delete(id)
	return nil
}

func (v *tenantView) List(ctx context.Context, opts ListOptions) ([]Record, string, error) {
	opts.Tenant = v.tenant
	return v.st.List(ctx, opts)
}

func (v *tenantView) AppendTurn(ctx context.Context, id string, turn Turn) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.st.AppendTurn(ctx, id, turn)
}

func (v *tenantView) Turns(ctx context.Context, id string) ([]Turn, error) {
	if err := v.own(ctx, id); err != nil {
		return nil, err
	}
	return v.st.Turns(ctx, id)
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
	return v.batch.AppendTurns(ctx, batch)
}

type tenantFenced struct {
	*tenantView
	fenced FencedStore
}

func (v *tenantFenced) AppendTurnFenced(ctx context.Context, id string, token int64, turn Turn) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.fenced.AppendTurnFenced(ctx, id, token, turn)
}

type tenantBatchFenced struct {
	tenantBatch
	fenced FencedStore
}

func (v *tenantBatchFenced) AppendTurnFenced(ctx context.Context, id string, token int64, turn Turn) error {
	if err := v.own(ctx, id); err != nil {
		return err
	}
	return v.fenced.AppendTurnFenced(ctx, id, token, turn)
}
