package mcpregistry_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/internal/mcpregistry"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakeregistry"
)

// newClient serves reg on loopback and returns a client of it.
func newClient(t *testing.T, reg http.Handler) *mcpregistry.Client {
	t.Helper()
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	c, err := mcpregistry.NewClient(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func names(found []mcpregistry.ServerResponse) []string {
	var out []string
	for _, s := range found {
		out = append(out, s.Server.Name+"@"+s.Server.Version)
	}
	return out
}

func TestClient_Search(t *testing.T) {
	reg := fakeregistry.Default()
	c := newClient(t, reg)
	for _, tt := range []struct {
		words []string
		opts  *mcpregistry.SearchOptions
		want  []string
	}{
		// The latest version only, matched in the name or the description.
		{[]string{"weather"}, nil, []string{"io.github.example/weather@1.2.0"}},
		{[]string{"OpenWeatherMap"}, nil, []string{"io.github.example/weather@1.2.0"}},
		// Every word must match; the registry is asked for the first.
		{[]string{"example", "sql"}, nil, []string{"io.github.example/postgres@2.0.1"}},
		{[]string{"example", "nothing-like-it"}, nil, nil},
		{nil, nil, []string{"io.github.example/weather@1.2.0", "io.github.example/time@0.6.2", "io.github.example/postgres@2.0.1", "com.example/tickets@3.1.0"}},
		// Limit across pages of one.
		{nil, &mcpregistry.SearchOptions{Limit: 3, PageSize: 1}, []string{"io.github.example/weather@1.2.0", "io.github.example/time@0.6.2", "io.github.example/postgres@2.0.1"}},
		// An exact version filter.
		{[]string{"weather"}, &mcpregistry.SearchOptions{Version: "1.0.0"}, []string{"io.github.example/weather@1.0.0"}},
	} {
		found, err := c.Search(t.Context(), tt.words, tt.opts)
		if err != nil {
			t.Fatalf("Search(%q): %v", tt.words, err)
		}
		if got := names(found); !slices.Equal(got, tt.want) {
			t.Errorf("Search(%q, %+v) = %q, want %q", tt.words, tt.opts, got, tt.want)
		}
	}
}

func TestClient_SearchFollowsCursorsWithinMaxPages(t *testing.T) {
	reg := fakeregistry.Default()
	c := newClient(t, reg)
	found, err := c.Search(t.Context(), []string{"tickets"}, &mcpregistry.SearchOptions{PageSize: 1, MaxPages: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 {
		t.Errorf("found %q, want tickets alone", names(found))
	}
	// The search needs one page; a search of everything by pages of 1
	// stops at MaxPages.
	before := len(reg.Requests())
	found, err = c.Search(t.Context(), nil, &mcpregistry.SearchOptions{PageSize: 1, MaxPages: 2})
	if err != nil {
		t.Fatal(err)
	}
	reqs := reg.Requests()[before:]
	if len(found) != 2 || len(reqs) != 2 {
		t.Fatalf("found %q in %d requests %q, want 2 in 2", names(found), len(reqs), reqs)
	}
	if !strings.HasPrefix(reqs[0], "/v0.1/servers?") || !strings.Contains(reqs[1], "cursor=after-1") || !strings.Contains(reqs[0], "version=latest") {
		t.Errorf("requests %q: want /v0.1/servers?…version=latest, then the cursor of the first page", reqs)
	}
}

func TestClient_Get(t *testing.T) {
	reg := fakeregistry.Default()
	c := newClient(t, reg)
	for _, tt := range []struct{ version, want string }{{"", "1.2.0"}, {"latest", "1.2.0"}, {"1.0.0", "1.0.0"}} {
		res, err := c.Get(t.Context(), "io.github.example/weather", tt.version)
		if err != nil {
			t.Fatalf("Get(%q): %v", tt.version, err)
		}
		if res.Server.Version != tt.want || res.Meta.Official == nil || res.Meta.Official.IsLatest != (tt.want == "1.2.0") {
			t.Errorf("Get(%q) = %s, meta %+v; want %s", tt.version, res.Server.Version, res.Meta.Official, tt.want)
		}
	}
	if got := reg.Requests()[0]; got != "/v0.1/servers/io.github.example%2Fweather/versions/latest" {
		t.Errorf("request %q: want the name escaped as one path segment", got)
	}
	res, err := c.Get(t.Context(), "io.github.example/weather", "")
	if err != nil {
		t.Fatal(err)
	}
	p := res.Server.Packages[0]
	if p.Identifier != "@example/weather-mcp" || len(p.PackageArguments) != 2 || p.PackageArguments[0].Name != "--units" ||
		p.PackageArguments[0].Default != "metric" || !p.EnvironmentVariables[0].IsSecret || p.EnvironmentVariables[0].Name != "OPENWEATHER_API_KEY" {
		t.Errorf("package decoded as %+v", p)
	}
	for _, tt := range []struct{ name, version string }{{"io.github.example/nothing", ""}, {"io.github.example/weather", "9.9.9"}} {
		_, err := c.Get(t.Context(), tt.name, tt.version)
		if !errors.Is(err, mcpregistry.ErrNotFound) || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("Get(%q, %q) = %v, want ErrNotFound naming the server", tt.name, tt.version, err)
		}
	}
}

func TestClient_StatusAndShapeErrors(t *testing.T) {
	c := newClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/versions/") {
			fmt.Fprint(w, `<html>not json</html>`)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"down for maintenance"}`)
	}))
	_, err := c.Search(t.Context(), []string{"x"}, nil)
	var se *mcpregistry.StatusError
	if !errors.As(err, &se) || se.Status != 503 || se.Message != "down for maintenance" {
		t.Errorf("Search on a 503 = %v, want a StatusError with the registry's message", err)
	}
	if _, err := c.Get(t.Context(), "a/b", ""); err == nil || !strings.Contains(err.Error(), "not the registry API's JSON") {
		t.Errorf("Get of HTML = %v", err)
	}
}

func TestCheckURL(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{mcpregistry.DefaultURL, true},
		{"https://registry.internal.example/mcp/", true},
		{"http://127.0.0.1:8080", true},
		{"http://[::1]:8080", true},
		{"http://localhost:8080", true},
		{"http://registry.example.com", false},
		{"ftp://registry.example.com", false},
		{"https://user:pw@registry.example.com", false},
		{"https://registry.example.com?x=1", false},
		{"registry.example.com", false},
	} {
		if err := mcpregistry.CheckURL(tt.url); (err == nil) != tt.ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", tt.url, err, tt.ok)
		}
	}
}
