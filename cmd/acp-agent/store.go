package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/postgres"
)

// storeOpenTimeout bounds opening a session store at startup (connecting,
// checking, migrating).
const storeOpenTimeout = 30 * time.Second

// openStoreURL opens the PostgreSQL session store at rawURL (postgres:// or
// postgresql://; the password from PGPASSWORD or ~/.pgpass, never the URL:
// a URL carrying one is refused, and rawURL is logged only without it).
// It is the store of `acp-agent --store postgres://…` and of the gateway
// fleet, whose replicas also use it as their store.Leases and
// store.FencedStore. The caller closes it.
func openStoreURL(ctx context.Context, rawURL string, log *slog.Logger) (*postgres.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	st, err := postgres.Open(ctx, rawURL, &postgres.Options{Logger: log})
	if err != nil {
		return nil, openFailure(err, true)
	}
	log.Info("session store: PostgreSQL", "url", st.Name(), "schema", postgres.SchemaVersion)
	return st, nil
}

// storeSetting is the session store named by --store (flag), else config
// store.url, else store.path: a SQLite file, "memory", a PostgreSQL URL, or
// "" for the default file.
func storeSetting(flag string, cfg StoreConfig) string {
	switch {
	case flag != "":
		return flag
	case cfg.URL != "":
		return cfg.URL
	}
	return cfg.Path
}

// checkStoreConfig checks config "store": url is a PostgreSQL URL with no
// password, path is not a URL, and not both are set.
func (c *configChecker) checkStoreConfig(s StoreConfig) error {
	if s.URL != "" {
		if s.Path != "" {
			return c.errAt("store.url", "set store.url (PostgreSQL) or store.path (SQLite), not both")
		}
		if !postgres.IsURL(s.URL) {
			return c.errAt("store.url", "must be a postgres:// or postgresql:// URL, such as \"postgres://acp@db.example/acp?sslmode=verify-full\" (a SQLite file goes in store.path)")
		}
		if err := postgres.CheckURL(s.URL); err != nil {
			return c.errAt("store.url", "%s", gateway.ErrorText(openFailure(err, true)))
		}
	}
	if postgres.IsURL(s.Path) {
		return c.errAt("store.path", "is a SQLite file; put a PostgreSQL URL in store.url")
	}
	return nil
}

// pgTokensNote is logged when sign-in tokens stay in memory because
// sessions are in PostgreSQL.
const pgTokensNote = "sign-in tokens of MCP servers (OAuth grants) are kept in memory with a PostgreSQL store: they are not kept across restarts, so servers ask to sign in again"

// storeErr adds the way out to a store that cannot be opened, after what
// its error says to do: the remedy "or start with --store memory to keep
// sessions in memory only" (gateway.WithRemedy).
func storeErr(err error) error {
	return gateway.WithRemedy(err, "or start with --store memory to keep sessions in memory only")
}

// openFailure is err, the error of opening a session store (PostgreSQL if
// pg, else SQLite), with the remedy (gateway.WithRemedy) the store's error
// leaves to the program that names the store; gateway.ErrorText, which
// main prints errors with, shows it after the store's own (a damaged or
// full file's):
//
//   - postgres.ErrPassword: ": set PGPASSWORD in the environment or put it
//     in ~/.pgpass (PGPASSFILE), which the driver reads";
//   - a *store.SchemaError: ": upgrade acp-agent, or point store.path
//     elsewhere" (SQLite), ": upgrade acp-agent (every replica), or point
//     --store (store.url) elsewhere" (PostgreSQL).
//
// errors.Is and errors.As see err, whose text it keeps. A nil err is nil.
func openFailure(err error, pg bool) error {
	var schema *store.SchemaError
	switch {
	case errors.Is(err, postgres.ErrPassword):
		return gateway.WithRemedy(err, ": set PGPASSWORD in the environment or put it in ~/.pgpass (PGPASSFILE), which the driver reads")
	case errors.As(err, &schema) && pg:
		return gateway.WithRemedy(err, ": upgrade acp-agent (every replica), or point --store (store.url) elsewhere")
	case errors.As(err, &schema):
		return gateway.WithRemedy(err, ": upgrade acp-agent, or point store.path elsewhere")
	}
	return err
}
