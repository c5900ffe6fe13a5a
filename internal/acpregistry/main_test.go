package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// registrySchema is the registry's agent.schema.json (testdata/README.md
// names its source and commit), resolved.
func registrySchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "agent.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolving the registry's schema: %v", err)
	}
	return r
}

// The agent.json write makes is valid under the registry's schema, names an
// archive per platform at the release URL, and each archive holds the
// platform's binary as an executable acp-agent, the same bytes when packed
// again.
func TestWrite_AgentJSONValidArchivesReproducible(t *testing.T) {
	platforms := []string{"linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64"}
	for _, version := range []string{"v1.2.0", "v1.2.0-3-gabc1234-dirty", "dev-abc1234"} {
		t.Run(version, func(t *testing.T) {
			dist := t.TempDir()
			for _, p := range platforms {
				if err := os.WriteFile(filepath.Join(dist, "acp-agent-"+version+"-"+p), []byte("binary for "+p), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			const release = "https://github.com/seed02d3eb6b/acp-agent/releases/download/v1.2.0"
			if err := write(dist, version, release, platforms); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dist, "registry", "acp-agent", "agent.json"))
			if err != nil {
				t.Fatal(err)
			}
			var instance map[string]any
			if err := json.Unmarshal(data, &instance); err != nil {
				t.Fatal(err)
			}
			if err := registrySchema(t).Validate(instance); err != nil {
				t.Fatalf("agent.json is not valid under the registry's schema: %v\n%s", err, data)
			}
			var e Entry
			if err := json.Unmarshal(data, &e); err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"v1.2.0": "1.2.0", "v1.2.0-3-gabc1234-dirty": "1.2.0-3-gabc1234-dirty", "dev-abc1234": "0.0.0-dev-abc1234"}[version]; e.Version != want {
				t.Errorf("version = %q, want %q", e.Version, want)
			}
			if len(e.Distribution.Binary) != len(platforms) {
				t.Errorf("binary has %d platforms, want %d: %v", len(e.Distribution.Binary), len(platforms), e.Distribution.Binary)
			}
			for _, p := range platforms {
				target, ok := e.Distribution.Binary[registryPlatform[p]]
				name := "acp-agent-" + version + "-" + p + ".tar.gz"
				if !ok || target.Archive != release+"/"+name || target.Cmd != "./acp-agent" || len(target.Args) != 0 {
					t.Errorf("binary[%s] = %+v, want %s/%s run as ./acp-agent", registryPlatform[p], target, release, name)
				}
				if u, err := url.Parse(target.Archive); err != nil || u.Scheme != "https" || u.Host == "" {
					t.Errorf("archive %q is not an absolute https URL (the schema's format uri): %v", target.Archive, err)
				}
				archive := filepath.Join(dist, name)
				if got := unpack(t, archive); got != "binary for "+p {
					t.Errorf("%s holds %q", name, got)
				}
				first, _ := os.ReadFile(archive)
				if err := pack(filepath.Join(dist, "acp-agent-"+version+"-"+p), archive); err != nil {
					t.Fatal(err)
				}
				if again, _ := os.ReadFile(archive); !bytes.Equal(first, again) {
					t.Errorf("%s differs when packed again: not reproducible", name)
				}
			}
			written, err := os.ReadFile(filepath.Join(dist, "registry", "acp-agent", "icon.svg"))
			if err != nil || !bytes.Equal(written, icon) {
				t.Errorf("icon.svg next to agent.json: %v", err)
			}
		})
	}
}

// unpack returns the content of the one file of archive, which must be an
// executable named acp-agent, as the entry's cmd ./acp-agent runs it.
func unpack(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "acp-agent" || h.Typeflag != tar.TypeReg || h.Mode&0o111 != 0o111 {
		t.Errorf("%s holds %s, type %c, mode %o; want an executable acp-agent", archive, h.Name, h.Typeflag, h.Mode)
	}
	body, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("%s holds more than acp-agent (%v)", archive, err)
	}
	return string(body)
}

