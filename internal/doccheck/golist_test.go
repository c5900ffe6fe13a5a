package doccheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// listed is the part of go list -json's output the checks read.
type listed struct {
	ImportPath     string
	Name           string
	Dir            string
	Standard       bool
	DepOnly        bool
	Module         *struct{ Path string }
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
	Imports        []string
	Deps           []string
	Error          *struct{ Err string }
}

// goList runs go list -json with args from the module root and decodes
// every package it prints.
func goList(t *testing.T, args ...string) []*listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json"}, args...)...)
	cmd.Dir = moduleRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var pkgs []*listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		p := new(listed)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list %s: decoding its output: %v", strings.Join(args, " "), err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// modulePackages lists the module's own packages: ./..., less anything
// under a vendor or node_modules directory.
func modulePackages(t *testing.T) []*listed {
	t.Helper()
	var own []*listed
	for _, p := range goList(t, "./...") {
		if strings.Contains(p.ImportPath, "/vendor/") || strings.Contains(p.ImportPath, "/node_modules/") {
			continue
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		own = append(own, p)
	}
	if len(own) == 0 {
		t.Fatal("go list ./... listed no package")
	}
	return own
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		t.Fatal("go env GOMOD: not in a module")
	}
	return filepath.Dir(gomod)
}

// modulePath is the module's path, the prefix of its packages' import paths.
func modulePath(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	return strings.TrimSpace(string(out))
}
