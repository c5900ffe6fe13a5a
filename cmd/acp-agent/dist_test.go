package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// These tests run the Makefile's release targets (make install, make dist,
// the version rule) as a user does. They build one target, the host's, not
// the four platforms of make dist.

// repoRoot is the directory of the Makefile.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Fatalf("no Makefile at the repository root: %v", err)
	}
	return root
}

// runMake runs make in dir with args and returns its stdout; it fails the
// test with make's output on an error.
func runMake(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make is needed to test the release targets: %v", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is needed on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute) // a cold build on a loaded machine
	defer cancel()
	cmd := exec.CommandContext(ctx, mk, append([]string{"--no-print-directory", "GO=" + goBin}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(environWithoutGit(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// environWithoutGit is the test's environment without GIT_* variables, so
// that git finds the repository from the working directory.
func environWithoutGit() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return env
}

// versionOf runs bin --version and returns what it printed.
func versionOf(t *testing.T, bin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	return string(out)
}

// A release binary of make dist is static, stripped, prints the version it was
// built with, and is the same bytes when built again.
func TestMakeDist_StaticStrippedVersionedReproducible(t *testing.T) {
	root := repoRoot(t)
	const version = "v9.8.7-test"
	name := "acp-agent-" + version + "-" + runtime.GOOS + "-" + runtime.GOARCH
	// make dist for this platform only, then the one binary's own rule.
	dist := t.TempDir()
	runMake(t, root, nil, "DIST="+dist, "VERSION="+version, "PLATFORMS="+runtime.GOOS+"-"+runtime.GOARCH, "dist")
	bins := [2]string{filepath.Join(dist, name), filepath.Join(t.TempDir(), name)}
	runMake(t, root, nil, "DIST="+filepath.Dir(bins[1]), "VERSION="+version, bins[1])

	switch runtime.GOOS {
	case "linux":
		f, err := elf.Open(bins[0])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s has a %v program header: dynamically linked, want static", name, p.Type)
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("%s needs shared libraries %v, want none", name, libs)
		}
		for _, s := range f.Sections {
			if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
				t.Errorf("%s has section %s: not stripped", name, s.Name)
			}
		}
	case "darwin":
		// macOS has no static executables: a Go binary without cgo links
		// only the system's libraries, never a third-party one.
		f, err := macho.Open(bins[0])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		libs, _ := f.ImportedLibraries()
		for _, l := range libs {
			if !strings.HasPrefix(l, "/usr/lib/") && !strings.HasPrefix(l, "/System/Library/") {
				t.Errorf("%s links %s, want only system libraries", name, l)
			}
		}
		if f.Section("__debug_info") != nil || f.Section("__zdebug_info") != nil {
			t.Errorf("%s has DWARF: not stripped", name)
		}
	default:
		t.Fatalf("make dist builds linux and darwin; this is %s", runtime.GOOS)
	}

	if got := versionOf(t, bins[0]); got != "acp-agent "+version+"\n" {
		t.Errorf("%s --version printed %q, want %q", name, got, "acp-agent "+version+"\n")
	}
	a, errA := os.ReadFile(bins[0])
	b, errB := os.ReadFile(bins[1])
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("two builds of %s differ (%d and %d bytes): the release build is not reproducible", name, len(a), len(b))
	}
	archive, err := os.ReadFile(filepath.Join(dist, name+".tar.gz"))
	if err != nil {
		t.Fatalf("make dist packed no archive for the registry: %v", err)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if want := fmt.Sprintf("%x  %s\n%x  %s.tar.gz\n", sha256.Sum256(a), name, sha256.Sum256(archive), name); err != nil || string(sums) != want {
		t.Errorf("SHA256SUMS = %q (%v), want %q", sums, err, want)
	}
	// The registry entry names this platform's archive at the release URL;
	// internal/acpregistry's test validates it against the registry's schema.
	entry, err := os.ReadFile(filepath.Join(dist, "registry", "acp-agent", "agent.json"))
	if err != nil {
		t.Fatalf("make dist wrote no registry entry: %v", err)
	}
	wantURL := "https://github.com/seed02d3eb6b/acp-agent/releases/download/" + version + "/" + name + ".tar.gz"
	if !strings.Contains(string(entry), `"archive": "`+wantURL+`"`) || !strings.Contains(string(entry), `"version": "9.8.7-test"`) {
		t.Errorf("agent.json does not name %s at version 9.8.7-test:\n%s", wantURL, entry)
	}
	if _, err := os.Stat(filepath.Join(dist, "registry", "acp-agent", "icon.svg")); err != nil {
		t.Errorf("make dist wrote no registry icon: %v", err)
	}
}

// make build makes the same bytes as the release binary of make dist for this
// platform (so the static, stripped binary the test above checks), and says
// what it builds and that a first build takes minutes.
func TestMakeBuild_SameBinaryAsDist(t *testing.T) {
	root := repoRoot(t)
	const version = "v9.8.7-build"
	binDir := t.TempDir()
	out := runMake(t, root, nil, "BIN="+binDir, "VERSION="+version, "build")
	for _, want := range []string{"acp-agent " + version, "static (CGO_ENABLED=0", "a first build", "minutes on 2 cores"} {
		if !strings.Contains(out, want) {
			t.Errorf("make build said %q, want it to say %q", out, want)
		}
	}
	release := filepath.Join(t.TempDir(), "acp-agent-"+version+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	runMake(t, root, nil, "DIST="+filepath.Dir(release), "VERSION="+version, release)
	a, errA := os.ReadFile(filepath.Join(binDir, "acp-agent"))
	b, errB := os.ReadFile(release)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("make build made %d bytes, make dist %d different ones for %s/%s: want the same binary", len(a), len(b), runtime.GOOS, runtime.GOARCH)
	}
}

// make install PREFIX=dir puts a working acp-agent in dir/bin, and installing
// again while that binary runs (an editor using it) replaces it.
func TestMakeInstall_PrefixAndReplaceWhileRunning(t *testing.T) {
	root := repoRoot(t)
	prefix := t.TempDir()
	bin := filepath.Join(prefix, "bin", "acp-agent")
	out := runMake(t, root, nil, "PREFIX="+prefix, "VERSION=v1.0.0-install", "install")
	if !strings.Contains(out, "installed "+bin) || !strings.Contains(out, "a first build") {
		t.Errorf("make install said %q, want it to say what it builds and to name %s", out, bin)
	}
	if got := versionOf(t, bin); got != "acp-agent v1.0.0-install\n" {
		t.Errorf("installed --version = %q", got)
	}

	// The installed agent runs, as an editor would start it, reading stdin.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	running := exec.CommandContext(ctx, bin, "--store", "memory", "--model", "direct")
	running.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stdin, err := running.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	running.Stdout, running.Stderr = io.Discard, io.Discard
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // EOF ends the agent
		if err := running.Wait(); err != nil {
			t.Errorf("the agent that ran during the reinstall: %v", err)
		}
	}()

	runMake(t, root, nil, "PREFIX="+prefix, "VERSION=v1.0.1-install", "install")
	if got := versionOf(t, bin); got != "acp-agent v1.0.1-install\n" {
		t.Errorf("after reinstalling over a running agent, --version = %q", got)
	}
	if matches, _ := filepath.Glob(filepath.Join(prefix, "bin", ".*")); len(matches) > 0 {
		t.Errorf("make install left %v behind", matches)
	}
}

// The version make derives from git: the nearest v* tag, dev-<commit> in a
// clone without tags, -dirty with uncommitted changes, "dev" outside git, and
// VERSION=... wins.
func TestMakeVersion_FromGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	makefile := filepath.Join(repoRoot(t), "Makefile")
	parent := t.TempDir()
	dir := filepath.Join(parent, "clone")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"GIT_CEILING_DIRECTORIES=" + parent,
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "git", args...)
		cmd.Dir = dir
		cmd.Env = append(environWithoutGit(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	version := func(args ...string) string {
		t.Helper()
		return strings.TrimSpace(runMake(t, dir, env, append([]string{"-s", "-f", makefile, "version"}, args...)...))
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if got := version(); got != "dev" {
		t.Errorf("outside git: version %q, want dev", got)
	}
	git("init", "-q")
	write("1")
	git("add", "f.txt")
	git("commit", "-q", "-m", "one")
	short := git("rev-parse", "--short", "HEAD")
	if got := version(); got != "dev-"+short {
		t.Errorf("a clone without tags: version %q, want dev-%s", got, short)
	}
	write("2")
	if got := version(); got != "dev-"+short+"-dirty" {
		t.Errorf("uncommitted changes: version %q, want dev-%s-dirty", got, short)
	}
	git("commit", "-q", "-am", "two")
	git("tag", "v1.2.3")
	if got := version(); got != "v1.2.3" {
		t.Errorf("on tag v1.2.3: version %q", got)
	}
	write("3")
	git("commit", "-q", "-am", "three")
	git("tag", "nightly") // not a version tag
	if got := version(); !regexp.MustCompile(`^v1\.2\.3-1-g[0-9a-f]{7,}$`).MatchString(got) {
		t.Errorf("one commit after v1.2.3: version %q, want v1.2.3-1-g<commit>", got)
	}
	if got := version("VERSION=v7.0.0"); got != "v7.0.0" {
		t.Errorf("VERSION=v7.0.0 make version: %q", got)
	}
}
