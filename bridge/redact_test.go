package bridge

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHTTP_URLSecretsAreRedacted: the query of an http/sse URL (where API
// keys travel) shows in no failure message and no log line.
func TestHTTP_URLSecretsAreRedacted(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusInternalServerError)
	}))
	defer broken.Close()
	r := newRestartable(t)
	log, buf := newTestLogger(slog.LevelDebug)
	m := NewManager(&Options{Logger: log})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	_ = m.Connect(t.Context(), []ServerSpec{
		{Name: "broken", Transport: TransportHTTP, URL: broken.URL + "/mcp?token=secret1"},
		{Name: "brokensse", Transport: TransportSSE, URL: broken.URL + "/sse?token=secret2"},
		{Name: "refused", Transport: TransportHTTP, URL: "http://169.254.169.254/mcp?token=secret3"},
		{Name: "gone", Transport: TransportHTTP, URL: "http://127.0.0.1:1/mcp?token=secret4"},
		{Name: "web", Transport: TransportHTTP, URL: r.url() + "?token=secret5"},
	})
	var texts []string
	for _, st := range m.Servers() {
		if st.Name == "web" {
			if st.State != StateConnected {
				t.Fatalf("web: %v %v", st.State, st.Err)
			}
			continue
		}
		if st.State != StateFailed || st.Err == nil {
			t.Errorf("%s: %v, want failed", st.Name, st.State)
			continue
		}
		texts = append(texts, st.Err.Error())
	}
	r.stop() // the call fails on a URL with the secret
	_, err := callHeaders(t, m)
	if err == nil {
		t.Fatal("a call to a stopped server worked")
	}
	texts = append(texts, err.Error())
	for _, s := range m.Servers() {
		if s.Err != nil {
			texts = append(texts, s.Err.Error())
		}
	}
	all := strings.Join(texts, "\n") + "\n" + buf.String()
	if strings.Contains(all, "secret") {
		t.Errorf("a URL secret leaked:\n%s", all)
	}
	if !strings.Contains(all, "?REDACTED") {
		t.Errorf("no redacted URL is shown at all:\n%s", all)
	}
}