// The vendored schema bites: the entries the registry refuses are refused.
func TestRegistrySchema_RefusesBadEntries(t *testing.T) {
	good := func() map[string]any {
		return map[string]any{"id": "acp-agent", "name": "acp-agent", "version": "1.2.0", "description": "d",
			"distribution": map[string]any{"binary": map[string]any{"linux-x86_64": map[string]any{"archive": "https://example.com/a.tar.gz", "cmd": "./acp-agent"}}}}
	}
	r := registrySchema(t)
	if err := r.Validate(good()); err != nil {
		t.Fatalf("a good entry: %v", err)
	}
	for name, spoil := range map[string]func(m map[string]any){
		"dev version":   func(m map[string]any) { m["version"] = "dev-abc1234" },
		"upper-case id": func(m map[string]any) { m["id"] = "ACP" },
		"Go platform name": func(m map[string]any) {
			m["distribution"] = map[string]any{"binary": map[string]any{"linux-amd64": map[string]any{"archive": "https://e/a", "cmd": "./a"}}}
		},
		"no cmd": func(m map[string]any) {
			m["distribution"] = map[string]any{"binary": map[string]any{"linux-x86_64": map[string]any{"archive": "https://e/a"}}}
		},
		"no description": func(m map[string]any) { delete(m, "description") },
	} {
		m := good()
		spoil(m)
		if err := r.Validate(m); err == nil {
			t.Errorf("%s: valid, want refused", name)
		}
	}
}

// A platform the registry has no name for, or a missing binary, is an error
// naming it.
func TestWrite_Errors(t *testing.T) {
	dist := t.TempDir()
	if err := write(dist, "v1.0.0", "https://example.com/r", []string{"windows-amd64"}); err == nil || !strings.Contains(err.Error(), "windows-amd64") {
		t.Errorf("an unknown platform: %v", err)
	}
	if err := write(dist, "v1.0.0", "https://example.com/r", []string{"linux-amd64"}); err == nil || !strings.Contains(err.Error(), "make dist") {
		t.Errorf("a missing binary: %v", err)
	}
}

// The icon passes the registry's checks (build_registry.py's validate_icon
// at the commit testdata/README.md names): width and height 16, a square
// 16×16 viewBox, fill and stroke only currentColor, none or inherit, no
// colour in a style, and currentColor used.
func TestIcon_PassesTheRegistrysChecks(t *testing.T) {
	s := string(icon)
	w := regexp.MustCompile(`<svg[^>]*\swidth=["'](\d+)`).FindStringSubmatch(s)
	h := regexp.MustCompile(`<svg[^>]*\sheight=["'](\d+)`).FindStringSubmatch(s)
	if w == nil || h == nil || w[1] != "16" || h[1] != "16" {
		t.Errorf("icon width, height = %v, %v; want 16, 16", w, h)
	}
	if vb := regexp.MustCompile(`viewBox=["']([^"']+)["']`).FindStringSubmatch(s); vb == nil || strings.Join(strings.Fields(vb[1]), " ") != "0 0 16 16" {
		t.Errorf("icon viewBox = %v, want 0 0 16 16", vb)
	}
	allowed := map[string]bool{"currentcolor": true, "none": true, "inherit": true}
	for _, m := range regexp.MustCompile(`\b(fill|stroke)=["']([^"']+)["']`).FindAllStringSubmatch(s, -1) {
		if !allowed[strings.ToLower(strings.TrimSpace(m[2]))] {
			t.Errorf("icon has %s=%q: hardcoded colour", m[1], m[2])
		}
	}
	if strings.Contains(s, "style=") {
		t.Error("icon has a style attribute: the registry checks its colours too; use fill and stroke")
	}
	if !strings.Contains(s, "currentColor") {
		t.Error("icon does not use currentColor")
	}
}
