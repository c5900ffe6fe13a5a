package remote

import (
	"testing"

	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
)

// TestMain stops the throwaway PostgreSQL server of the fleet tests
// (replicas sharing a PostgreSQL store) when the tests end.
func TestMain(m *testing.M) { pgtest.Main(m) }
