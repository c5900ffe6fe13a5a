package sqlite

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// A store written before models were kept opens with every model "".
func TestSQLite_MigratesSchemaVersion2(t *testing.T) {
	st, err := Open(t.Context(), oldStore(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.Get(t.Context(), "sess_old")
	if err != nil || r.Model != "" || r.Title != "old one" {
		t.Errorf("old record = %+v, %v", r, err)
	}
	if err := st.SetModel(t.Context(), "sess_old", "b"); err != nil {
		t.Errorf("SetModel after the upgrade: %v", err)
	}
}

// A store with corrupt pages is refused at open, naming the file and what
// to do, instead of failing later requests with "database disk image is
// malformed".
func TestSQLite_CorruptPagesAreFoundAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	big := strings.Repeat("x", 2000)
	for i := range 40 {
		id := "sess_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if err := st.Create(t.Context(), store.Record{ID: id, Key: "acp:" + id, Cwd: "/w/" + big, Created: now, Updated: now}); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendTurn(t.Context(), id, turn(big, big)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close() // the last connection checkpoints the WAL into the file
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 20*4096 {
		t.Fatalf("the store has only %d bytes", len(data))
	}
	// Garbage over pages 3 to 12 (page 1, the schema, stays intact).
	copy(data[2*4096:12*4096], bytes.Repeat([]byte{0xA5, 0x17, 0x00, 0xFF}, 10*1024))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), path)
	var fe *store.FileError
	if !errors.Is(err, store.ErrDamaged) || !errors.As(err, &fe) || fe.Path != path || !strings.HasPrefix(err.Error(), "session store "+path+": the database is damaged: quick_check found: ") {
		t.Errorf("open of a corrupt store = %v; want store.ErrDamaged in a *store.FileError naming %s, with quick_check's findings", err, path)
	}
	if strings.Contains(err.Error(), "move the file away") {
		t.Errorf("open of a corrupt store = %v; what to do is the error's remedy, which gateway.ErrorText adds", err)
	}
}

// Every error of the store names its file.
func TestSQLite_ErrorsNameTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	ctx := t.Context()
	_, getErr := st.Get(ctx, "sess_a")
	_, _, listErr := st.List(ctx, store.ListOptions{})
	_, turnsErr := st.Turns(ctx, "sess_a")
	for name, err := range map[string]error{
		"Create": st.Create(ctx, store.Record{ID: "sess_a"}), "Get": getErr, "List": listErr, "Turns": turnsErr,
		"SetServers": st.SetServers(ctx, "sess_a", nil), "SetModel": st.SetModel(ctx, "sess_a", "m"),
		"SetMode":    st.SetMode(ctx, "sess_a", "read-only"),
		"AppendTurn": st.AppendTurn(ctx, "sess_a", turn("a", "b")),
	} {
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s on a closed store: %v, want an error naming %s", name, err, path)
		}
	}
}
