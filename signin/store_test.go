package signin

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// stores are the Store implementations every contract test runs against.
var stores = []struct {
	name string
	open func(t *testing.T) Store
}{
	{"memory", func(*testing.T) Store { return NewMemory() }},
	{"file", func(t *testing.T) Store {
		s, err := OpenFile(filepath.Join(t.TempDir(), "state", "oauth-tokens.json"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func testRecord(server, tokenURL, access string) *Record {
	return &Record{
		ServerURL: server,
		TokenURL:  tokenURL,
		ClientID:  "client-1",
		Scopes:    []string{"read"},
		Token: &oauth2.Token{
			AccessToken:  access,
			TokenType:    "Bearer",
			RefreshToken: "refresh-" + access,
			Expiry:       time.Now().Add(time.Hour).Round(0),
		},
	}
}

func TestStore_Contract(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, st Store)
	}{
		{"LatestOfNothingIsNil", func(t *testing.T, st Store) {
			got, err := st.Latest(ctx, "https://a.example/mcp")
			if got != nil || err != nil {
				t.Fatalf("Latest = %v, %v; want nil, nil", got, err)
			}
		}},
		{"SaveThenLatest", func(t *testing.T, st Store) {
			rec := testRecord("https://a.example/mcp", "https://as.example/token", "at1")
			if err := st.Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			got, err := st.Latest(ctx, rec.ServerURL)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || got.Token.AccessToken != "at1" || got.Token.RefreshToken != "refresh-at1" ||
				got.ClientID != "client-1" || !slices.Equal(got.Scopes, []string{"read"}) || !got.Token.Expiry.Equal(rec.Token.Expiry) {
				t.Fatalf("Latest = %+v (token %+v); want the saved record", got, got.Token)
			}
			if got.Saved.IsZero() {
				t.Error("Saved not set")
			}
		}},
		{"SaveReplacesSameKey", func(t *testing.T, st Store) {
			st.Save(ctx, testRecord("https://a.example/mcp", "https://as.example/token", "at1"))
			st.Save(ctx, testRecord("https://a.example/mcp", "https://as.example/token", "at2"))
			gone, err := st.Delete(ctx, "https://a.example/mcp")
			if err != nil || len(gone) != 1 || gone[0].Token.AccessToken != "at2" {
				t.Fatalf("Delete = %v, %v; want the one record at2", gone, err)
			}
		}},
		{"LatestIsMostRecentlySaved", func(t *testing.T, st Store) {
			st.Save(ctx, testRecord("https://a.example/mcp", "https://as1.example/token", "at1"))
			st.Save(ctx, testRecord("https://a.example/mcp", "https://as2.example/token", "at2"))
			if got, _ := st.Latest(ctx, "https://a.example/mcp"); got.Token.AccessToken != "at2" {
				t.Fatalf("Latest = %v; want at2", got)
			}
			st.Save(ctx, testRecord("https://a.example/mcp", "https://as1.example/token", "at3"))
			if got, _ := st.Latest(ctx, "https://a.example/mcp"); got.Token.AccessToken != "at3" {
				t.Fatalf("Latest = %v; want at3", got)
			}
		}},
		{"DeleteRemovesOnlyThatServer", func(t *testing.T, st Store) {
			st.Save(ctx, testRecord("https://a.example/mcp", "https://as1.example/token", "at1"))
			st.Save(ctx, testRecord("https://a.example/mcp", "https://as2.example/token", "at2"))
			st.Save(ctx, testRecord("https://b.example/mcp", "https://as1.example/token", "bt1"))
			gone, err := st.Delete(ctx, "https://a.example/mcp")
			if err != nil || len(gone) != 2 {
				t.Fatalf("Delete = %v, %v; want 2 records", gone, err)
			}
			if got, _ := st.Latest(ctx, "https://a.example/mcp"); got != nil {
				t.Fatalf("Latest after Delete = %v", got)
			}
			if got, _ := st.Latest(ctx, "https://b.example/mcp"); got == nil || got.Token.AccessToken != "bt1" {
				t.Fatalf("other server's record = %v", got)
			}
			if gone, err := st.Delete(ctx, "https://a.example/mcp"); gone != nil || err != nil {
				t.Fatalf("second Delete = %v, %v", gone, err)
			}
		}},
		{"ReturnedRecordsAreCopies", func(t *testing.T, st Store) {
			rec := testRecord("https://a.example/mcp", "https://as.example/token", "at1")
			st.Save(ctx, rec)
			rec.Token.AccessToken = "mutated"
			got, _ := st.Latest(ctx, rec.ServerURL)
			got.Token.AccessToken = "mutated too"
			got.Scopes[0] = "mutated"
			if again, _ := st.Latest(ctx, rec.ServerURL); again.Token.AccessToken != "at1" || again.Scopes[0] != "read" {
				t.Fatalf("store shares memory with its callers: %+v", again.Token)
			}
		}},
		{"SaveRejectsIncompleteRecord", func(t *testing.T, st Store) {
			for _, rec := range []*Record{
				{TokenURL: "https://as.example/token", Token: &oauth2.Token{}},
				{ServerURL: "https://a.example/mcp", Token: &oauth2.Token{}},
				{ServerURL: "https://a.example/mcp", TokenURL: "https://as.example/token"},
			} {
				if err := st.Save(ctx, rec); err == nil {
					t.Errorf("Save(%v) succeeded", rec)
				}
			}
		}},
		{"UpdateSeesCurrentAndSaves", func(t *testing.T, st Store) {
			const srv, tu = "https://a.example/mcp", "https://as.example/token"
			got, err := st.Update(ctx, srv, tu, func(cur *Record) (*Record, error) {
				if cur != nil {
					t.Errorf("cur = %v; want nil", cur)
				}
				return testRecord(srv, tu, "at1"), nil
			})
			if err != nil || got == nil || got.Token.AccessToken != "at1" {
				t.Fatalf("Update = %v, %v", got, err)
			}
			got, err = st.Update(ctx, srv, tu, func(cur *Record) (*Record, error) {
				if cur == nil || cur.Token.AccessToken != "at1" {
					t.Errorf("cur = %v; want at1", cur)
				}
				return nil, nil
			})
			if err != nil || got == nil || got.Token.AccessToken != "at1" {
				t.Fatalf("Update with no change = %v, %v; want the stored record", got, err)
			}
		}},
		{"UpdateErrorChangesNothing", func(t *testing.T, st Store) {
			const srv, tu = "https://a.example/mcp", "https://as.example/token"
			st.Save(ctx, testRecord(srv, tu, "at1"))
			boom := errors.New("boom")
			if _, err := st.Update(ctx, srv, tu, func(*Record) (*Record, error) { return testRecord(srv, tu, "x"), boom }); !errors.Is(err, boom) {
				t.Fatalf("Update err = %v; want boom", err)
			}
			if got, _ := st.Latest(ctx, srv); got.Token.AccessToken != "at1" {
				t.Fatalf("record changed to %v", got)
			}
		}},
		{"UpdateDeleteRecord", func(t *testing.T, st Store) {
			const srv, tu = "https://a.example/mcp", "https://as.example/token"
			st.Save(ctx, testRecord(srv, tu, "at1"))
			st.Save(ctx, testRecord(srv, "https://other.example/token", "at2"))
			got, err := st.Update(ctx, srv, tu, func(*Record) (*Record, error) { return nil, ErrDeleteRecord })
			if got != nil || err != nil {
				t.Fatalf("Update = %v, %v; want nil, nil", got, err)
			}
			if gone, _ := st.Delete(ctx, srv); len(gone) != 1 || gone[0].TokenURL != "https://other.example/token" {
				t.Fatalf("left %v; want only the other key's record", gone)
			}
		}},
		{"UpdateRejectsOtherKey", func(t *testing.T, st Store) {
			const srv, tu = "https://a.example/mcp", "https://as.example/token"
			if _, err := st.Update(ctx, srv, tu, func(*Record) (*Record, error) {
				return testRecord(srv, "https://evil.example/token", "at1"), nil
			}); err == nil {
				t.Fatal("Update saved a record under another key")
			}
		}},
		{"UpdateIsExclusivePerKey", func(t *testing.T, st Store) {
			// 20 goroutines increment a counter kept in the access token: with
			// an exclusive Update none is lost.
			const srv, tu = "https://a.example/mcp", "https://as.example/token"
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					_, err := st.Update(ctx, srv, tu, func(cur *Record) (*Record, error) {
						n := 0
						if cur != nil {
							n = len(cur.Token.AccessToken)
						}
						return testRecord(srv, tu, string(make([]byte, n+1))), nil
					})
					if err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if got, _ := st.Latest(ctx, srv); len(got.Token.AccessToken) != 20 {
				t.Fatalf("counter = %d; want 20", len(got.Token.AccessToken))
			}
		}},
		{"UpdateWaitEndsWithContext", func(t *testing.T, st Store) {
			const srv, tu = "https://a.example/mcp", "https://as.example/token"
			inside, release := make(chan struct{}), make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				st.Update(ctx, srv, tu, func(*Record) (*Record, error) { close(inside); <-release; return nil, nil })
			}()
			<-inside
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err := st.Update(cctx, srv, tu, func(*Record) (*Record, error) { t.Error("fn ran without the lock"); return nil, nil })
			close(release)
			<-done
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Update err = %v; want context.Canceled", err)
			}
		}},
	}
	for _, s := range stores {
		for _, tt := range tests {
			t.Run(s.name+"/"+tt.name, func(t *testing.T) { tt.run(t, s.open(t)) })
		}
	}
}
