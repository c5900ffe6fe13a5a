package main

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/postgres"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
)

// A store that cannot be opened stops acp-agent with the store's error and
// what to do, in acp-agent's words: the stores' errors state only the fact
// (and the remedies of a damaged or full file); main prints them with
// gateway.ErrorText.
func TestOpenStore_SaysWhatToDo(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer", "sessions.db")
	if err := os.MkdirAll(filepath.Dir(newer), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	damaged := filepath.Join(dir, "damaged", "sessions.db")
	if err := os.MkdirAll(filepath.Dir(damaged), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(damaged, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}

	newerText := fmt.Sprintf("session store %s: the database has schema version 99, newer than this acp-agent's %d: upgrade acp-agent, or point store.path elsewhere", newer, sqlite.SchemaVersion)
	_, _, err = openStore(newer, StoreConfig{}, log)
	var schema *store.SchemaError
	if err == nil || gateway.ErrorText(err) != newerText || !errors.As(err, &schema) {
		t.Errorf("newer SQLite schema: %v\nwant %q", err, newerText)
	}
	if _, err := openGatewayStore(newer, StoreConfig{}, log); err == nil || gateway.ErrorText(err) != "--store: "+newerText {
		t.Errorf("gateway, newer SQLite schema: %v\nwant %q", err, "--store: "+newerText)
	}

	_, _, err = openStore(damaged, StoreConfig{}, log)
	wantEnd := ": move the file away (or restore it from a backup) and start acp-agent again, which creates a new empty store; or start with --store memory to keep sessions in memory only"
	if err == nil || !strings.HasPrefix(gateway.ErrorText(err), "session store "+damaged+": the database is damaged") || !strings.HasSuffix(gateway.ErrorText(err), wantEnd) || !errors.Is(err, store.ErrDamaged) {
		t.Errorf("damaged SQLite store: %v\nwant it named, damaged, ending %q", err, wantEnd)
	}

	const password = "session store: a PostgreSQL URL must not carry a password: set PGPASSWORD in the environment or put it in ~/.pgpass (PGPASSFILE), which the driver reads"
	if _, _, err := openStore("postgres://app:s3cret@127.0.0.1:1/acp", StoreConfig{}, log); err == nil || gateway.ErrorText(err) != password || !errors.Is(err, postgres.ErrPassword) {
		t.Errorf("PostgreSQL URL with a password: %v\nwant %q", err, password)
	}

	// PostgreSQL's refusal of a newer schema, as postgres.Open returns it.
	pgNewer := fmt.Errorf("session store postgres:///acp: %w", &store.SchemaError{Have: 99, Want: postgres.SchemaVersion})
	want := fmt.Sprintf("session store postgres:///acp: the database has schema version 99, newer than this acp-agent's %d: upgrade acp-agent (every replica), or point --store (store.url) elsewhere", postgres.SchemaVersion)
	if err := openFailure(pgNewer, true); gateway.ErrorText(err) != want || !errors.As(err, &schema) {
		t.Errorf("newer PostgreSQL schema: %v\nwant %q", err, want)
	}
}
