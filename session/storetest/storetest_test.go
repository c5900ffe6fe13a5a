package storetest_test

import (
	"path/filepath"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestMemory(t *testing.T) {
	storetest.Run(t, func(*testing.T) session.Store { return session.NewMemory() })
}

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store {
		st, err := session.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "state", "sessions.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

func TestPostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store {
		st, err := session.OpenPostgres(t.Context(), pgtest.Start(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
