// Command acpregistry packs make dist's release binaries for the ACP agent
// registry (github.com/agentclientprotocol/registry, the list Zed's agent
// panel offers): one acp-agent-VERSION-OS-ARCH.tar.gz a platform holding the
// binary as acp-agent, and DIST/registry/acp-agent/agent.json and icon.svg,
// the directory a pull request to the registry adds.
//
// Usage:
//
//	acpregistry -dist dist -version v1.2.0 -release-url https://github.com/o/r/releases/download/v1.2.0 linux-amd64 darwin-arm64 ...
//
// Each platform's binary is DIST/acp-agent-VERSION-OS-ARCH. The archives are
// reproducible: the same binary gives the same bytes (no time stamps, owner
// root, mode 0755). agent.json's version is VERSION without its "v"; a
// version that is not semantic (dev-<commit>, dev) becomes 0.0.0-VERSION,
// since the registry's schema requires MAJOR.MINOR.PATCH first.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// icon is the agent's icon: 16×16, monochrome in currentColor, as the
// registry requires.
//
//go:embed icon.svg
var icon []byte

// Entry is an agent.json of the ACP registry (its agent.schema.json).
type Entry struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	Description  string       `json:"description"`
	Repository   string       `json:"repository,omitempty"`
	Icon         string       `json:"icon,omitempty"`
	Distribution Distribution `json:"distribution"`
}

// Distribution is how the registry installs the agent: here by binary only.
type Distribution struct {
	// Binary maps a registry platform (linux-x86_64, darwin-aarch64, ...)
	// to its archive.
	Binary map[string]BinaryTarget `json:"binary"`
}

// BinaryTarget is one platform's archive and the command to run after
// extracting it.
type BinaryTarget struct {
	Archive string   `json:"archive"`
	Cmd     string   `json:"cmd"`
	Args    []string `json:"args,omitempty"`
}

// registryPlatform maps Go's GOOS-GOARCH to the registry's platform names.
var registryPlatform = map[string]string{
	"linux-amd64":  "linux-x86_64",
	"linux-arm64":  "linux-aarch64",
	"darwin-amd64": "darwin-x86_64",
	"darwin-arm64": "darwin-aarch64",
}

const repository = "https://github.com/seed02d3eb6b/acp-agent"

func main() {
	dist := flag.String("dist", "dist", "the directory of make dist's binaries; the archives and registry/ go there too")
	version := flag.String("version", "", "the release's version (make version)")
	releaseURL := flag.String("release-url", "", "the URL the archives are downloaded from, without the file name (default: the GitHub release of -version)")
	flag.Parse()
	if *version == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: acpregistry -dist DIR -version VERSION [-release-url URL] OS-ARCH...")
		os.Exit(2)
	}
	url := *releaseURL
	if url == "" {
		url = repository + "/releases/download/" + *version
	}
	if err := write(*dist, *version, url, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "acpregistry:", err)
		os.Exit(1)
	}
}

// write packs each platform's binary of dir and writes dir/registry/acp-agent.
func write(dir, version, releaseURL string, platforms []string) error {
	e := Entry{
		ID:           "acp-agent",
		Name:         "acp-agent",
		Version:      registryVersion(version),
		Description:  "Anthropic or OpenAI-compatible models with your editor's MCP servers as tools, asking before anything changes",
		Repository:   repository,
		Icon:         "./icon.svg",
		Distribution: Distribution{Binary: map[string]BinaryTarget{}},
	}
	for _, p := range platforms {
		rp, ok := registryPlatform[p]
		if !ok {
			return fmt.Errorf("platform %q: the registry has no name for it (known: linux-amd64, linux-arm64, darwin-amd64, darwin-arm64)", p)
		}
		bin := filepath.Join(dir, "acp-agent-"+version+"-"+p)
		name := filepath.Base(bin) + ".tar.gz"
		if err := pack(bin, filepath.Join(dir, name)); err != nil {
			return err
		}
		e.Distribution.Binary[rp] = BinaryTarget{Archive: strings.TrimSuffix(releaseURL, "/") + "/" + name, Cmd: "./acp-agent"}
	}
	out := filepath.Join(dir, "registry", e.ID)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "agent.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "icon.svg"), icon, 0o644)
}

// semver is the start the registry's schema requires of a version.
var semver = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+`)

// registryVersion is version as agent.json states it: without a leading
// "v", or 0.0.0-version when it does not start MAJOR.MINOR.PATCH.
func registryVersion(version string) string {
	v := strings.TrimPrefix(version, "v")
	if semver.MatchString(v) {
		return v
	}
	return "0.0.0-" + version
}

// pack writes the binary bin as the one file acp-agent (mode 0755) of the
// gzipped tar archive out, with no time stamps or owner names, so the same
// binary gives the same archive.
func pack(bin, out string) error {
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("the release binary: %w (run make dist first)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "acp-agent", Mode: 0o755, Size: fi.Size(), Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
