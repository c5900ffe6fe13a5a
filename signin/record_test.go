package signin

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

const (
	secretAccess  = "ACCESS-SECRET-123"
	secretRefresh = "REFRESH-SECRET-456"
	secretClient  = "CLIENT-SECRET-789"
)

func secretRecord() *Record {
	rec := testRecord("https://a.example/mcp", "https://as.example/token", secretAccess)
	rec.Token.RefreshToken = secretRefresh
	rec.ClientSecret = secretClient
	return rec
}

func assertNoSecret(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range []string{secretAccess, secretRefresh, secretClient} {
		if strings.Contains(s, secret) {
			t.Errorf("%s shows a secret: %s", what, s)
		}
	}
}

func TestRecord_PrintsNoSecret(t *testing.T) {
	rec := secretRecord()
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		s := fmt.Sprintf(format, rec)
		assertNoSecret(t, format, s)
		if !strings.Contains(s, rec.ServerURL) || !strings.Contains(s, "refresh=true") {
			t.Errorf("%s = %q; want the server and refresh=true", format, s)
		}
	}
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&buf, nil), slog.NewTextHandler(&buf, nil)} {
		slog.New(h).Info("signed in", "record", rec, slog.Any("rec2", rec))
	}
	assertNoSecret(t, "slog output", buf.String())
	if !strings.Contains(buf.String(), rec.TokenURL) {
		t.Errorf("slog output lacks the token URL: %s", buf.String())
	}
}

func TestRecord_Config(t *testing.T) {
	rec := secretRecord()
	rec.AuthURL = "https://as.example/authorize"
	rec.AuthStyle = oauth2.AuthStyleInHeader
	c := rec.Config()
	if c.ClientID != rec.ClientID || c.ClientSecret != secretClient || c.Endpoint.TokenURL != rec.TokenURL ||
		c.Endpoint.AuthURL != rec.AuthURL || c.Endpoint.AuthStyle != oauth2.AuthStyleInHeader || len(c.Scopes) != 1 {
		t.Fatalf("Config = %+v", c)
	}
}
