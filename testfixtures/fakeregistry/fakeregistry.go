// Package fakeregistry is an MCP Registry for tests: an http.Handler that
// serves server.json documents in the official registry's API shape
// (github.com/modelcontextprotocol/registry, docs/reference/api/openapi.yaml,
// 2025-12-01), at both /v0.1 and /v0:
//
//	GET /v0.1/servers?search=&limit=&cursor=&version=   {"servers": [{"server": …, "_meta": …}], "metadata": {"nextCursor", "count"}}
//	GET /v0.1/servers/{serverName}/versions             every version, newest first
//	GET /v0.1/servers/{serverName}/versions/{version}   {"server": …, "_meta": …}; version "latest" is the newest
//
// A name or version it does not have is 404 {"error": "Server not found"}.
// search is a case-insensitive substring of the name or description, as the
// official registry matches; version "latest" keeps the newest version of
// each server, another value that version only, none keeps all. Pages are
// limit long (default 30, at most 100) and the cursor is opaque.
//
// Documents are served byte for byte as added, so a client is tested against
// the JSON a publisher wrote, not against a re-encoding of its own types.
// [Default] holds the documents of testdata/: an npm server in two versions,
// a PyPI one, an OCI one and a remote-only one. Listen on loopback only
// (httptest.NewServer does).
package fakeregistry

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// version is one published server.json.
type version struct {
	name, version, description string
	doc                        json.RawMessage
	published                  time.Time
}

// Registry serves the documents added to it; make one with [New] or
// [Default]. Safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	versions []version // in publication order
	requests []string  // the request URIs served, in order
	mux      *http.ServeMux
}

// epoch is the first publication time; each document is published a
// minute after the one before, so the order is stable.
var epoch = time.Date(2025, 10, 17, 12, 0, 0, 0, time.UTC)

// New returns a registry with docs published in order (a later version of
// a name becomes its latest). It panics on a document without a name or
// version: a broken test fixture.
func New(docs ...[]byte) *Registry {
	r := &Registry{mux: http.NewServeMux()}
	for _, v := range []string{"/v0", "/v0.1"} {
		r.mux.HandleFunc("GET "+v+"/servers", r.list)
		r.mux.HandleFunc("GET "+v+"/servers/{name}/versions", r.versionsOf)
		r.mux.HandleFunc("GET "+v+"/servers/{name}/versions/{version}", r.get)
	}
	for _, d := range docs {
		if err := r.Add(d); err != nil {
			panic(err)
		}
	}
	return r
}

//go:embed testdata/*.json
var testdata embed.FS

// Default returns a registry with the documents of testdata/, in the order
// of their file names.
func Default() *Registry {
	entries, err := testdata.ReadDir("testdata")
	if err != nil {
		panic(err)
	}
	var docs [][]byte
	for _, e := range entries {
		b, err := testdata.ReadFile(path.Join("testdata", e.Name()))
		if err != nil {
			panic(err)
		}
		docs = append(docs, b)
	}
	return New(docs...)
}

// Add publishes one server.json document as its newest version.
func (r *Registry) Add(doc []byte) error {
	var head struct {
		Name, Version, Description string
	}
	if err := json.Unmarshal(doc, &head); err != nil {
		return fmt.Errorf("fakeregistry: %w", err)
	}
	if head.Name == "" || head.Version == "" {
		return fmt.Errorf("fakeregistry: a server.json needs a name and a version")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions = append(r.versions, version{name: head.Name, version: head.Version, description: head.Description,
		doc: json.RawMessage(doc), published: epoch.Add(time.Duration(len(r.versions)) * time.Minute)})
	return nil
}

// Requests returns the request URIs served so far, in order.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// ServeHTTP serves the registry API.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, req.RequestURI)
	r.mu.Unlock()
	r.mux.ServeHTTP(w, req)
}

// latest reports whether i is the newest version of its name. Callers hold mu.
func (r *Registry) latest(i int) bool {
	for _, v := range r.versions[i+1:] {
		if v.name == r.versions[i].name {
			return false
		}
	}
	return true
}

// response is the ServerResponse of version i. Callers hold mu.
func (r *Registry) response(i int) map[string]any {
	v := r.versions[i]
	return map[string]any{
		"server": v.doc,
		"_meta": map[string]any{"io.modelcontextprotocol.registry/official": map[string]any{
			"status": "active", "publishedAt": v.published.Format(time.RFC3339),
			"updatedAt": v.published.Format(time.RFC3339), "isLatest": r.latest(i),
		}},
	}
}

func (r *Registry) list(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	limit := 30
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "limit must be a positive integer"})
			return
		}
		limit = min(n, 100)
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "after-"))
		if err != nil || !strings.HasPrefix(c, "after-") {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid cursor"})
			return
		}
		start = n
	}
	search, ver := strings.ToLower(q.Get("search")), q.Get("version")
	r.mu.Lock()
	defer r.mu.Unlock()
	var hits []int
	for i, v := range r.versions {
		if search != "" && !strings.Contains(strings.ToLower(v.name), search) && !strings.Contains(strings.ToLower(v.description), search) {
			continue
		}
		if (ver == "latest" && !r.latest(i)) || (ver != "" && ver != "latest" && ver != v.version) {
			continue
		}
		hits = append(hits, i)
	}
	servers := []map[string]any{}
	next := ""
	for k := start; k < len(hits); k++ {
		if len(servers) == limit {
			next = "after-" + strconv.Itoa(k)
			break
		}
		servers = append(servers, r.response(hits[k]))
	}
	meta := map[string]any{"count": len(servers)}
	if next != "" {
		meta["nextCursor"] = next
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": servers, "metadata": meta})
}

func (r *Registry) versionsOf(w http.ResponseWriter, req *http.Request) {
	name := req.PathValue("name")
	r.mu.Lock()
	defer r.mu.Unlock()
	servers := []map[string]any{}
	for i := len(r.versions) - 1; i >= 0; i-- {
		if r.versions[i].name == name {
			servers = append(servers, r.response(i))
		}
	}
	if len(servers) == 0 {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "Server not found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": servers, "metadata": map[string]any{"count": len(servers)}})
}

func (r *Registry) get(w http.ResponseWriter, req *http.Request) {
	name, ver := req.PathValue("name"), req.PathValue("version")
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.versions) - 1; i >= 0; i-- {
		v := r.versions[i]
		if v.name == name && (v.version == ver || (ver == "latest" && r.latest(i))) {
			writeJSON(w, http.StatusOK, r.response(i))
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"error": "Server not found"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
