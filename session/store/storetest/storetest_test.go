package storetest_test

import (
	"path/filepath"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
	"github.com/seed02d3eb6b/acp-agent/session/store/postgres"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
	"github.com/seed02d3eb6b/acp-agent/session/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestMemory(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return memory.New() })
}

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "state", "sessions.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

func TestPostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		st, err := postgres.Open(t.Context(), pgtest.Start(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
