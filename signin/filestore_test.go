package signin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestOpenFile_Modes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "acp-agent")
	path := filepath.Join(dir, "oauth-tokens.json")
	st, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save(context.Background(), testRecord("https://a.example/mcp", "https://as.example/token", "at1")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600, path + ".lock": 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %v; want %v", p, got, want)
		}
	}
}

func TestOpenFile_NarrowsWideMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauth-tokens.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"records":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644) // whatever the umask
	if _, err := OpenFile(path); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v; want 0600", fi.Mode().Perm())
	}
}

func TestFileStore_CorruptFile(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":       "{not json",
		"wrong version": `{"version":7,"records":[]}`,
		"bad record":    `{"version":1,"records":[{"serverUrl":"https://a.example/mcp"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "oauth-tokens.json")
			os.WriteFile(path, []byte(content), 0o600)
			st, err := OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Latest(context.Background(), "https://a.example/mcp")
			var ce *CorruptError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Path != path || ce.Err == nil {
				t.Fatalf("Latest err = %v; want a *CorruptError naming %s and what is wrong", err, path)
			}
			if want := "signin: corrupt token file " + path + " (" + ce.Err.Error() + ")"; err.Error() != want {
				t.Errorf("Latest err = %q, want %q (what to do is the front end's)", err, want)
			}
			if err := st.Save(context.Background(), testRecord("https://a.example/mcp", "https://as.example/token", "at1")); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Save over a corrupt file: err = %v; want ErrCorrupt (the file is kept for the user)", err)
			}
			if data, _ := os.ReadFile(path); string(data) != content {
				t.Fatal("the corrupt file was overwritten")
			}
		})
	}
}

// TestFileStore_AtomicWrite reads the file while it is rewritten: a reader
// never sees a partial file, and no temporary file is left behind.
func TestFileStore_AtomicWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "oauth-tokens.json")
	st, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A large record makes a non-atomic write observable.
	big := testRecord("https://a.example/mcp", "https://as.example/token", strings.Repeat("x", 1<<16))
	if err := st.Save(ctx, big); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			big.Token.AccessToken = strings.Repeat(string(rune('a'+i%26)), 1<<16+i%1000)
			if err := st.Save(ctx, big); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 50 {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		other, _ := OpenFile(path)
		if recs, err := other.read(); err != nil || len(recs) != 1 {
			t.Fatalf("reader saw a partial file (%d bytes, %d records): %v", len(data), len(recs), err)
		}
	}
	close(stop)
	wg.Wait()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "oauth-tokens.json" && e.Name() != "oauth-tokens.json.lock" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// TestFileStore_TwoStoresOneFile: two FileStores of one path (as two agent
// processes have) exclude each other through the file lock.
func TestFileStore_TwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauth-tokens.json")
	a, _ := OpenFile(path)
	b, _ := OpenFile(path)
	const srv, tu = "https://a.example/mcp", "https://as.example/token"
	var wg sync.WaitGroup
	for i := range 20 {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			_, err := st.Update(context.Background(), srv, tu, func(cur *Record) (*Record, error) {
				n := 0
				if cur != nil {
					n = len(cur.Token.AccessToken)
				}
				return testRecord(srv, tu, strings.Repeat("x", n+1)), nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, _ := a.Latest(context.Background(), srv); len(got.Token.AccessToken) != 20 {
		t.Fatalf("counter = %d; want 20 (a write was lost)", len(got.Token.AccessToken))
	}
}
