package pgtest_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Each Start is a fresh database on the one server, reachable by its URL.
func TestStart_FreshDatabases(t *testing.T) {
	a, b := pgtest.Start(t), pgtest.Start(t)
	if a == b {
		t.Fatalf("two Starts gave one database %s", a)
	}
	c, err := pgx.Connect(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	if _, err := c.Exec(t.Context(), "CREATE TABLE x (i int)"); err != nil {
		t.Fatal(err)
	}
	c2, err := pgx.Connect(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(t.Context())
	var n int
	if err := c2.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE tablename = 'x'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the second database sees the first's table: %d, %v", n, err)
	}
}
